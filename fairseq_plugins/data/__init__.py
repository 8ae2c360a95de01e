"""Data the plugin's tasks generate with numpy (the Contextual Retrieval Task of Mittal et al.).

The pure-Python representations (COGS tags, CFQ-im) are in the ``plugin_tools`` package, which
imports neither torch nor fairseq.
"""
