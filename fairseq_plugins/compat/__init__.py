"""Everything the plugin changes outside its own classes, in one place, applied once by
:func:`apply` when ``fairseq_plugins`` is imported.

| what | where | why | fairseq |
|---|---|---|---|
| allow-list of pickled globals | ``torch.serialization.add_safe_globals`` (``safe_globals.py``) | torch >= 2.6 loads checkpoints with ``weights_only=True`` and refuses fairseq's argparse/omegaconf config classes; we allow exactly those, never turn ``weights_only`` off | any |
| keep the last batch | ``fairseq.data.data_utils.batch_by_size`` (``batching.py``) | the wheel drops the last batch when its size is not a multiple of ``--required-batch-size-multiple`` (30 test sentences decode as 24) | 0.12.3 (ve-fairseq) |
| atomic checkpoint copies | ``fairseq.checkpoint_utils.PathManager`` (``atomic_checkpoints.py``) | ``checkpoint_last.pt`` is written by a plain copy: a kill leaves it truncated | 0.12.x |
| checkpoint errors that name the file | ``checkpoint_utils.load_checkpoint_to_cpu``, ``checkpoint_utils.load_model_ensemble_and_task``, ``Trainer.load_checkpoint`` (``checkpoint_errors.py``) | refused, corrupt, mismatching or missing checkpoints would show a torch traceback, or (``--restore-file``) silently train from scratch | 0.12.x |
| ``--bf16`` without a TPU | ``fairseq.dataclass.utils.convert_namespace_to_omegaconf`` (``bf16_without_tpu.py``) | ``--bf16`` implies ``--tpu``: bf16 training on a GPU or CPU crashes asking torch_xla for a device | 0.12.x |
| one-line errors | ``sys.excepthook`` in fairseq's commands only (``excepthook.py``) | fairseq's CLIs print a traceback for every exception, also for a bad option | any |

The fairseq patches were written against the pinned ``ve-fairseq==0.12.3`` (``requirements.txt``).
On any other fairseq version they are not applied, and one line says so: the plugin's models still
work, without those fixes.
"""

import sys

PINNED_FAIRSEQ = "0.12.3"

_applied = False


def apply():
    """Apply every change in the table above (idempotent)."""
    global _applied
    if _applied:
        return
    _applied = True
    import fairseq

    from .excepthook import install_excepthook
    from .safe_globals import register_safe_globals

    register_safe_globals()
    install_excepthook()
    if fairseq.__version__ != PINNED_FAIRSEQ:
        print(
            f"fairseq_plugins: fairseq {fairseq.__version__} is not the pinned {PINNED_FAIRSEQ}: "
            "its batching, checkpoint-copy and checkpoint-error patches are not applied",
            file=sys.stderr,
        )
        return
    from .atomic_checkpoints import make_checkpoint_copies_atomic
    from .batching import keep_last_batches
    from .bf16_without_tpu import allow_bf16_without_tpu
    from .checkpoint_errors import install_checkpoint_errors

    allow_bf16_without_tpu()
    keep_last_batches()
    make_checkpoint_copies_atomic()
    install_checkpoint_errors()
