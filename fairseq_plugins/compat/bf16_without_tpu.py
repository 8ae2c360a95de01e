"""``--bf16`` on GPUs and CPUs, not only TPUs.

fairseq 0.12's ``options.parse_args_and_arch`` sets ``args.tpu = True`` whenever ``--bf16`` is
given, so ``fairseq-train --bf16`` on a GPU or with ``--cpu`` asks torch_xla for a TPU device and
crashes (``'NoneType' object has no attribute 'xla_device'``; fairseq issue #4696). The rest of
fairseq handles bf16 without a TPU: the trainer converts model and criterion with
``.to(torch.bfloat16)`` and FP16Optimizer keeps float32 master weights without a loss scaler.

The user module (this plugin) is imported inside ``parse_args_and_arch``, before that line runs,
so the fix sits one step later: the namespace-to-config conversion that every fairseq command
calls next drops the implied TPU again unless ``--tpu`` was asked for on the command line.
"""

import sys

from fairseq.dataclass import utils as dataclass_utils


def _tpu_requested(argv):
    return any(arg == "--tpu" or arg.startswith("--tpu=") for arg in argv)


def _without_implied_tpu(convert):
    def convert_namespace_to_omegaconf(args):
        if getattr(args, "bf16", False) and getattr(args, "tpu", False):
            if not _tpu_requested(sys.argv[1:]):
                args.tpu = False
        return convert(args)

    convert_namespace_to_omegaconf.fairseq_plugins_bf16 = True
    return convert_namespace_to_omegaconf


def allow_bf16_without_tpu():
    """Wrap fairseq's convert_namespace_to_omegaconf where it is defined and in every already
    imported fairseq module that bound it by name (fairseq_cli.train, ...)."""
    original = dataclass_utils.convert_namespace_to_omegaconf
    if getattr(original, "fairseq_plugins_bf16", False):
        return
    wrapped = _without_implied_tpu(original)
    dataclass_utils.convert_namespace_to_omegaconf = wrapped
    for name, module in list(sys.modules.items()):
        if (name.startswith("fairseq") or name == "__main__") and module is not None:
            if getattr(module, "convert_namespace_to_omegaconf", None) is original:
                module.convert_namespace_to_omegaconf = wrapped
