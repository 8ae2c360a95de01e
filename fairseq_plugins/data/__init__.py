"""Pure-Python data representations (no torch, no fairseq imports).

- :mod:`.cogs_tags`: COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1): logical form
  <-> five tag rows, parent encodings, and the two exact-match metrics.
- :mod:`.cfq_im`: the CFQ intermediate representation (cartesian products compressed) and its
  inverse.

Scripts load these files by path (``importlib``) so that they never import the plugin package
(whose ``__init__`` imports fairseq and torch); a fairseq task imports them as
``fairseq_plugins.data.cogs_tags``.
"""
