"""Let torch >= 2.6 load fairseq checkpoints with ``weights_only=True``.

torch.load refuses any pickled global that is not on its allow-list. fairseq checkpoints hold
exactly the classes below (found with ``torch.serialization.get_unsafe_globals_in_checkpoint`` on
checkpoints written by fairseq-train, legacy ``--arch`` models and hydra ones, and on the object
fairseq broadcasts to other ranks when a multi-process run resumes). We register those and nothing
else, so a checkpoint still cannot run code.
"""

import argparse
import collections

import torch

SAFE_CHECKPOINT_GLOBALS = [
    argparse.Namespace,  # state["args"] of legacy-registered models
    collections.OrderedDict,
]


def _fairseq_globals():
    # Imported lazily: tests import this module without building fairseq's registries.
    from fairseq.distributed.utils import _TensorPlaceholder  # broadcast_object on resume

    return [_TensorPlaceholder]


def register_safe_globals():
    torch.serialization.add_safe_globals(SAFE_CHECKPOINT_GLOBALS + _fairseq_globals())
