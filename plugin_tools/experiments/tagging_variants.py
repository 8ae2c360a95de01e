"""`tagging-variants`: issue 21, why does the tuned COGS tagging model stay below the paper's
0.784 at the notebook's budget? One variant of cogs_tagging_tuned at a time, 16 epochs, final
checkpoint, resumable (scripts/cogs-tagging-variants.sh is a wrapper of it)."""

import subprocess

from . import grid_plan, runs
from .grid import EXPERIMENT, budget_options
from .runs import ROOT, ExperimentError

USAGE = """\
Usage: {usage} [--seeds N] [--only NAME]... [--out DIR] [--csv FILE]
                                        [--threads N] [--list]

Trains variants of the notebook's "tuned" tagging model (cogs_tagging_tuned) at the paper budget
of scripts/compgen-grid.sh --budget paper (16 epochs = 6,032 updates, Noam with 4,000 warm-up,
final checkpoint reported, best-by-valid beside it) with scripts/cogs-tagging-run.sh --grid-row
VARIANT, one run at a time, resumable (a variant-seed in the CSV is skipped). The unchanged model
is the paper grid's row cogs_tagging_tuned (docs/compgen-paper.csv); each variant changes one
factor:
  official_init   --tagging-init official: token embeddings and tag heads initialised as the
                  notebook's Keras layers (embeddings uniform +-0.05 instead of normal d^-0.5)
  warmup600       the Noam peak after 600 warm-up updates instead of 4,000 (the schedule of the
                  issue's first look: cogs-tagging-run.sh's default for 6,000 updates)
  absolute_head   --parent-head absolute (the base model's parent head) on the tuned encoder
  no_dropout      --dropout 0

Options:
  --seeds N     seeds 1..N of every variant (default 3)
  --only NAME   only this variant (repeatable)
  --out DIR     run folders (default work/compgen-paper; runs in OUT/cogs-tagging/runs/VARIANT)
  --csv FILE    results (default docs/cogs-tagging-variants.csv; layout of compgen-paper.csv)
  --threads N   OMP_NUM_THREADS (default 1)
  --list        print the variants and the command of every run, start nothing
  -h, --help    this text
"""

# variant: (cogs-tagging-run options, fairseq-train options); the run options come after the
# paper budget's (a later --warmup wins).
VARIANTS = {
    "official_init": ((), ("--tagging-init", "official")),
    "warmup600": (("--warmup", "600"), ()),
    "absolute_head": (("--parent-head", "absolute"), ()),
    "no_dropout": ((), ("--dropout", "0")),
}
PRESET = "cogs_tagging_tuned"


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage))
    p.add_argument("--seeds", default="3")
    p.add_argument("--only", action="append", default=[])
    p.add_argument("--out", default=str(ROOT / "work" / "compgen-paper"))
    p.add_argument("--csv", default=str(ROOT / "docs" / "cogs-tagging-variants.csv"))
    p.add_argument("--threads", default="1")
    p.add_argument("--list", action="store_true")
    args = p.parse_args(argv)
    args.seeds = runs.check_positive(args.seeds, "--seeds")
    args.threads = runs.check_positive(args.threads, "--threads")
    for name in args.only:
        if name not in VARIANTS:
            raise ExperimentError(f"--only {name}: no such variant")
    return args


def command(name, seed, out, csv_path):
    run_options, train_options = VARIANTS[name]
    cmd = EXPERIMENT + ["cogs-tagging-run", PRESET, "--grid-row", name, "--seed", str(seed)]
    cmd += ["--resume", *budget_options("e16"), *run_options, "--out", f"{out}/cogs-tagging"]
    cmd += ["--csv", str(csv_path), "--", *grid_plan.COMMON, *train_options]
    return cmd


def main(argv, prog="tagging-variants", usage="scripts/experiment.py tagging-variants"):
    args = parse(argv, usage)
    runs.tool_environment(args.threads)
    for seed in range(1, args.seeds + 1):
        for name in VARIANTS:
            if args.only and name not in args.only:
                continue
            cmd = command(name, seed, args.out, args.csv)
            if args.list:
                print(" ".join(cmd))
            elif subprocess.run(cmd).returncode != 0:
                runs.say(prog, f"{name} seed {seed} FAILED; continuing")
