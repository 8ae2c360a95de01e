"""`cogs-tagging-run`: COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1): tag files
-> fairseq-train -> predictions and both metrics on test and gen, for several seeds
(scripts/cogs-tagging-run.sh is a wrapper of it)."""

import json
import re
import subprocess
import sys
from pathlib import Path

from . import runs
from .compgen_run import HEADER as GRID_HEADER
from .runs import SCRIPTS, ExperimentError

USAGE = """\
Usage: {usage} [PRESET] [options] [-- extra fairseq-train args]

PRESET  a tagging_transformer --arch (default cogs_tagging_tuned): cogs_tagging_base (notebook
        "base": small-2, sinusoidal positions, absolute parent head), cogs_tagging_rel_eb,
        cogs_tagging_rel_eb_s (rel-eb small-2 / small-2s, absolute parent head),
        cogs_tagging_tuned (notebook "tuned": small-2s, rel-eb radius 16, attention parent head)

For every seed: fairseq-train (--task cogs_tagging --criterion cogs_tagging, best checkpoint by
the official valid accuracy), scripts/cogs-tagging-predict.py on test and gen with the best
checkpoint (per-category tables in RUN/predict.txt, predictions in RUN/pred/, scores with the
per-category accuracies in RUN/pred/SPLIT.scores.json; with --report-checkpoint last also with the
final checkpoint, in RUN/predict-last.txt and RUN/pred-last/), and one row per split appended to
the results CSV:
preset,task,seed,updates,split,accuracy,lf_accuracy,n_test,n_train,parent_head,wall_seconds,date,
extra_args,checkpoint
(accuracy: the official metric, all five tag rows exact; lf_accuracy: the rebuilt logical form
exact; fractions 0..1, of the checkpoint named in `checkpoint`; task is `cogs-tagging`). RUN is
OUT/runs/PRESET[-HEAD]/seedS. A CSV written before a column was added gets it (empty) first.

Options:
  --seeds N          seeds 1..N (default 1)
  --seed S           only seed S
  --resume           keep run folders: a seed already in the CSV (same preset, seed, data sizes,
                     parent head and extra args; with --grid-row: same row, seed and data sizes)
                     is skipped, a finished training (RUN/.trained) is only evaluated, and an
                     interrupted one continues from its checkpoint_last.pt (pass
                     --save-interval-updates N after `--` to checkpoint within an epoch).
                     Without it a seed starts afresh.
  --grid-row ROW     record in the layout of scripts/compgen-run.sh, for scripts/compgen-grid.sh:
                     ONE row per seed, preset,task,seed,updates,accuracy,wall_seconds,date,split,
                     n_test,n_train,beam,extra_args,threads,cpu_seconds with preset = ROW, task
                     cogs-tagging, split gen (accuracy: the official metric on gen), beam empty,
                     extra_args = `--arch PRESET` + the fairseq-train args after `--`. RUN is
                     OUT/runs/ROW/seedS. The row ends with checkpoint,accuracy_best,
                     accuracy_last as in compgen-run.sh.
  --out DIR          data, checkpoints and logs (default work/cogs-tagging)
  --csv FILE         results CSV (default results/cogs-tagging.csv)
  --max-update N     training updates (default 6000: the notebook's 16 epochs of 64 sentences)
  --epochs N         N * floor(n_train / 64) updates instead (the notebook's loader drops the last
                     partial batch): 16 epochs of the 24,155 sentences are 6,032 updates
  --report-checkpoint best|last
                     which checkpoint the CSV's accuracy is of (default best by valid accuracy;
                     last: the final one, the notebook's protocol; both are then evaluated)
  --parent-head H    absolute, relative or attention (default: the preset's)
  --lr LR            peak learning rate (default Noam: 64^-0.5 * 4000^-0.5 = 0.00198)
  --warmup N         warm-up updates (default 4000, or max-update/10 when that is smaller)
  --raw-dir DIR      COGS tsv files (default ../shared/data/cogs, see scripts/cogs-tags.py)
  -h, --help         this text

wall_seconds: training + prediction, summed over the pieces of a resumed run; cpu_seconds (grid
layout): user + system CPU time of the same commands; threads: OMP_NUM_THREADS.
Notebook defaults used: Adam (0.9, 0.98, 1e-9), Noam schedule, dropout 0.1, batch 64 sentences.
Arguments after `--` go to fairseq-train last (they win).
"""

HEADER = [
    "preset", "task", "seed", "updates", "split", "accuracy", "lf_accuracy", "n_test", "n_train",
    "parent_head", "wall_seconds", "date", "extra_args", "checkpoint",
]  # fmt: skip
TASK = "cogs-tagging"


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage))
    p.add_argument("positional", nargs="*")
    runs.add_common_run_options(p, 6000, "work/cogs-tagging", "results/cogs-tagging.csv")
    p.add_argument("--parent-head")
    args = p.parse_with_extra(argv)
    if len(args.positional) > 1:
        raise ExperimentError("one PRESET at most (see --help)")
    args.preset = args.positional[0] if args.positional else "cogs_tagging_tuned"
    runs.check_common_run_options(args)
    heads = ("absolute", "relative", "attention")
    runs.check_choice(args.parent_head, "--parent-head", heads, how="choose")
    return args


def is_recorded(row, args, seed, n_train, n_gen):
    """Is ROW of the CSV this seed's result (see --resume)?"""
    key = [row.get(k) for k in ("task", "seed", "split", "n_train", "n_test")]
    if key != [TASK, str(seed), "gen", str(n_train), str(n_gen)]:
        return False
    if args.grid_row:
        return row.get("preset") == args.grid_row
    return (
        row.get("preset") == args.preset
        and row.get("extra_args") == " ".join(args.extra)
        and (not args.parent_head or row.get("parent_head") == args.parent_head)
    )


def main(argv, prog="cogs-tagging-run", usage="scripts/experiment.py cogs-tagging-run"):
    args = parse(argv, usage)
    threads = runs.tool_environment()
    runs.require_tool("fairseq-train")
    runs.check_arch(args.preset, "--model", "tagging_transformer", "--what", "tagging")
    lr = args.lr or runs.noam_lr(64)

    # The tag files (absolute parents; the task maps them to every head's classes).
    out, csv_path = Path(args.out), Path(args.csv)
    data = out / "data"

    def build(tmp):
        cmd = [sys.executable, SCRIPTS / "cogs-tags.py", "--outdir", tmp]
        cmd += ["--raw-dir", args.raw_dir] if args.raw_dir else []
        if subprocess.run([str(c) for c in cmd]).returncode != 0:
            raise ExperimentError("cogs-tags.py failed")

    out.mkdir(parents=True, exist_ok=True)
    key = runs.raw_dir_key(args.raw_dir) if args.raw_dir else ""
    runs.prepare_once(data, "meta.json", build, f"{data}.lock", key)
    n_train = runs.line_count(data / "train.src")
    n_gen = runs.line_count(data / "gen.src")
    max_update, warmup = runs.training_budget(n_train, args.max_update, args.epochs, args.warmup)

    def recorded(seed):
        hit = any(is_recorded(r, args, seed, n_train, n_gen) for r in runs.read_rows(csv_path))
        return csv_path if hit else None

    csv_path.parent.mkdir(parents=True, exist_ok=True)
    folder = args.grid_row or args.preset + (f"-{args.parent_head}" if args.parent_head else "")
    options = ["--task", "cogs_tagging", "--criterion", "cogs_tagging", "--arch", args.preset]
    options += ["--parent-head", args.parent_head] if args.parent_head else []

    def train(seed, run_dir):
        runs.train_seed(data, run_dir, options, lr, warmup, max_update, seed, args.extra)

    def finish(seed, run_dir, updates, summaries, wall, cpu):
        rows, header = record(args, run_dir, seed, updates, n_train, wall, cpu, threads)
        runs.append_rows(csv_path, header, rows)
        row = f" ({args.grid_row})" if args.grid_row else ""
        summary = " ".join(summaries[args.report_checkpoint])
        runs.say(
            prog,
            f"{args.preset}{row} seed {seed}: {summary} ({args.report_checkpoint} "
            f"checkpoint) after {updates} updates, {wall}s (CPU {cpu}s) -> {csv_path}",
        )

    runs.run_seeds(
        prog,
        args.preset,
        args,
        max_update,
        lambda seed: out / "runs" / folder / f"seed{seed}",
        recorded,
        train,
        lambda run_dir, which, sfx: predict(data, run_dir, which, sfx),
        finish,
    )


def predict(data, run_dir, which, sfx):
    """scripts/cogs-tagging-predict.py on test and gen with checkpoint WHICH (RUN_DIR/predictSFX.txt,
    RUN_DIR/predSFX/); returns its `test:` and `gen:` summary lines (also printed)."""
    cmd = [sys.executable, SCRIPTS / "cogs-tagging-predict.py", data]
    cmd += [run_dir / "checkpoints" / f"checkpoint_{which}.pt", "--split", "test", "--split"]
    cmd += ["gen", "--outdir", run_dir / f"pred{sfx}"]
    runs.run_logged(
        cmd, run_dir / f"predict{sfx}.log", "cogs-tagging-predict.py",
        stdout=run_dir / f"predict{sfx}.txt",
    )  # fmt: skip
    text = (run_dir / f"predict{sfx}.txt").read_text()
    summary = [line for line in text.splitlines() if re.match(r"(test|gen):", line)]
    sys.stderr.write("".join(f"{which} checkpoint, {line}\n" for line in summary))
    return summary


def record(args, run_dir, seed, updates, n_train, wall, cpu, threads):
    """(rows, header) of the results CSV: one row per split, or with --grid-row one row in the
    layout of compgen-run (docs/compgen-grid.csv)."""

    def scores_of(pred):
        return {
            s: json.loads((run_dir / pred / f"{s}.scores.json").read_text())
            for s in ("test", "gen")
        }

    report = args.report_checkpoint
    best = scores_of("pred")
    last = scores_of("pred-last") if report == "last" else None
    scores = last if report == "last" else best
    date, extra = runs.now(), " ".join(args.extra)
    if args.grid_row:
        head = ["--parent-head", args.parent_head] if args.parent_head else []
        grid_args = " ".join(["--arch", args.preset] + head + ([extra] if extra else []))
        g = scores["gen"]
        row = [args.grid_row, TASK, seed, updates, f"{g['accuracy']:.6f}", wall, date, "gen"]
        row += [g["total"], n_train, "", grid_args, threads, cpu, report]
        row += [f"{best['gen']['accuracy']:.6f}", f"{last['gen']['accuracy']:.6f}" if last else ""]
        return [row], GRID_HEADER
    head_used = best["test"]["parent_head"]
    rows = [
        [args.preset, TASK, seed, updates, s, f"{v['accuracy']:.6f}", f"{v['lf_accuracy']:.6f}"]
        + [v["total"], n_train, head_used, wall, date, extra, report]
        for s, v in scores.items()
    ]
    return rows, HEADER
