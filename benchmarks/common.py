"""Helpers shared by the benchmark scripts: models built through fairseq's parser, the machine
description (plugin_tools/machine.py, shared with the GPU check), robust statistics, peak memory,
and writing results as JSON plus a markdown table. Benchmarks are scripts, not tests."""

import json
import shlex
import statistics
from pathlib import Path
from types import SimpleNamespace

import torch

from plugin_tools.machine import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"


def dictionary_of(size):
    """A fairseq Dictionary of SIZE symbols: the specials, then w0, w1, ..."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(size - len(d)):
        d.add_symbol(f"w{i}")
    return d


def build_model(task, spec, dictionary, extra=()):
    """The model of SPEC (an arch and its options, as on a command line) for TASK, built through
    fairseq's own parser with --user-dir fairseq_plugins, as fairseq-train builds it, plus the
    arguments EXTRA; DICTIONARY on both sides, weights from torch.manual_seed(0)."""
    from fairseq import options, utils
    from fairseq.models import build_model as fairseq_build

    user_dir = str(ROOT / "fairseq_plugins")
    utils.import_user_module(SimpleNamespace(user_dir=user_dir))
    argv = ["/nonexistent", "--task", task, "--user-dir", user_dir, "--arch"] + shlex.split(spec)
    parser = options.get_training_parser(default_task=task)
    parsed = options.parse_args_and_arch(parser, argv + list(extra))
    fake_task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary)
    torch.manual_seed(0)
    return fairseq_build(parsed, fake_task)


def run_info(device, args, *names):
    """What a results file records of the run: the machine, then the settings NAMES of ARGS."""
    return {"machine": machine(device), **{name: getattr(args, name) for name in names}}


def quartiles(values):
    """(median, q1, q3) of a list (inclusive method, fine for small samples)."""
    values = sorted(values)
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, med, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return med, q1, q3


def summary(values):
    med, q1, q3 = quartiles(values)
    return {"median": med, "q1": q1, "q3": q3, "iqr": q3 - q1, "n": len(values)}


# -- CPU peak memory: peak resident set size, reset per measurement ---------------------------------
# With a fixed mmap threshold glibc serves every allocation above it by mmap and unmaps it on free,
# so the resident set follows the live tensors; /proc/self/clear_refs "5" resets the kernel's
# high-water mark (VmHWM). Peak = VmHWM after the measured call - VmRSS before it.
MMAP_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}


def _status_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)


def rss_peak_supported():
    try:
        Path("/proc/self/clear_refs").write_text("5")
        _status_kib("VmHWM")
        return True
    except (OSError, RuntimeError):
        return False


def measure_peak_bytes(fn, device):
    """Peak memory of fn() above what was allocated before the call."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_kib("VmRSS")
    fn()
    return (_status_kib("VmHWM") - before) * 1024


def add_output_options(parser, name):
    """--name and --results of every benchmark: where its JSON and Markdown go."""
    parser.add_argument("--name", default=name, help="RESULTS/NAME.json and .md")
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="the folder RESULTS (default benchmarks/results)",
    )


def write_results(name, payload, markdown, folder=RESULTS):
    """FOLDER/NAME.json and .md."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    (folder / f"{name}.md").write_text(markdown)
    print(markdown)
    print(f"wrote {folder / (name + '.json')} and {folder / (name + '.md')}")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
