"""fairseq plugin: Compositional Attention, compositional-generalization Transformer variants and
the Graph-Transformer encoder. Load with ``--user-dir fairseq_plugins`` (or ``import fairseq_plugins``).

Everything changed outside the plugin's own classes is in ``compat/`` (one table, one ``apply()``).
"""

from . import compat

compat.apply()

from . import criterions, models, modules, tasks  # noqa: E402,F401  (registers with fairseq)
