"""The machine a measurement ran on, as the benchmarks and the GPU check record it: host, CPU,
Python, torch and its threads, the device, the checkout's git revision, the date."""

import os
import platform
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_revision():
    """The checkout's short commit, "+dirty" when fairseq_plugins has uncommitted changes."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "fairseq_plugins"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"


def machine(device):
    """{host, cpu, cpu_count, python, torch, threads, device, git, date, ...} of torch.device
    DEVICE (torch imported here only: the rest of this module is plain Python)."""
    import torch

    info = {
        "host": platform.node(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": str(device),
        "git": git_revision(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    try:
        info["loadavg_start"] = os.getloadavg()
    except OSError:
        pass
    try:
        import fairseq

        info["fairseq"] = fairseq.__version__
    except ImportError:
        pass
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info
