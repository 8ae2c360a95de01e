"""fairseq plugin: Compositional Attention, compositional-generalization Transformer variants and
the Graph-Transformer encoder. Load with ``--user-dir fairseq_plugins`` (or ``import fairseq_plugins``).

Everything changed outside the plugin's own classes is in ``compat/`` (one table, one ``apply()``).
What needs neither torch nor fairseq (errors, corpora, COGS tags, CFQ-im, accuracies, the task
generators) is the sibling package ``plugin_tools``, which this package imports and which never
imports it; the research drivers and report generators are the package ``studies``, which imports
both and is imported by neither. ``--user-dir fairseq_plugins`` puts their common parent on
sys.path.
"""

from . import compat

compat.apply()

from . import criterions, models, modules, tasks  # noqa: E402,F401  (registers with fairseq)
