"""fairseq plugin: Compositional Attention, compositional-generalization Transformer variants and
the Graph-Transformer encoder. Load with ``--user-dir fairseq_plugins`` (or ``import fairseq_plugins``).
"""

from .atomic_checkpoints import make_checkpoint_copies_atomic
from .cli_errors import install_cli_errors
from .fairseq_fixes import apply_fairseq_fixes
from .safe_checkpoints import register_safe_globals

register_safe_globals()
apply_fairseq_fixes()
make_checkpoint_copies_atomic()
install_cli_errors()

from . import criterions, models, modules, tasks  # noqa: E402,F401  (registers with fairseq)
