"""`study-lm`: the WikiText-2 language-model study at matched parameters, tokens and
tuning, one resumable command (scripts/study-lm.sh), which two processes can share (one per
core: every run folder is locked while it runs).

  1. data: scripts/prepare-wikitext.sh 2 (word-level text), then a sentencepiece unigram model of
     --vocab pieces trained on the training split, every split encoded and binarized
     (OUT_DATA/bin), and the word count of every split (words + one end of line per line);
  2. parameter counts of the systems (scripts/param-counts.py) into OUT/params.json;
  3. the learning-rate sweep: every system at every --lrs value, seed 1, --sweep-updates updates;
     the lr with the lowest validation perplexity is the system's (study_stats.choose_lr);
  4. --seeds seeds per system at its lr, trained epoch by epoch under the stopping rule
     (study_stats.stop_after), then scripts/eval-lm.sh of checkpoint_best.pt on valid and test
     (--context-window); perplexity per subword and, renormalised, per word;
  5. scripts/study-report.py lm-study: the results document.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from . import compare, run_archive, runs, study_stats
from .runs import ROOT, ExperimentError

USAGE = """\
Usage: {usage} [--out DIR] [--doc FILE] [--smoke] [--threads N] [--seeds LIST]
                           [--lrs LIST] [--sweep-updates N]
                           [--sweep-widenings N] [--vocab N] [--min-epochs N]
                           [--max-epochs N] [--context-window N] [--train-args STR]
                           [--raw-dir DIR] [--data-root DIR] [--max-lines TRAIN,EVAL]
                           [--archive DIR | --no-archive] [--only RUNS]

The WikiText-2 language-model study, resumable (run the same command again after an
interruption: finished runs are skipped, an unfinished one resumes from checkpoint_last.pt) and
shared: the same command started twice (one process per core, --threads 1 each) splits the runs.
Three systems, configs/lm/wikitext2-study-{{baseline,matched,compositional}}.sh: stock
transformer_lm; the paper's matched baseline (compositional_transformer_lm_baseline: shared layers,
multi-head attention, the compositional LM's width, depth and ffn); the compositional LM.
  1. data: prepare-wikitext.sh 2, then sentencepiece (--vocab pieces) on its training text;
  2. parameter counts (scripts/param-counts.py) -> OUT/params.json;
  3. lr sweep: each system at each --lrs value, seed 1, --sweep-updates updates; the lowest
     validation perplexity chooses the system's lr (all reported); while a system's best lies
     at an edge of the grid, the grid of every system grows by the next value beyond that edge
     (x2 or /2), at most --sweep-widenings times;
  4. --seeds seeds per system at that lr, epoch by epoch: stop after epoch e >= --min-epochs
     once validation perplexity improved by < 1% over epoch e-1, at --max-epochs at the latest;
     eval-lm.sh --context-window on valid and test: perplexity per subword and per word;
  5. the results document (mean +- sd over seeds, paired t-tests across seeds with Holm's
     correction, the paper's direction, curves, costs, commands).

  --out DIR           study folder (default outputs/study-lm; with --smoke outputs/study-lm-smoke)
  --doc FILE          results document (default docs/results-lm.md; with --smoke OUT/results-lm.md)
  --smoke             pipeline check: 3000 / 300 lines, vocabulary 1000, lrs 0.002,0.004, seeds
                      1,2, 30 sweep updates; labelled "smoke run, not results"
  --threads N         OMP_NUM_THREADS of the tools (default: the environment's, else 1)
  --seeds LIST        default 1,2,3
  --lrs LIST          default 0.001,0.002,0.004
  --sweep-updates N   default 300 (a quarter of an epoch of 2048-token updates)
  --sweep-widenings N how often the grid may grow past an edge that won (default 2; 0: never)
  --vocab N           sentencepiece vocabulary (default 8000)
  --min-epochs N, --max-epochs N   the stopping rule's bounds (default 2 and 5, the study's
                      rule: under 1% gain per epoch, or 5 epochs). A lower cap is a budget
                      choice; rerunning with a higher --max-epochs continues every run the cap
                      stopped (resumes from its checkpoint_last.pt)
  --context-window N  eval-lm.sh context window (default 128)
  --train-args STR    extra fairseq-train arguments of every run, after the config's (later
                      flags win; the study's --lr, --seed, --max-update, --max-epoch come last)
  --raw-dir DIR       WikiText-2 text folder for prepare-wikitext.sh (default: the corpus folder)
  --data-root DIR     where the prepared data go (default data-bin)
  --max-lines T,E     keep the first T training and E valid/test lines (--smoke: 3000,300)
  --archive DIR       keep every finished run (logs, results, times; not checkpoints) in
                      DIR/RUN (RUN: its folder under OUT) and restore from there the runs OUT
                      lacks (scripts/experiment.py run-archive), so that the study resumes on
                      another machine or a fresh clone. Default docs/study-runs/lm, committed;
                      with --smoke none
  --no-archive        neither keep nor restore runs
  --only RUNS         train only these seed runs (SYSTEM:SEED, comma-separated, e.g.
                      compositional:1,matched:2; SYSTEM one of baseline, matched,
                      compositional) after the sweep, and write no document: to place the
                      long runs where they can finish (another machine or process); the study's
                      command without --only reports once every run is there
"""

SYSTEMS = ("baseline", "matched", "compositional")


def config_path(system):
    return f"configs/lm/wikitext2-study-{system}.sh"


def only_runs(text, seeds):
    """--only SYSTEM:SEED,... -> {(system, seed)}, or None without --only."""
    if text is None:
        return None
    chosen = set()
    for item in text.split(","):
        m = re.fullmatch(r"([a-z]+):([1-9][0-9]*)", item)
        if not m or m.group(1) not in SYSTEMS or int(m.group(2)) not in seeds:
            raise ExperimentError(
                f"--only {item}: needs SYSTEM:SEED with SYSTEM one of {', '.join(SYSTEMS)} "
                f"and SEED one of --seeds ({','.join(map(str, seeds))})"
            )
        chosen.add((m.group(1), int(m.group(2))))
    return chosen


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage))
    p.add_argument("--out")
    p.add_argument("--doc")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--threads", default=None)
    p.add_argument("--seeds")
    p.add_argument("--lrs")
    p.add_argument("--sweep-updates")
    p.add_argument("--sweep-widenings", default="2")
    p.add_argument("--only")
    p.add_argument("--vocab")
    p.add_argument("--min-epochs")
    p.add_argument("--max-epochs")
    p.add_argument("--context-window", default="128")
    p.add_argument("--train-args", default="")
    p.add_argument("--raw-dir")
    p.add_argument("--data-root")
    p.add_argument("--max-lines")
    runs.add_archive_options(p)
    args = p.parse_args(argv)
    args.threads = runs.check_positive(args.threads, "--threads")
    args.train_args = shlex.split(args.train_args)
    if args.raw_dir is not None:
        if not Path(args.raw_dir).is_dir():
            raise ExperimentError(f"--raw-dir {args.raw_dir}: not a directory")
        args.raw_dir = str(Path(args.raw_dir).resolve())
    args.data_root = str(Path(args.data_root).resolve() if args.data_root else ROOT / "data-bin")
    args.max_lines = args.max_lines or ("3000,300" if args.smoke else None)
    if args.max_lines is not None and not re.fullmatch(r"[1-9][0-9]*,[1-9][0-9]*", args.max_lines):
        raise ExperimentError(f"--max-lines {args.max_lines}: needs TRAIN,EVAL (e.g. 3000,300)")
    check_seeds_and_lrs(args)
    check_budget(args)
    # given paths are the caller's (resolved before the study moves to the checkout); the
    # defaults are the checkout's
    smoke = args.smoke
    args.out = (
        Path(args.out).resolve()
        if args.out
        else ROOT / f"outputs/study-lm{'-smoke' if smoke else ''}"
    )
    default_doc = args.out / "results-lm.md" if smoke else ROOT / "docs" / "results-lm.md"
    args.doc = str(Path(args.doc).resolve() if args.doc else default_doc)
    args.archive = runs.archive_folder(args, None if smoke else "docs/study-runs/lm")
    return args


def check_seeds_and_lrs(args):
    """--seeds, --lrs and --only checked and made lists (defaults by --smoke): the study's runs."""
    smoke = args.smoke
    args.seeds = args.seeds or ("1,2" if smoke else "1,2,3")
    args.lrs = args.lrs or ("0.002,0.004" if smoke else "0.001,0.002,0.004")
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", args.seeds):
        raise ExperimentError("--seeds needs comma-separated positive integers (e.g. 1,2,3)")
    if not re.fullmatch(r"[0-9.eE-]+(,[0-9.eE-]+)*", args.lrs):
        raise ExperimentError("--lrs needs comma-separated numbers (e.g. 0.001,0.002,0.004)")
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.only = only_runs(args.only, args.seeds)
    args.lrs = args.lrs.split(",")
    if len(set(args.seeds)) < len(args.seeds) or len(set(args.lrs)) < len(args.lrs):
        raise ExperimentError("--seeds/--lrs: a value given twice")


def check_budget(args):
    """The sweep, vocabulary, epoch and context options checked and made integers."""
    smoke = args.smoke
    defaults = {"sweep_updates": 30 if smoke else 300, "vocab": 1000 if smoke else 8000}
    defaults.update(min_epochs=study_stats.MIN_EPOCHS, max_epochs=study_stats.MAX_EPOCHS)
    for name, default in defaults.items():
        flag = "--" + name.replace("_", "-")
        value = runs.check_positive(getattr(args, name), flag)
        setattr(args, name, value if value is not None else default)
    args.context_window = runs.check_positive(args.context_window, "--context-window")
    if not re.fullmatch(r"[0-9]+", args.sweep_widenings):
        raise ExperimentError(f"--sweep-widenings {args.sweep_widenings}: not a whole number")
    args.sweep_widenings = int(args.sweep_widenings)
    if args.min_epochs > args.max_epochs:
        raise ExperimentError("--min-epochs is larger than --max-epochs")


# ------------------------------------------------------------------------------------- data


def count_words(path):
    """Tokens of a text file as fairseq's --only-source binarization counts them: the
    whitespace-separated words plus one end-of-line token per line."""
    with open(path, encoding="utf-8") as f:
        return sum(len(line.split()) + 1 for line in f)


def prepare_data(prog, args):
    """The word-level text (prepare-wikitext.sh) and the sentencepiece data; returns the
    binarized folder. Both under locks: a second process waits for the first."""
    lines = f"-{args.max_lines.replace(',', '-')}" if args.max_lines else ""
    words = Path(args.data_root) / f"wikitext-2{lines}"
    with runs.FileLock(f"{words}.lock"):
        if not (words / "bin" / "dict.txt").is_file():
            runs.say(prog, f"preparing {words}")
            cmd = [
                "bash",
                "scripts/prepare-wikitext.sh",
                "2",
                *([args.raw_dir] if args.raw_dir else []),
            ]
            cmd += ["--out", str(words)]
            if args.max_lines:
                train_lines, eval_lines = args.max_lines.split(",")
                cmd += ["--max-train-lines", train_lines, "--max-eval-lines", eval_lines]
            if subprocess.run(cmd, stdout=sys.stderr).returncode != 0:
                raise ExperimentError(f"data preparation failed ({' '.join(cmd[1:])})")
    dest = Path(args.data_root) / f"wikitext-2{lines}-spm{args.vocab}"

    def build(tmp):
        import sentencepiece as spm

        runs.say(prog, f"sentencepiece ({args.vocab} pieces) -> {dest}")
        (tmp / "text").mkdir(parents=True)
        # WikiText's own <unk> stays one piece (fairseq maps it to its unknown word)
        spm.SentencePieceTrainer.train(
            input=str(words / "text" / "train.txt"),
            model_prefix=str(tmp / "spm"),
            vocab_size=args.vocab,
            model_type="unigram",
            character_coverage=1.0,
            user_defined_symbols=["<unk>"],
            unk_piece="<spm-unk>",
            hard_vocab_limit=False,
            num_threads=1,
            minloglevel=2,
        )
        sp = spm.SentencePieceProcessor(model_file=str(tmp / "spm.model"))
        counts = {}
        for split in ("train", "valid", "test"):
            src = words / "text" / f"{split}.txt"
            lines = src.read_text(encoding="utf-8").splitlines()
            pieces = sp.encode([ln.strip() for ln in lines], out_type=str)
            (tmp / "text" / f"{split}.txt").write_text(
                "".join(" ".join(p) + "\n" for p in pieces), encoding="utf-8"
            )
            counts[split] = {"words": count_words(src), "pieces": sum(len(p) + 1 for p in pieces)}
        (tmp / "counts.json").write_text(json.dumps(counts, indent=1) + "\n")
        t = tmp / "text"
        cmd = ["fairseq-preprocess", "--only-source", "--trainpref", t / "train.txt"]
        cmd += ["--validpref", t / "valid.txt", "--testpref", t / "test.txt"]
        cmd += ["--destdir", tmp / "bin", "--workers", "1"]
        runs.run_logged(cmd, tmp / "preprocess.log", "fairseq-preprocess")

    runs.prepare_once(dest, "counts.json", build, f"{dest}.lock")
    return dest


# ------------------------------------------------------------------------------------- runs


def valid_ppl_by_epoch(log):
    """The validation perplexity at the end of every epoch (the last validation of each) of a
    fairseq-train log, in epoch order."""
    by_epoch = {}
    for m in re.finditer(r"\| valid \| epoch (\d+) .*?\| ppl ([0-9.]+)", Path(log).read_text()):
        by_epoch[int(m.group(1))] = float(m.group(2))
    return [by_epoch[e] for e in sorted(by_epoch)]


def train(run_dir, system, data, extra, train_args=()):
    """scripts/train-lm.sh of SYSTEM's config into RUN_DIR/checkpoints (resuming from its
    checkpoint_last.pt) with EXTRA last; its log appended to RUN_DIR/train.log, the command to
    RUN_DIR/commands.txt."""
    ckpt = run_dir / "checkpoints"
    cmd = ["bash", "scripts/train-lm.sh", config_path(system), str(data), str(ckpt), "--"]
    cmd += [*train_args, *extra]
    with open(run_dir / "commands.txt", "a") as f:
        f.write(shlex.join(cmd) + "\n")
    try:
        runs.run_logged(cmd, run_dir / "train-lm.stderr", "train-lm.sh", stdout=run_dir / "x.out")
    finally:
        if (ckpt / "train.log").is_file():
            with open(run_dir / "train.log", "a") as f:
                f.write((ckpt / "train.log").read_text())
            (ckpt / "train.log").unlink()
        (run_dir / "x.out").unlink(missing_ok=True)


def sweep_run(run_dir, system, data, lr, args):
    extra = ["--lr", lr, "--seed", "1", "--max-update", str(args.sweep_updates)]
    extra += ["--max-epoch", "0"]
    with runs.TimePiece(run_dir):
        train(run_dir, system, data, extra, args.train_args)
    ppl = valid_ppl_by_epoch(run_dir / "train.log")
    found = re.findall(r"\| valid \| .*?\| ppl ([0-9.]+)", (run_dir / "train.log").read_text())
    if not found:
        raise ExperimentError(f"no validation perplexity in {run_dir}/train.log")
    result = {"system": system, "lr": lr, "valid_ppl": min(map(float, found)), "epochs": len(ppl)}
    result["wall"], result["cpu"] = map(float, runs.TimePiece(run_dir).totals())
    (run_dir / "result.json").write_text(json.dumps(result) + "\n")


def evaluate(run_dir, data, counts, args):
    """eval-lm.sh of checkpoint_best.pt on valid and test: {subset: {ppl, loss, tokens,
    word_ppl}}."""
    out = {}
    for subset in ("valid", "test"):
        cmd = ["bash", "scripts/eval-lm.sh", run_dir / "checkpoints" / "checkpoint_best.pt"]
        cmd += [data, "--subset", subset, "--context-window", str(args.context_window)]
        with open(run_dir / "commands.txt", "a") as f:
            f.write(shlex.join(map(str, cmd)) + "\n")
        log = run_dir / f"eval-{subset}.log"
        runs.run_logged(cmd, log, "eval-lm.sh", stdout=run_dir / f"eval-{subset}.txt")
        text = (run_dir / f"eval-{subset}.txt").read_text()
        loss = float(re.search(r"^loss: (\S+)", text, re.M).group(1))
        ppl = float(re.search(r"^ppl: (\S+)", text, re.M).group(1))
        scored = re.findall(r"Evaluated ([0-9,]+) tokens", log.read_text())
        if not scored:
            raise ExperimentError(f"no 'Evaluated N tokens' line in {log}")
        tokens = int(scored[-1].replace(",", ""))
        words = counts[subset]["words"] * tokens / counts[subset]["pieces"]
        out[subset] = {
            "ppl": ppl,
            "loss": loss,
            "tokens": tokens,
            "words": words,
            "word_ppl": study_stats.word_perplexity(loss, tokens, words),
        }
    return out


def seed_run(run_dir, system, data, lr, seed, counts, args):
    """Epoch by epoch under the stopping rule, then the evaluation: RUN_DIR/result.json."""
    if (run_dir / "result.json").is_file() and not (
        run_dir / "checkpoints" / "checkpoint_last.pt"
    ).is_file():
        raise ExperimentError(
            f"{run_dir}: restored from the archive with fewer epochs than --max-epochs "
            f"{args.max_epochs}, and its checkpoints are not archived: train it again by "
            "deleting it and its archive folder, or keep the --max-epochs it ran with"
        )
    with runs.TimePiece(run_dir):
        while True:
            ppl = (
                valid_ppl_by_epoch(run_dir / "train.log")
                if (run_dir / "train.log").is_file()
                else []
            )
            if ppl and study_stats.stop_after(
                ppl, min_epochs=args.min_epochs, max_epochs=args.max_epochs
            ):
                break
            extra = ["--lr", lr, "--seed", str(seed), "--max-update", "0"]
            extra += ["--max-epoch", str(len(ppl) + 1)]
            train(run_dir, system, data, extra, args.train_args)
            if len(valid_ppl_by_epoch(run_dir / "train.log")) <= len(ppl):
                raise ExperimentError(f"no new epoch in {run_dir}/train.log")
        results = evaluate(run_dir, data, counts, args)
    wall, cpu = runs.TimePiece(run_dir).totals()
    result = {"system": system, "lr": lr, "seed": seed, "valid_ppl_by_epoch": ppl}
    result.update(epochs=len(ppl), eval=results, wall=float(wall), cpu=float(cpu))
    gain = study_stats.last_gain(ppl)
    by_rule = len(ppl) >= args.min_epochs and gain is not None and gain < study_stats.MIN_GAIN
    result.update(last_gain=gain, stopped_by="rule" if by_rule else "cap")
    (run_dir / "result.json").write_text(json.dumps(result, indent=1) + "\n")


def run_all(
    prog, tasks, finished=lambda run_dir: (run_dir / "result.json").is_file(), archive=None
):
    """TASKS: [(run folder, label, function)]. Two passes: the first runs what no other process
    holds (a lock per run folder), the second waits for the others' runs and runs what is left;
    FINISHED(run folder) says whether a run is done (default: its result.json exists).
    ARCHIVE: (out, archive folder) or None: an unfinished run is first restored from the
    archive (ARCHIVE/its folder under OUT), and a run finished here is saved there."""

    def archived(run_dir):
        return archive[1] / run_dir.relative_to(archive[0]) if archive else None

    for blocking in (False, True):
        for run_dir, label, function in tasks:
            kept = archived(run_dir)
            if not finished(run_dir) and kept and (kept / "result.json").is_file():
                run_archive.restore(kept, run_dir)
                runs.say(prog, f"[{label}] restored from {kept} (finished earlier)")
            if finished(run_dir):
                continue
            lock = runs.FileLock(run_dir / "run.lock")
            if not lock.acquire(blocking=blocking):
                runs.say(prog, f"[{label}] busy in another process, skipped for now")
                continue
            try:
                if not finished(run_dir):
                    last = run_dir / "checkpoints" / "checkpoint_last.pt"
                    runs.say(prog, f"[{label}] {'resuming' if last.is_file() else 'training'}")
                    function()
                    if kept and finished(run_dir):
                        run_archive.save(run_dir, kept)
            finally:
                lock.release()


def lr_sweep(prog, out, bin_dir, args, archive):
    """The learning-rate sweep -> (the grid it ended with, {system: chosen lr}). Every system
    runs every lr of the grid (--lrs); while some system's best lies at an edge of the grid,
    the grid grows past that edge (the top doubled, the bottom halved), at most
    --sweep-widenings times, the same for every system. Deterministic, so that two processes
    sharing the study widen it alike (run_all waits for the other's runs first)."""
    lrs = list(args.lrs)
    for widening in range(args.sweep_widenings + 1):
        dirs = {(s, lr): out / "sweep" / s / f"lr{lr}" for s in SYSTEMS for lr in lrs}
        sweep = []
        for (system, lr), d in dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            fn = lambda d=d, s=system, lr=lr: sweep_run(d, s, bin_dir, lr, args)  # noqa: E731
            sweep.append((d, f"{system} lr {lr}", fn))
        run_all(prog, sweep, archive=archive)
        chosen = {}
        for system in SYSTEMS:
            ppl = {
                lr: json.loads((dirs[system, lr] / "result.json").read_text())["valid_ppl"]
                for lr in lrs
            }
            chosen[system] = study_stats.choose_lr(ppl)[0]
        ordered = sorted(lrs, key=float)
        top, bottom = ordered[-1] in chosen.values(), ordered[0] in chosen.values()
        if widening == args.sweep_widenings or len(lrs) < 2 or not (top or bottom):
            return lrs, chosen
        if top:
            lrs.append(f"{2 * float(ordered[-1]):g}")
        if bottom:
            lrs.insert(0, f"{float(ordered[0]) / 2:g}")
        runs.say(prog, f"a best lr at the edge of the grid: the sweep widens to {', '.join(lrs)}")


def param_counts(out, vocab, train_args):
    """scripts/param-counts.py of every system's config and TRAIN_ARGS (the study's
    --train-args) -> OUT/params.json."""
    dest = out / "params.json"
    if dest.is_file():
        return
    specs = []
    for system in SYSTEMS:
        config = compare.source_config(config_path(system))
        specs.append(shlex.join([config["ARCH"], *config["TRAIN_ARGS"], *train_args]))
    # the dictionary's 4 specials next to the pieces
    cmd = [sys.executable, "scripts/param-counts.py", "--lm", "--json"]
    cmd += ["--src-vocab", str(vocab + 4)]
    cmd += ["--tgt-vocab", str(vocab + 4), *specs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ExperimentError(f"param-counts.py failed: {proc.stderr.strip().splitlines()[-1:]}")
    dest.write_text(proc.stdout)


def main(argv, prog="study-lm", usage="scripts/experiment.py study-lm"):
    args = parse(argv, usage)
    runs.tool_environment(args.threads)
    import os

    os.chdir(ROOT)  # the defaults and the configs are relative to the checkout
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    invocation = ["bash", usage] if usage.endswith(".sh") else usage.split()
    (out / "study-invocation.txt").write_text(shlex.join([*invocation, *map(str, argv)]) + " \n")
    data = prepare_data(prog, args)
    counts = json.loads((data / "counts.json").read_text())
    bin_dir = data / "bin"
    vocab = sum(1 for _ in open(bin_dir / "dict.txt", encoding="utf-8"))
    param_counts(out, vocab, args.train_args)
    archive = (out, args.archive) if args.archive else None
    lrs, chosen = lr_sweep(prog, out, bin_dir, args, archive)
    seeds = seed_tasks(out, bin_dir, chosen, counts, args)
    run_all(prog, seeds, lambda run_dir: seed_finished(run_dir, args.max_epochs), archive=archive)
    if args.only is not None:
        runs.say(prog, "--only: the chosen runs are done; no document (run without --only)")
        return 0
    write_plan(out, args, lrs, bin_dir, counts)
    with runs.FileLock(out / "report.lock"):
        cmd = [sys.executable, "scripts/study-report.py", "lm-study", str(out), "--doc", args.doc]
        cmd += ["--smoke"] if args.smoke else []
        if subprocess.run(cmd).returncode != 0:
            raise ExperimentError(f"could not write {args.doc} (scripts/study-report.py failed)")
    return 0


def seed_tasks(out, bin_dir, chosen, counts, args):
    """run_all's tasks for the seed runs: every system at its chosen lr and seed (or --only's)."""
    seeds = []
    for system in SYSTEMS:
        for seed in args.seeds:
            if args.only is not None and (system, seed) not in args.only:
                continue
            d = out / system / f"seed{seed}"
            d.mkdir(parents=True, exist_ok=True)
            fn = lambda d=d, s=system, seed=seed: seed_run(  # noqa: E731
                d, s, bin_dir, chosen[s], seed, counts, args
            )
            seeds.append((d, f"{system} seed {seed}", fn))
    return seeds


def seed_finished(run_dir, max_epochs):
    """Done: evaluated, and stopped by the rule or at a cap >= this --max-epochs."""
    f = run_dir / "result.json"
    if not f.is_file():
        return False
    r = json.loads(f.read_text())
    return r.get("stopped_by") == "rule" or r["epochs"] >= max_epochs


def write_plan(out, args, lrs, bin_dir, counts):
    """OUT/plan.json for the report; archived with params.json, enough to regenerate the report."""
    plan = {
        "systems": list(SYSTEMS),
        "configs": [config_path(s) for s in SYSTEMS],
        "lrs": lrs,
        "lrs_given": args.lrs,
        "sweep_widenings": args.sweep_widenings,
        "seeds": args.seeds,
        "sweep_updates": args.sweep_updates,
        "vocab": args.vocab,
        "min_epochs": args.min_epochs,
        "max_epochs": args.max_epochs,
        "min_gain": study_stats.MIN_GAIN,
        "context_window": args.context_window,
        "train_args": args.train_args,
        "data": str(bin_dir),
        "counts": counts,
    }
    (out / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    if args.archive:  # the archive alone regenerates the document (study-report.py archive)
        args.archive.mkdir(parents=True, exist_ok=True)
        for name in ("plan.json", "params.json"):
            text = run_archive.relative_paths((out / name).read_text(encoding="utf-8"))
            (args.archive / name).write_text(text, encoding="utf-8")
