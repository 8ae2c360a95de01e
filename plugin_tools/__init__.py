"""Pure-Python helpers of the fairseq plugin: importable without torch and without fairseq.

What lives here is everything a script, a test or the plugin needs that is plain Python (the
standard library, and numpy where a generator needs it): the plugin's exception classes
(:mod:`.errors`), where the corpora are (:mod:`.corpora`), the COGS tag representation and its
tag-row constants (:mod:`.cogs_tags`), the CFQ intermediate representation (:mod:`.cfq_im`),
sequence-level and tagging accuracy (:mod:`.seq_accuracy`, :mod:`.tagging_accuracy`), the
compositional-generalization task generators (:mod:`.compgen_data`). The research drivers and
report generators that sit on top of these and of the plugin are the top-level package ``studies``.

Why a package beside ``fairseq_plugins`` and not a light ``fairseq_plugins/__init__``: fairseq's
``import_user_module`` skips a ``--user-dir`` whose module name is already in ``sys.modules``, so a
light ``fairseq_plugins`` imported first would silently stop ``--user-dir fairseq_plugins`` from
registering anything in that process, and ``import fairseq_plugins`` must keep registering the
models for pip-installed and ``from_pretrained`` use. ``fairseq_plugins`` imports from here, never
the reverse; nothing here imports torch or fairseq (``tests/test_plugin_tools.py`` checks it in a
fresh interpreter).
"""
