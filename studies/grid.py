"""`grid`: the short-budget grid (Ontañón et al.'s accuracy tables on the benchmarks we hold, plus the
compositional-attention rows) and the paper-budget grid, one run at a time, resumable
(scripts/compgen-grid.sh is a wrapper of it; the plan is :mod:`.grid_plan`)."""

import datetime
import subprocess
import sys
import time
from pathlib import Path

from plugin_tools import corpora

from . import grid_plan, runs
from .compgen_run import data_suffix
from .grid_plan import TAGGING, TAGGING_TASK
from .runs import ROOT, SCRIPTS, ExperimentError

USAGE = """\
Usage: {usage} [options]

Runs the whole grid of docs/compgen-results.md with scripts/compgen-run.sh, one
training run at a time, and appends each finished run to the results CSV. Safe to stop at any
point (kill the process group, Ctrl-C, shutdown) and to start again with the same command:
  - a cell (preset, task, seed) already in the CSV is skipped;
  - a run whose training finished but was not recorded is only evaluated;
  - an interrupted training continues from its checkpoint_last.pt (saved every 500 updates);
  - data preparation is atomic (built in DIR.partial, renamed when complete).
Order: seed 1 of every row x column first, then seed 2, then seed 3, so a partial grid is
already a table. Each grid runs one training at a time; to use more cores, start the same
command again (e.g. once per core with --threads 1): grids on the same --out share the work,
each cell is locked (OUT/locks) by the grid that runs it and skipped by the others, and data
preparation is locked too. wall_seconds then includes the sharing of the machine; cpu_seconds
does not.

The cogs-tagging column (COGS as sequence tagging, encoder-only) runs scripts/cogs-tagging-run.sh
with the tagging architecture that has the row's encoder (TAGGING in
studies/grid_plan.py; see --list). rel2-eb and rel2-eb-c differ from rel-eb only
in the decoder, so they have no tagging cell of their own: the report shows rel-eb's. A tagging
run appends one line to the same CSV (preset = the row, task = cogs-tagging, split gen,
extra_args = --arch TAGGING-ARCH ...); its folder is OUT/cogs-tagging/runs/ROW/seedS
(per-category accuracies in pred/gen.scores.json).

Two budgets (--budget):
  short  (default) the short grid: every column at the short budget below, 7 rows, the best
         checkpoint by valid accuracy (docs/compgen-grid.csv).
  paper  the authors' own budget per column (Ontañón et al.'s notebooks): Add 2 epochs, Reverse 2,
         COGS 16, Dup 4, SCAN-length 24, SCAN-add-jump 24, AddNeg 10, Cart 4, Inters 8, COGS
         tagging 16 (PCFG and CFQ have no obtainable data: "no data" columns); an epoch is
         floor(n_train / 64) updates (their loader drops the last partial batch), Noam schedule
         with 4,000 warm-up updates at every budget, no early stopping; the FINAL checkpoint is
         reported (the paper's protocol), the best-by-valid one beside it (accuracy_best).
         Rows: compgen_abs, compgen_rel2_eb_c, compgen_comp_rel2_eb_c, compgen_comp_rel2_eb_cs
         (3 seeds) on the seq2seq columns; cogs_tagging_tuned, cogs_tagging_base and the tuned
         model with compositional attention (5 seeds) on COGS tagging. Run in blocks, each
         finished (all seeds) before the next starts: 1 COGS tagging; 2 Add, Reverse; 3 COGS,
         Dup; 4 SCAN-length, SCAN-add-jump; 5 AddNeg; 6 Cart, Inters (on the notebook path by
         default, below).

Two paths (--path):
  notebook         (default at --budget paper) the authors' seq2seq notebook wherever it differs
                   from ours (docs/compgen.md, "The authors' notebook and our pipeline"): every
                   seq2seq run gets compgen-run --notebook (the notebook's data preparation,
                   batches, LayerNorm epsilon, initialisation, output bias, copy attention over
                   padding, post-padding to one length, schedule from 0), each seed has its own
                   data set (--data-seed SEED), COGS is scored on the whole gen split. The COGS
                   tagging column (another notebook) runs as on the fairseq path: its presets
                   already default to that notebook's initialisation, and its cells are the
                   fairseq path's (--tagging-csv, --tagging-out): a tagging cell done on either
                   path is done on both. Default --out / --csv get a -notebook suffix
                   (work/compgen-paper-notebook, docs/compgen-paper-notebook.csv).
                   `--budget paper` alone is the paper's setting.
  fairseq          (default at --budget short) our pipeline: fairseq's batching and
                   initialisation, one data set for every seed (docs/compgen-paper.csv at the
                   paper budget). It reproduces Add and COGS tagging but not COGS seq2seq or
                   Reverse at the paper's budgets (docs/compgen-results.md).

Options:
  --budget B       short or paper (see above; default short)
  --path P         notebook or fairseq (see above; default notebook at --budget paper, fairseq at
                   --budget short)
  --out DIR        data, runs, checkpoints, logs (default work/compgen-grid; paper:
                   work/compgen-paper-notebook, with --path fairseq work/compgen-paper)
  --csv FILE       results CSV (default docs/compgen-grid.csv; paper: docs/compgen-paper-notebook.csv,
                   with --path fairseq docs/compgen-paper.csv)
  --tagging-csv FILE, --tagging-out DIR
                   where the COGS-tagging cells are recorded and run (default: --csv and --out
                   on the fairseq path; on the notebook path the fairseq path's defaults,
                   docs/compgen-paper.csv and work/compgen-paper)
  --threads N      OMP_NUM_THREADS of every run (default 1; recorded in the CSV)
  --max-runs N     stop after N runs that trained or evaluated something (default: all)
  --only-task T    only the column T (repeatable), e.g. --only-task add
  --only-preset P  only the row P (repeatable)
  --list           print the plan (budget per column, every cell and its state) and exit
  --dry-run        print the command of every selected cell not yet in the CSV, in run order,
                   and exit (starts nothing)
  -h, --help       this text

Budget per column (fixed for every row of the column; batch 64 sentences, Adam 0.9/0.98/1e-9,
inverse_sqrt with peak lr 0.00198 after max-update/10 warm-up, dropout 0.1, greedy decoding,
validation every 500 updates and at the end, best checkpoint by valid sequence accuracy) and
rows: see --list and docs/compgen-results.md.
"""

# How a cell runs a driver: this program again, in a process of its own (a test puts a stand-in
# here).
EXPERIMENT = [sys.executable, str(SCRIPTS / "experiment.py")]
SCAN_ADDJUMP_TEST_LINES = 7706


def budget_options(budget):
    """The run driver's options for a column budget (N updates, or eN epochs at the paper's
    protocol)."""
    if budget.startswith("e"):
        return ["--epochs", budget[1:], "--warmup", "4000", "--report-checkpoint", "last"]
    return ["--max-update", budget]


def cell_place(args, col):
    """(out, csv) of a column's cells: a tagging cell runs the same on both paths, so it has one
    place, the fairseq path's (--tagging-out, --tagging-csv)."""
    if col.task == TAGGING_TASK:
        return args.tagging_out, args.tagging_csv
    return args.out, args.csv


def grid_cell_command(args, seed, col, row):
    """(command, run folder) of a cell of this grid, at its place."""
    return cell_command(seed, col, row, *cell_place(args, col), args.path)


def is_done(args, seed, col, row):
    """Whether the cell is in its CSV (read afresh: another grid may have recorded it)."""
    return (row.preset, col.task, str(seed)) in runs.done_cells(cell_place(args, col)[1])


def cell_command(seed, col, row, out, csv_path, path="fairseq"):
    """(command, run folder) of a cell. A row's extra options are seq2seq options: its tagging
    cell takes the encoder options of its TAGGING entry instead. PATH notebook: compgen-run
    --notebook, and the column's data options of that path (notebook_column); a tagging cell is
    the same on both paths."""
    if col.task == TAGGING_TASK:  # the same on both paths, without the row's seq2seq options
        return run_command(seed, col, row.preset, out, csv_path)
    if path == "notebook":
        return run_command(
            seed,
            notebook_column(col),
            row.preset,
            out,
            csv_path,
            # the notebook draws its data anew every repetition: one data set per seed
            run_options=("--notebook", "--data-seed", str(seed)),
            train_options=row.extra,
        )
    return run_command(seed, col, row.preset, out, csv_path, train_options=row.extra)


def notebook_column(col):
    """The column on the notebook path: COGS scored on the whole gen split (no --test
    subsample), as the notebook; the other columns as they are."""
    data = list(col.data)
    if col.task == "cogs" and "--test" in data:
        i = data.index("--test")
        del data[i : i + 2]
    return col._replace(data=tuple(data))


def run_command(seed, col, preset, out, csv_path, row_name=None, run_options=(), train_options=()):
    """(command, run folder) of one seed of PRESET in column COL, recorded as the row ROW_NAME
    (default PRESET; a variant of it, scripts/paper-variants.sh); RUN_OPTIONS go to the run driver
    after the budget's (a later --warmup wins), TRAIN_OPTIONS to fairseq-train last."""
    budget = budget_options(col.budget)
    if col.task == TAGGING_TASK:
        row_name = row_name or preset
        arch, options = TAGGING[preset]
        cmd = EXPERIMENT + ["cogs-tagging-run", arch, "--grid-row", row_name, "--seed", str(seed)]
        cmd += ["--resume", *budget, *run_options, "--out", f"{out}/cogs-tagging"]
        cmd += ["--csv", str(csv_path), "--", *grid_plan.COMMON, *options, *train_options]
        return cmd, out / "cogs-tagging" / "runs" / row_name / f"seed{seed}"
    raw = ["--raw-dir", str(out / "raw" / "scan-addjump")] if col.task == "scan-addjump" else []
    cmd = EXPERIMENT + ["compgen-run", preset, col.task, "--seed", str(seed), "--resume"]
    cmd += [*budget, *col.data, *raw, *(["--grid-row", row_name] if row_name else [])]
    cmd += [*run_options, "--out", str(out), "--csv", str(csv_path)]
    cmd += ["--", *grid_plan.COMMON, *train_options]
    sizes = dict(zip(col.data[::2], col.data[1::2]))
    suffix = data_suffix(False, {k.lstrip("-"): v for k, v in sizes.items()})
    suffix += "-nb" if "--notebook" in run_options else ""
    return cmd, out / "runs" / (row_name or preset) / f"{col.task}{suffix}" / f"seed{seed}"


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage))
    p.add_argument("--budget", default="short")
    p.add_argument("--path")
    p.add_argument("--out")
    p.add_argument("--csv")
    p.add_argument("--tagging-csv")
    p.add_argument("--tagging-out")
    p.add_argument("--threads", default="1")
    p.add_argument("--max-runs")
    p.add_argument("--only-task", action="append", default=[])
    p.add_argument("--only-preset", action="append", default=[])
    p.add_argument("--list", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    args.threads = runs.check_positive(args.threads, "--threads")
    runs.check_choice(args.budget, "--budget", ("short", "paper"))
    # the paper's setting is the notebook path: it reproduces the paper where ours does not
    args.path = args.path or ("notebook" if args.budget == "paper" else "fairseq")
    runs.check_choice(args.path, "--path", ("notebook", "fairseq"))
    fairseq_name = "compgen-paper" if args.budget == "paper" else "compgen-grid"
    name = fairseq_name + ("-notebook" if args.path == "notebook" else "")
    args.out = Path(args.out or ROOT / "work" / name).absolute()
    args.csv = Path(args.csv or ROOT / "docs" / f"{name}.csv").absolute()
    on_fairseq = args.path == "fairseq"
    args.tagging_out = Path(
        args.tagging_out or (args.out if on_fairseq else ROOT / "work" / fairseq_name)
    ).absolute()
    args.tagging_csv = Path(
        args.tagging_csv or (args.csv if on_fairseq else ROOT / "docs" / f"{fairseq_name}.csv")
    ).absolute()
    if args.max_runs is not None:
        if not args.max_runs.isdigit():
            raise ExperimentError(f"--max-runs {args.max_runs}: not an integer")
        args.max_runs = int(args.max_runs)
    return args


def show_plan(args, cells):
    """--list: the columns, rows, tagging models and every cell with its state."""
    columns, rows = grid_plan.BUDGETS[args.budget]
    print(
        f"budget {args.budget}, path {args.path}; columns (task, updates or eN = N epochs, data options, block):"
    )
    for c in columns:
        print(f"  {c.task:<13} {c.budget:>5}  {' '.join(c.data):<28} {c.block}")
    print("rows (preset, seeds, extra options, only these columns):")
    for r in rows:
        only = f" [only: {' '.join(r.only)}]" if r.only else ""
        print(f"  {r.preset:<24} {r.seeds}  {' '.join(r.extra)}{only}")
    print("cogs-tagging (encoder-only; row -> tagging arch with the row's encoder, extra options):")
    for r in rows:
        if not grid_plan.runs_column(r, TAGGING_TASK):
            continue
        arch, options = TAGGING[r.preset]
        if arch.startswith("="):
            print(
                f"  {r.preset:<24} = {arch[1:]} (same encoder, differs in the decoder only): "
                "not trained again"
            )
        else:
            print(f"  {r.preset:<24} {' '.join((arch, *options))}")
    where = f"{args.csv}" + (
        f"; tagging cells in {args.tagging_csv}" if args.tagging_csv != args.csv else ""
    )
    print(f"cells in run order (state: done = in {where}, partial = has a run folder, todo):")
    n_done = 0
    for seed, col, row in cells:
        _, run_dir = grid_cell_command(args, seed, col, row)
        state = "partial" if run_dir.is_dir() else "todo"
        if is_done(args, seed, col, row):
            state, n_done = "done", n_done + 1
        arrow = ""
        if col.task == TAGGING_TASK:
            arrow = " -> " + " ".join((TAGGING[row.preset][0], *TAGGING[row.preset][1]))
        print(f"  {state:<8} seed {seed}  {col.task:<13} {row.preset}{arrow}")
    print(f"{len(cells)} cells, {n_done} done")


def log(message):
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} compgen-grid: {message}", file=sys.stderr, flush=True)


def derive_scan_addjump(out, scan=None):
    """SCAN add-jump: the official test file is held out of the SCAN corpus (SCAN: where
    plugin_tools.corpora finds it, unless given). Its content is derivable: SOURCE.md says all its
    7706 lines are in tasks.txt, and tasks.txt holds every SCAN command once, so tasks.txt minus
    the lines of the add-jump train file is that test set (in tasks.txt order, not the official
    file's order). Built once, atomically, and checked."""
    scan = corpora.corpus_dir("scan") if scan is None else Path(scan)
    train_file = scan / "add_prim_split" / "tasks_train_addprim_jump.txt"

    def build(tmp):
        if not (scan / "tasks.txt").is_file() or not train_file.is_file():
            raise ExperimentError(f"SCAN files missing under {scan}")
        (tmp / "add_prim_split").mkdir(parents=True)
        (tmp / "add_prim_split" / train_file.name).write_bytes(train_file.read_bytes())
        train = set(train_file.read_text().splitlines())
        lines = (scan / "tasks.txt").read_text().splitlines()
        test = [line for line in lines if line.strip() and line not in train]
        if len(test) != SCAN_ADDJUMP_TEST_LINES or len(set(test)) != len(test):
            raise ExperimentError(
                f"could not derive the SCAN add-jump test set: derived {len(test)} lines "
                f"({len(set(test))} distinct), expected {SCAN_ADDJUMP_TEST_LINES}"
            )
        if not all(" jump " in f" {line[4:].split(' OUT: ')[0]} " for line in test):
            raise ExperimentError(
                "could not derive the SCAN add-jump test set: a command has no `jump`"
            )
        (tmp / "add_prim_split" / "tasks_test_addprim_jump.txt").write_text("\n".join(test) + "\n")
        (tmp / "DERIVED.md").write_text(
            "tasks_test_addprim_jump.txt derived by scripts/compgen-grid.sh: the lines of tasks.txt\n"
            "that are not in tasks_train_addprim_jump.txt (7706, all with `jump`), tasks.txt order.\n"
            "Not the official file (same content per SOURCE.md, order may differ).\n"
        )
        (tmp / ".done").touch()

    dest = out / "raw" / "scan-addjump"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if runs.prepare_once(dest, ".done", build, out / "locks" / "scan-addjump-test.lock"):
        log(f"derived the SCAN add-jump test set (7706 lines) in {dest}")


def main(argv, prog="grid", usage="scripts/experiment.py grid"):
    args = parse(argv, usage)
    grid_plan.check_tagging()
    cells = grid_plan.plan(args.budget, args.only_task, args.only_preset)
    if not cells:
        raise ExperimentError("no cell matches --only-task/--only-preset")
    if args.list:
        return show_plan(args, cells)
    if args.dry_run:
        return show_commands(args, cells)

    runs.tool_environment(args.threads)
    for out in {args.out, args.tagging_out}:
        (out / "locks").mkdir(parents=True, exist_ok=True)
    derive_scan_addjump(args.out)
    n_ran, failed, elsewhere = 0, [], []
    log(
        f"start: budget {args.budget}, {len(cells)} cells, csv {args.csv}, out {args.out}, "
        f"OMP_NUM_THREADS={args.threads}"
    )
    for seed, col, row in cells:
        name = f"seed {seed} {col.task} {row.preset}"
        if is_done(args, seed, col, row):
            continue
        if args.max_runs is not None and n_ran >= args.max_runs:
            log(f"stopping after --max-runs {args.max_runs} runs")
            break
        # The cell's lock, held (and inherited by the run) until the run ends; another grid on
        # this --out holding it runs the cell now. The CSV is read again once the lock is ours:
        # the other grid may have recorded the cell in between.
        out = cell_place(args, col)[0]
        lock = runs.FileLock(out / "locks" / f"{row.preset}.{col.task}.seed{seed}.lock")
        if not lock.acquire(blocking=False):
            elsewhere.append(name)
            continue
        try:
            if is_done(args, seed, col, row):
                continue
            if not run_cell(args, seed, col, row, lock):
                failed.append(name)
        finally:
            lock.release()
        n_ran += 1
    return summarize(args, failed, elsewhere)


def show_commands(args, cells):
    """--dry-run: the command of every cell not yet in the CSV, in run order."""
    for seed, col, row in cells:
        if not is_done(args, seed, col, row):
            print(" ".join(grid_cell_command(args, seed, col, row)[0]))
    return 0


def run_cell(args, seed, col, row, lock):
    """One cell's run, its lock passed on so the cell stays locked while the run's tools live."""
    name = f"seed {seed} {col.task} {row.preset}"
    cmd, run_dir = grid_cell_command(args, seed, col, row)
    log(f"run: {name} ({col.budget} updates)")
    start = time.time()
    if subprocess.run(cmd, pass_fds=(lock.fileno(),)).returncode == 0:
        log(f"done: {name} in {int(time.time() - start)}s")
        keep_checkpoints(run_dir, col.budget.startswith("e"))
        return True
    log(f"FAILED: {name} (see the run's train.log); continuing")
    return False


def summarize(args, failed, elsewhere):
    """The grid's closing log lines and its exit status (1 when a run failed)."""
    if elsewhere:
        log(f"left to the other grid(s) on {args.out}: {' '.join(elsewhere)}")
    if failed:
        log(f"finished with {len(failed)} failed run(s): {' '.join(failed)}")
        return 1
    if elsewhere:
        log(
            f"finished here; {len(elsewhere)} cell(s) were left to other grids on {args.out} (see --list)"
        )
    else:
        where = f"{args.csv}" + (f" and {args.tagging_csv}" if args.tagging_csv != args.csv else "")
        log(f"finished: every selected cell is in {where}")
    return 0


def keep_checkpoints(run_dir, keep_last):
    """Keep only the best (and, at the paper budget, the final) checkpoint of a recorded run (the
    others are for resuming)."""
    keep = {"checkpoint_best.pt"} | ({"checkpoint_last.pt"} if keep_last else set())
    for path in Path(run_dir, "checkpoints").rglob("*.pt"):
        if path.name not in keep:
            path.unlink(missing_ok=True)
