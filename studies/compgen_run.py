"""`compgen-run`: train and evaluate one preset on one compositional-generalization task, for
several seeds (scripts/compgen-run.sh is a wrapper of it)."""

import json
import subprocess
import sys
from pathlib import Path

from . import runs
from .runs import ROOT, SCRIPTS, ExperimentError

USAGE = """\
Usage: {usage} PRESET TASK [options] [-- extra fairseq-train args]

PRESET  a fairseq --arch, e.g. compgen_rel2_eb_c, compgen_small_2s, compgen_large_6 (or transformer)
TASK    a scripts/compgen-data.py task: add addneg reverse dup cart inters scan-length scan-addjump
        scan-length-cutoff-N cogs pcfg-productivity pcfg-systematicity

For every seed: fairseq-train (--task translation_accuracy --eval-accuracy, best checkpoint by
valid sequence accuracy), fairseq-generate on the task's test split (COGS: gen) with the best
checkpoint (and with the final one, see --report-checkpoint), scripts/seq-accuracy.py, and one row
appended to the results CSV:
preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,extra_args,threads,
cpu_seconds,checkpoint,accuracy_best,accuracy_last (accuracy: fraction 0..1, of the checkpoint
named in `checkpoint`; accuracy_best / accuracy_last: each checkpoint's, empty when not evaluated;
wall_seconds: training + generation, summed over resumed pieces; threads: OMP_NUM_THREADS of the
run; cpu_seconds: user + system CPU time of the same commands, which unlike the wall time does not
grow when other jobs share the CPU).

Options:
  --seeds N          seeds 1..N (default 1; the paper averages 5 repetitions)
  --seed S           only seed S
  --resume           keep run folders: a seed already in the CSV (same preset, task, seed, data
                     sizes) is skipped, a finished training is only evaluated, and an interrupted
                     one continues from its checkpoint_last.pt (pass --save-interval-updates N
                     after `--` to checkpoint within an epoch). Without it a seed starts afresh.
  --out DIR          data, checkpoints and logs (default work/compgen)
  --csv FILE         results CSV (default results/compgen.csv)
  --max-update N     training updates (default 20000)
  --epochs N         train N epochs of the authors' loader instead: N * floor(n_train / 64)
                     updates (their loader drops the last partial batch; fairseq's does not, so
                     the count of updates, not of fairseq epochs, is what matches them)
  --report-checkpoint best|last
                     which checkpoint's accuracy the CSV's `accuracy` holds (default best: the
                     best by valid accuracy; last: the final one, the paper's protocol). With
                     last, both are evaluated and recorded (accuracy_best, accuracy_last).
  --small            small data sets (compgen-data.py --small: 1000 train, 100 valid, 100 test)
  --train N, --valid N, --test N
                     data set sizes (compgen-data.py --train/--valid/--test; COGS: --test
                     subsamples the gen split too)
  --beam N           beam size for the test generation (default 1: greedy)
  --lr LR            peak learning rate (default Noam: d^-0.5 * 4000^-0.5, d = 128 for
                     compgen_large_* presets, else 64)
  --warmup N         warm-up updates (default 4000, or max-update/10 when that is smaller)
  --raw-dir DIR      published files for SCAN/COGS/PCFG (compgen-data.py --raw-dir)
  --data-seed S      seed of the generated data set (default 1; same data for every seed)
  --notebook         the authors' notebook path (docs/compgen.md, "The authors' notebook and our
                     pipeline"): its data preparation (compgen-data.py --notebook; data folder
                     suffix -nb) and its training options: {notebook}, the source padded to the
                     longest source of train and test (+ </s>) with --pad-source-to-length,
                     on the right (fairseq 0.12's flag --left-pad-source, which sets it to
                     False), also for generation
  --notebook-padding rows 5 and 6 of that table alone, for one-factor studies: the copy attention
                     over padding (--copy-attend-padding) with the source padded as --notebook
                     pads it (training and generation); --notebook includes it
  --grid-row ROW     record the runs as the row ROW instead of PRESET (a variant of a preset,
                     e.g. with other fairseq-train options after `--`): the CSV's preset column
                     is ROW, its extra_args begin with `--arch PRESET`, the run folders are
                     OUT/runs/ROW/..., and --resume looks for ROW
  -h, --help         this text

Paper defaults used: Adam (0.9, 0.98, 1e-9), inverse_sqrt (Noam) schedule, dropout 0.1,
batch 64 sentences, cross-entropy. Arguments after `--` go to fairseq-train last (they win).
"""

# fairseq-train options of the notebook path (after the recipe's, before the user's `--` ones)
NOTEBOOK_TRAIN = (
    "--notebook-batches", "--layernorm-eps", "1e-6", "--seq2seq-init", "official-dense",
    "--decoder-output-bias", "--copy-attend-padding", "--warmup-init-lr", "0",
)  # fmt: skip

HEADER = [
    "preset", "task", "seed", "updates", "accuracy", "wall_seconds", "date", "split", "n_test",
    "n_train", "beam", "extra_args", "threads", "cpu_seconds", "checkpoint", "accuracy_best",
    "accuracy_last",
]  # fmt: skip
DATA_SIZES = (("train", "-tr"), ("valid", "-va"), ("test", "-te"))


def data_suffix(small, sizes):
    """The data folder's suffix: -small, then -trN -vaN -teN for the sizes given (a dict)."""
    return ("-small" if small else "") + "".join(
        f"{tag}{sizes[name]}" for name, tag in DATA_SIZES if sizes.get(name) is not None
    )


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage, notebook=" ".join(NOTEBOOK_TRAIN)))
    p.add_argument("positional", nargs="*")
    runs.add_common_run_options(p, 20000, "work/compgen", "results/compgen.csv")
    p.add_argument("--small", action="store_true")
    for name, _ in DATA_SIZES:
        p.add_argument(f"--{name}")
    p.add_argument("--beam", default="1")
    p.add_argument("--data-seed", default="1")
    p.add_argument("--notebook", action="store_true")
    p.add_argument("--notebook-padding", action="store_true")
    args = p.parse_with_extra(argv)
    if len(args.positional) != 2:
        raise ExperimentError("need PRESET and TASK (see --help)")
    args.preset, args.task = args.positional
    runs.check_common_run_options(args)
    args.beam = runs.check_positive(args.beam, "--beam")
    args.data_seed = runs.check_positive(args.data_seed, "--data-seed")
    args.sizes = {
        name: runs.check_positive(getattr(args, name), f"--{name}") for name, _ in DATA_SIZES
    }
    return args


def prepare_data(args, data):
    """Generate / load the task once per (task, sizes, data seed) and binarize it with a joined
    dictionary (atomic, locked: grids on one --out share it)."""
    key = runs.raw_dir_key(args.raw_dir) if args.raw_dir else ""

    def build(tmp):
        cmd = [sys.executable, SCRIPTS / "compgen-data.py", args.task, tmp / "raw"]
        cmd += ["--seed", args.data_seed] + (["--small"] if args.small else [])
        cmd += ["--notebook"] if args.notebook else []
        for name, _ in DATA_SIZES:
            if args.sizes[name] is not None:
                cmd += [f"--{name}", args.sizes[name]]
        if args.raw_dir:
            cmd += ["--raw-dir", args.raw_dir]
        if subprocess.run([str(c) for c in cmd]).returncode != 0:
            raise ExperimentError(f"compgen-data.py {args.task} failed")
        eval_split = json.loads((tmp / "raw" / "meta.json").read_text())["eval_split"]
        if not eval_split:
            raise ExperimentError(
                f"{args.task} has no test split in {tmp}/raw (SCAN add-jump: the test file is held"
                " out of the SCAN corpus; give --raw-dir with"
                " add_prim_split/tasks_test_addprim_jump.txt)"
            )
        raw = tmp / "raw"
        cmd = ["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt"]
        cmd += ["--joined-dictionary", "--workers", "1", "--trainpref", raw / "train"]
        cmd += ["--validpref", raw / "valid", "--testpref", raw / eval_split]
        cmd += ["--destdir", tmp / "bin"]
        runs.run_logged(cmd, tmp / "preprocess.log", "fairseq-preprocess")
        (tmp / "bin" / ".done").touch()

    Path(data).parent.mkdir(parents=True, exist_ok=True)
    runs.prepare_once(data, "bin/.done", build, f"{data}.lock", key)


def main(argv, prog="compgen-run", usage="scripts/experiment.py compgen-run"):
    args = parse(argv, usage)
    threads = runs.tool_environment()
    runs.require_tool("fairseq-train")
    runs.check_arch(args.preset, "--list-prefix", "compgen")
    lr = args.lr or runs.noam_lr(128 if args.preset.startswith("compgen_large") else 64)

    out, csv_path = Path(args.out), Path(args.csv)
    suffix = data_suffix(args.small, args.sizes) + ("-nb" if args.notebook else "")
    data = out / "data" / f"{args.task}{suffix}-s{args.data_seed}"
    prepare_data(args, data)
    split, categories, n_test, n_train, max_len = scored_split(data / "raw")
    max_update, warmup = runs.training_budget(n_train, args.max_update, args.epochs, args.warmup)

    row_name = args.grid_row or args.preset
    extra_args = recorded_extra_args(args)
    if args.notebook:
        add_notebook_options(args, data / "raw", split)
    elif args.notebook_padding:
        add_notebook_padding(args, data / "raw", split)

    def recorded(seed):
        return recorded_in(csv_path, [row_name, args.task, str(seed), str(n_train), str(n_test)])

    csv_path.parent.mkdir(parents=True, exist_ok=True)
    label = f"{row_name} {args.task}"
    options = ["--task", "translation_accuracy", "--eval-accuracy", "--arch", args.preset]
    options += ["--criterion", "cross_entropy"]

    def train(seed, run_dir):
        runs.train_seed(data / "bin", run_dir, options, lr, warmup, max_update, seed, args.extra)

    def finish(seed, run_dir, updates, accuracy, wall, cpu):
        report = args.report_checkpoint
        row = [row_name, args.task, seed, updates, f"{accuracy[report]:.6f}", wall, runs.now()]
        row += [split, n_test, n_train, args.beam, " ".join(extra_args), threads, cpu, report]
        row += [f"{accuracy['best']:.6f}"]
        row += [f"{accuracy['last']:.6f}" if "last" in accuracy else ""]
        runs.append_rows(csv_path, HEADER, [row])
        runs.say(
            prog,
            f"{label} seed {seed}: accuracy {accuracy[report]} ({report} checkpoint) after "
            f"{updates} updates, {wall}s (CPU {cpu}s) -> {csv_path}",
        )

    runs.run_seeds(
        prog,
        label,
        args,
        max_update,
        lambda seed: out / "runs" / row_name / f"{args.task}{suffix}" / f"seed{seed}",
        recorded,
        train,
        lambda run_dir, which, sfx: evaluate(
            args, data, run_dir, which, sfx, split, categories, max_len
        ),
        finish,
    )


def scored_split(raw):
    """The eval split, its categories, the sizes the CSV records and the generation length cap."""
    meta = json.loads((raw / "meta.json").read_text())
    split, categories = meta["eval_split"], meta["categories"]
    n_test = runs.line_count(raw / f"{split}.tgt")
    n_train = runs.line_count(raw / "train.tgt")
    # Generation may stop one token after the longest reference: longer outputs are wrong anyway.
    refs = (raw / f"{split}.tgt").read_text().splitlines()
    max_len = max((len(line.split()) for line in refs), default=0) + 1
    return split, categories, n_test, n_train, max_len


def recorded_extra_args(args):
    """The CSV's extra_args: what sets the run apart from its preset, not the recipe's options."""
    extra_args = (["--arch", args.preset] if args.grid_row else []) + args.extra
    if args.notebook:
        return ["--notebook", *extra_args]
    return ["--notebook-padding", *extra_args] if args.notebook_padding else extra_args


def add_notebook_options(args, raw, split):
    """The notebook path's fairseq-train options and source padding (generation pads alike)."""
    padding = notebook_padding(raw, split)
    args.extra = [*NOTEBOOK_TRAIN, *padding, *args.extra]
    args.generate_options = padding


def add_notebook_padding(args, raw, split):
    """Only the notebook's copy attention over padding and its source padding (rows 5 and 6 of
    docs/compgen.md's table): one factor of the notebook path."""
    padding = notebook_padding(raw, split)
    args.extra = ["--copy-attend-padding", *padding, *args.extra]
    args.generate_options = padding


def recorded_in(csv_path, key):
    """--resume: CSV_PATH if it already holds the row KEY (preset, task, seed, n_train, n_test)."""
    for r in runs.read_rows(csv_path):
        if [r.get(k) for k in ("preset", "task", "seed", "n_train", "n_test")] == key:
            return csv_path
    return None


def evaluate(args, data, run_dir, which, sfx, split, categories, max_len):
    """fairseq-generate on the test split with checkpoint WHICH and scripts/seq-accuracy.py;
    files RUN_DIR/{generate,accuracy}SFX.*; returns the accuracy."""
    cmd = ["fairseq-generate", data / "bin", "--user-dir", ROOT / "fairseq_plugins"]
    cmd += [
        "--task",
        "translation_accuracy",
        "--path",
        run_dir / "checkpoints" / f"checkpoint_{which}.pt",
    ]
    cmd += ["--gen-subset", "test", "--beam", args.beam, "--batch-size", "128"]
    cmd += ["--required-batch-size-multiple", "1", "--max-len-a", "0", "--max-len-b", max_len]
    cmd += getattr(args, "generate_options", [])
    runs.run_logged(
        cmd,
        run_dir / f"generate{sfx}.log",
        "fairseq-generate",
        stdout=run_dir / f"generate{sfx}.out",
    )
    cmd = [sys.executable, SCRIPTS / "seq-accuracy.py", run_dir / f"generate{sfx}.out"]
    cmd += ["--ref", data / "raw" / f"{split}.tgt", "--json", run_dir / f"accuracy{sfx}.json"]
    if categories:
        cmd += ["--categories", data / "raw" / categories]
    proc = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, text=True)
    (run_dir / f"accuracy{sfx}.txt").write_text(proc.stdout)
    sys.stderr.write(proc.stdout)
    if proc.returncode != 0:
        raise ExperimentError(f"seq-accuracy.py failed on {run_dir}/generate{sfx}.out")
    return json.loads((run_dir / f"accuracy{sfx}.json").read_text())["accuracy"]


def notebook_padding(raw, split):
    """The notebook path's source padding: post-padding to the longest source of train, valid and
    the reported split, counting fairseq's </s> (the notebook's [END])."""
    longest = max(
        len(line.split()) + 1
        for name in ("train", "valid", split)
        for line in (Path(raw) / f"{name}.src").read_text().splitlines()
    )
    # fairseq 0.12 makes a bool option that defaults to True a store_false flag: `--left-pad-source`
    # alone sets it to False (post-padding, as the notebook).
    return ["--left-pad-source", "--pad-source-to-length", str(longest)]
