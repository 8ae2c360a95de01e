"""What the shell scripts ask torch about this machine, one answer per line on stdout.

  cuda-devices     how many CUDA devices torch can use (0 when CUDA is not available)
  cpu-capability   the CPU kernels torch dispatches to (DEFAULT, AVX2, AVX512, ...), lower case
  versions         "torch X fairseq Y" after importing torch, fairseq and the plugin (setup.sh's check)

Used by scripts/lib/common.sh (cuda_devices), scripts/setup.sh and .ci/run, so that no script
carries Python inline. Standard library, torch and this checkout's plugin_tools.cli (standard
library only): a broken install must not read as "no CUDA device".
"""

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


def cuda_devices():
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def cpu_capability():
    import torch

    return torch.backends.cpu.get_cpu_capability().lower()


def versions():
    import fairseq
    import torch

    import fairseq_plugins  # noqa: F401  (the plugin imports and registers)

    return f"torch {torch.__version__} fairseq {fairseq.__version__}"


QUESTIONS = {"cuda-devices": cuda_devices, "cpu-capability": cpu_capability, "versions": versions}


def main(argv=None):
    parser = OneLineParser(prog="torch-info.py", description=__doc__.split("\n")[0])
    parser.add_argument("question", choices=sorted(QUESTIONS))
    print(QUESTIONS[parser.parse_args(argv).question]())


if __name__ == "__main__":
    main()
