"""Let torch >= 2.6 load fairseq checkpoints with ``weights_only=True``.

torch.load refuses any pickled global that is not on its allow-list. fairseq checkpoints hold
exactly the classes below (found with ``torch.serialization.get_unsafe_globals_in_checkpoint`` on
checkpoints written by fairseq-train for legacy ``--arch`` models and hydra ones, and on the object
fairseq broadcasts to the other ranks when a multi-process run resumes: the loaded state, whose
config is then an omegaconf DictConfig). We register those and nothing else: they are plain data
containers and constructors, so a checkpoint still cannot run code.
"""

import argparse
import collections
import typing

import torch


def safe_checkpoint_globals():
    # Imported here: fairseq and omegaconf are heavy, and this runs once at plugin import.
    from fairseq.distributed.utils import _TensorPlaceholder
    from omegaconf import DictConfig, ListConfig
    from omegaconf.base import ContainerMetadata, Metadata
    from omegaconf.nodes import AnyNode

    return [
        argparse.Namespace,  # state["args"] / cfg.model of legacy-registered models
        collections.OrderedDict,
        # the state broadcast to other ranks on resume (fairseq.distributed.utils.broadcast_object)
        _TensorPlaceholder,
        DictConfig,
        ListConfig,
        ContainerMetadata,
        Metadata,
        AnyNode,
        typing.Any,
        collections.defaultdict,
        list,
        dict,
        int,
    ]


def register_safe_globals():
    torch.serialization.add_safe_globals(safe_checkpoint_globals())
