"""The experiment program: `python -m studies SUBCOMMAND ...` or
`scripts/experiment.py SUBCOMMAND ...`. The shell entry points (scripts/compgen-run.sh, ...) are
one-line wrappers (scripts/lib/common.sh's `experiment`) that pass `--prog "$0"` first, so that
their help and error lines read as before (`compgen-run.sh: ...`); a driver that records its
command line (compare-nmt) gets that path as `argv0`."""

import importlib
import inspect
import os
import sys

from plugin_tools.cli import called_as

from . import runs

# subcommand: (module:function, one line of help)
SUBCOMMANDS = {
    "compgen-run": ("compgen_run:main", "one preset on one compgen task, per seed"),
    "cogs-tagging-run": ("cogs_tagging_run:main", "COGS as sequence tagging, per seed"),
    "grid": ("grid:main", "the compgen grid (short or paper budget), resumable"),
    "paper-variants": (
        "paper_variants:main",
        "one-factor variants of paper-budget rows, resumable",
    ),
    "study-nmt": ("studies:main_nmt", "the Multi30k En-De study (compare-nmt), resumable"),
    "compare-lm": (
        "lm_compare:main",
        "train and evaluate language models (configs), resumable",
    ),
    "compare-nmt": (
        "nmt_compare:main",
        "train, decode and compare NMT systems (configs, seeds), resumable",
    ),
    "study-lm": ("studies:main_lm", "the WikiText-2 LM study (compare-lm.sh), resumable"),
    "timed": ("runs:main_timed", "a command as one time piece of a run folder (resumed runs)"),
    "run-archive": (
        "run_archive:main",
        "save or restore a finished run's files (studies kept across machines)",
    ),
    "report": ("report:main", "compgen: the grid report; nmt, lm: a study's results document"),
}

USAGE = "Usage: scripts/experiment.py SUBCOMMAND [options]   (or python -m studies)\n\n"
USAGE += "".join(f"  {name:<18}{what}\n" for name, (_, what) in SUBCOMMANDS.items())
USAGE += "\nSUBCOMMAND --help: its options.\n"


def main(argv=None):
    invoked, argv = called_as(sys.argv[1:] if argv is None else argv, None)
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if not argv:
        print("experiment.py: need a SUBCOMMAND (see --help)", file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"experiment.py: unknown subcommand {name} (see --help)", file=sys.stderr)
        return 2
    module_name, function = SUBCOMMANDS[name][0].split(":")
    body = getattr(importlib.import_module(f"{__package__}.{module_name}"), function)
    kwargs = {"prog": name, "usage": f"scripts/experiment.py {name}"}
    if invoked:
        prog = os.path.basename(invoked)
        kwargs.update(prog=prog, usage=f"scripts/{prog}")
        if "argv0" in inspect.signature(body).parameters:
            kwargs["argv0"] = invoked
    return runs.main_of(kwargs["prog"], lambda a: body(a, **kwargs), rest)
