"""`paper-variants`: why do our rows stay below the paper at the authors' budget? One factor of a
paper-budget row changed at a time, same budget and protocol, resumable
(scripts/paper-variants.sh is a wrapper of it)."""

import subprocess
from pathlib import Path
from typing import NamedTuple

from . import grid_plan, runs
from .grid import run_command
from .runs import ROOT, ExperimentError

USAGE = """\
Usage: {usage} [--seeds N] [--only NAME]... [--out DIR] [--csv FILE]
                                        [--threads N] [--list]

Trains variants of rows of the paper-budget grid (scripts/compgen-grid.sh --budget paper: the
authors' epochs, Noam with 4,000 warm-up, final checkpoint reported, best-by-valid beside it),
one run at a time, resumable (a variant-seed in the CSV is skipped). The unchanged model is the
grid's row (docs/compgen-paper.csv) or, where one is named in parentheses, another variant;
each variant changes one factor:
{variants}
Options:
  --seeds N     seeds 1..N of every variant (default 3)
  --only NAME   only this variant (repeatable)
  --out DIR     run folders (default work/compgen-paper; tagging runs in OUT/cogs-tagging/runs/
                VARIANT, seq2seq runs in OUT/runs/VARIANT)
  --csv FILE    results (default docs/compgen-paper-variants.csv; layout of compgen-paper.csv)
  --threads N   OMP_NUM_THREADS (default 1)
  --list        print the variants and the command of every run, start nothing
  -h, --help    this text
"""


class Variant(NamedTuple):
    """A variant: the grid row it changes, the column it runs, the one factor in words, the run
    driver's options (after the paper budget's: a later --warmup wins), the fairseq-train options,
    the variant it is compared with (None: its grid row; a variant where the row's default
    has changed since the variant was trained, e.g. the tagging presets' initialisation), and
    whether each seed draws its own data set (data seed FRESH_DATA_SEED + seed)."""

    base: str
    task: str
    factor: str
    run_options: tuple = ()
    train_options: tuple = ()
    against: str | None = None
    fresh_data: bool = False


def tagging_variant(factor, base="cogs_tagging_tuned", against=None, **options):
    """A variant of one of the paper-budget tagging rows (the notebook's "tuned", 0.784 in
    Table 5, unless BASE says otherwise)."""
    return Variant(base, grid_plan.TAGGING_TASK, factor, against=against, **options)


# The notebook's tagging presets default to its Keras initialisation of the token embeddings and
# tag heads; these variants (and the rows they were compared with) ran on fairseq's.
FAIRSEQ_INIT = ("--tagging-init", "fairseq")
FAIRSEQ_INIT_FACTOR = (
    "fairseq's initialisation (--tagging-init fairseq: token embeddings normal d^-0.5, tag heads "
    "fairseq's) instead of the notebook's Keras init"
)

VARIANTS = {
    "tuned_fairseq_init": tagging_variant(FAIRSEQ_INIT_FACTOR, train_options=FAIRSEQ_INIT),
    "base_fairseq_init": tagging_variant(
        FAIRSEQ_INIT_FACTOR, base="cogs_tagging_base", train_options=FAIRSEQ_INIT
    ),
    "tuned_comp_fairseq_init": tagging_variant(
        FAIRSEQ_INIT_FACTOR, base="cogs_tagging_tuned_comp", train_options=FAIRSEQ_INIT
    ),
    "warmup600": tagging_variant(
        "Noam warm-up 600 updates instead of 4,000",
        against="tuned_fairseq_init",
        run_options=("--warmup", "600"),
        train_options=FAIRSEQ_INIT,
    ),
    "absolute_head": tagging_variant(
        "absolute parent head (the base model's) instead of the attention head",
        against="tuned_fairseq_init",
        run_options=("--parent-head", "absolute"),
        train_options=FAIRSEQ_INIT,
    ),
    "no_dropout": tagging_variant(
        "dropout 0 instead of 0.1",
        against="tuned_fairseq_init",
        train_options=("--dropout", "0") + FAIRSEQ_INIT,
    ),
    "rel2_eb_c_official_init": Variant(
        "compgen_rel2_eb_c",
        "cogs",
        "token embeddings, output projection and copy decoder initialised as the notebook's "
        "Keras layers (--seq2seq-init official)",
        train_options=("--seq2seq-init", "official"),
    ),
}


# The seq2seq notebook's differences from our pipeline (docs/compgen.md, "The authors' notebook
# and our pipeline"), each alone on rel2-eb-c in the cells far from the paper; --path notebook
# runs them all at once. The per-seed data sets (row 12) are the fresh_data variants below.
NOTEBOOK_FACTORS = {
    "notebook_batches": (
        "batches: a fresh shuffle cut into batches of exactly 64, the last partial "
        "one dropped (--notebook-batches)",
        (),
        ("--notebook-batches",),
    ),
    "layernorm_eps": (
        "LayerNorm epsilon 1e-6 (--layernorm-eps 1e-6)",
        (),
        ("--layernorm-eps", "1e-6"),
    ),
    "dense_init": (
        "every dense layer, embedding and relative-position table initialised as the notebook's "
        "Keras layers (--seq2seq-init official-dense)",
        (),
        ("--seq2seq-init", "official-dense"),
    ),
    "output_bias": (
        "a bias on the output layer (--decoder-output-bias)",
        (),
        ("--decoder-output-bias",),
    ),
    "copy_padding": (
        "copy attention over padding, the source right-padded to the notebook's length "
        "(compgen-run --notebook-padding)",
        ("--notebook-padding",),
        (),
    ),
    "warmup_from_0": (
        "learning rate 0 at the first update (--warmup-init-lr 0)",
        (),
        ("--warmup-init-lr", "0"),
    ),
}

for _task in ("dup", "reverse"):
    for _factor, (_words, _run, _train) in NOTEBOOK_FACTORS.items():
        VARIANTS[f"{_task}_{_factor}"] = Variant(
            "compgen_rel2_eb_c", _task, "notebook: " + _words, _run, _train
        )

# Row 12: the notebook draws the algorithmic data anew for every repetition, ours trains every
# seed on one data set (--data-seed 1). The variant's data seeds start at 101, so that no seed
# trains on the row's data set (the notebook path's seed 1 does: it passes the seed itself).
FRESH_DATA_SEED = 100
for _task in ("dup", "reverse"):
    VARIANTS[f"{_task}_fresh_data"] = Variant(
        "compgen_rel2_eb_c",
        _task,
        f"notebook: a data set drawn for each seed (--data-seed {FRESH_DATA_SEED}+SEED) "
        "instead of one for every seed",
        fresh_data=True,
    )

# The row itself again: the same seed and options, today's code, this machine. Floats differ
# between CPUs (and kernels between versions), so this measures how far a run moves when
# nothing the study names has changed.
VARIANTS["dup_rerun"] = Variant(
    "compgen_rel2_eb_c",
    "dup",
    "none: the row's run again (same seed and options) on another machine and today's code",
)

# dense_init in two: the layers the notebook builds as Keras layers of its own (embeddings,
# output, copy decoder: --seq2seq-init official) without the Transformer layers' dense weights
# and relative-position tables, which official-dense adds.
VARIANTS["dup_official_init"] = Variant(
    "compgen_rel2_eb_c",
    "dup",
    "part of dense_init: token embeddings, output projection and copy decoder initialised as the "
    "notebook's Keras layers, the Transformer layers as fairseq's (--seq2seq-init official)",
    train_options=("--seq2seq-init", "official"),
)


def parse(argv, usage):
    width = max(map(len, VARIANTS)) + 2
    listing = "".join(
        f"  {name:<{width}}{v.base} on {v.task}"
        + (f" (against {v.against})" if v.against else "")
        + f": {v.factor}\n"
        for name, v in VARIANTS.items()
    )
    p = runs.Parser(USAGE.format(usage=usage, variants=listing))
    p.add_argument("--seeds", default="3")
    p.add_argument("--only", action="append", default=[])
    p.add_argument("--out", default=str(ROOT / "work" / "compgen-paper"))
    p.add_argument("--csv", default=str(ROOT / "docs" / "compgen-paper-variants.csv"))
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
    """The command of one seed of variant NAME: its row's run in the paper-budget column."""
    v = VARIANTS[name]
    column = next(c for c in grid_plan.PAPER_COLUMNS if c.task == v.task)
    run_options = v.run_options
    if v.fresh_data:
        run_options += ("--data-seed", str(FRESH_DATA_SEED + seed))
    cmd, _ = run_command(
        seed, column, v.base, Path(out), csv_path, name, run_options, v.train_options
    )
    return cmd


def main(argv, prog="paper-variants", usage="scripts/experiment.py paper-variants"):
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
