"""`compare-lm` (scripts/compare-lm.sh is its wrapper): train and evaluate language models given
as configs (shell-variables files) with scripts/train-lm.sh and scripts/eval-lm.sh, resumable
(train.done, checkpoint_last.pt, evaluations newer than the checkpoint), one markdown report and,
with --doc, the results document of study_report (`scripts/study-report.py lm`)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import compare, runs
from .runs import SCRIPTS, ExperimentError

USAGE = """\
Usage: {usage} [options] CONFIG...

Each CONFIG is a shell-variables file (see configs/lm/wikitext2-study-*.sh) that sets NAME (the
system's folder under --out), ARCH and a bash array TRAIN_ARGS (as scripts/train-lm.sh reads them),
and optionally DATA (a fairseq-preprocess'd --only-source folder, e.g. prepare-wikitext.sh's
OUTDIR/bin). For every config in turn: scripts/train-lm.sh into OUT/NAME/checkpoints, then
scripts/eval-lm.sh of checkpoint_best.pt on the valid and the test subset (--context-window);
then scripts/plot-curves.py of the validation perplexity and OUT/REPORT.md (parameters, tokens,
tokens/s, wall and CPU seconds, valid/test perplexity).

Resumable: a finished training (OUT/NAME/train.done) is not repeated, an unfinished one resumes
from checkpoint_last.pt (OUT/NAME/train.log collects the logs of all attempts); an evaluation
newer than checkpoint_best.pt is reused. Delete OUT/NAME to redo a system.

Options:
  --out DIR             output folder (default outputs/compare-lm)
  --data DIR            DATA for every config (overrides the configs)
  --context-window N    eval-lm.sh context window (default 64; must be < tokens-per-sample)
  --eval-batch-size N   eval-lm.sh batch size (default 8)
  --train-args STR      extra fairseq-train arguments for every system (after the config's;
                        later flags win), e.g. "--max-update 20" for a smoke run
  --tensorboard         also log training to TensorBoard: --tensorboard-logdir OUT/tensorboard/NAME
  --skip-train          do not train; evaluate the checkpoints already in OUT/NAME/checkpoints
  --doc FILE            also write a results document (scripts/study-report.py lm) to FILE
  --smoke               label that document "smoke run, not results"
"""


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage))
    compare.add_compare_options(p, "outputs/compare-lm")
    p.add_argument("--context-window", default="64")
    p.add_argument("--eval-batch-size", default="8")
    args = compare.parse_compare_options(p, argv)
    if not re.fullmatch(r"[0-9]+", args.context_window):
        raise ExperimentError("--context-window needs a non-negative integer")
    if not re.fullmatch(r"[1-9][0-9]*", args.eval_batch_size):
        raise ExperimentError("--eval-batch-size needs a positive integer")
    return args


def load(path, data_override):
    """The config PATH, validated: NAME ARCH DATA TRAIN_ARGS."""
    c = compare.source_config(path)
    compare.check_name(path, c["NAME"])
    if not c["ARCH"]:
        raise ExperimentError(f"{path}: does not set ARCH")
    data = c["DATA"] = data_override or c["DATA"]
    if not data:
        raise ExperimentError(f"{path}: does not set DATA (or pass --data)")
    if not os.path.isfile(f"{data}/dict.txt"):
        raise ExperimentError(
            f"{path}: DATA {data}: no dict.txt (prepare it with scripts/prepare-wikitext.sh, "
            "or pass --data)"
        )
    return c


def ppl_of(path):
    """The "ppl: X" of eval-lm.sh's output PATH ("" if none)."""
    if not os.path.isfile(path):
        return ""
    found = re.findall(r"^ppl: (.*)$", Path(path).read_text(errors="replace"), re.M)
    return found[-1] if found else ""


def move_log(ckpt, run_dir):
    """train-lm.sh's CKPT/train.log (it starts its log afresh) appended to RUN_DIR/train.log."""
    log = Path(ckpt, "train.log")
    if log.is_file():
        with open(f"{run_dir}/train.log", "ab") as f:
            f.write(log.read_bytes())
        log.unlink()


def train(prog, c, cfg, run_dir, ckpt, args):
    name = c["NAME"]
    if args.skip_train or os.path.isfile(f"{run_dir}/train.done"):
        if os.path.isfile(f"{run_dir}/train.done"):
            runs.say(prog, f"[{name}] already trained ({run_dir}/train.done)")
        return
    extra = list(args.extra)
    if args.tensorboard:
        extra += ["--tensorboard-logdir", f"{args.out}/tensorboard/{name}"]
    cmd = ["bash", SCRIPTS / "train-lm.sh", cfg, c["DATA"], ckpt, "--", *extra]
    move_log(ckpt, run_dir)  # the log of an interrupted attempt first
    compare.training_starts(prog, name, run_dir, ckpt, c["ARCH"])
    with open(f"{run_dir}/train-lm.stderr", "w") as err:
        status = compare.timed(run_dir, cmd, stdout=subprocess.DEVNULL, stderr=err)
    if status != 0:
        compare.tail(f"{ckpt}/train.log", 20)
        compare.tail(f"{run_dir}/train-lm.stderr", 3)
        raise ExperimentError(f"[{name}] training failed (see {ckpt}/train.log)")
    move_log(ckpt, run_dir)
    compare.training_done(name, run_dir, ckpt)


def evaluate(prog, c, run_dir, ckpt, args):
    """eval-lm.sh of checkpoint_best.pt on valid and test (unless evaluated since); the
    commands as recorded."""
    name, lines = c["NAME"], []
    for subset in ("valid", "test"):
        cmd = ["bash", SCRIPTS / "eval-lm.sh", f"{ckpt}/checkpoint_best.pt", c["DATA"]]
        cmd += ["--subset", subset, "--context-window", args.context_window]
        cmd += ["--batch-size", args.eval_batch_size]
        lines.append(compare.shell_line(cmd))
        result = f"{run_dir}/eval-{subset}.txt"
        if compare.newer(result, f"{ckpt}/checkpoint_best.pt") and ppl_of(result):
            runs.say(prog, f"[{name}] {subset} already evaluated ({result})")
            continue
        runs.say(prog, f"[{name}] perplexity on {subset} (context window {args.context_window})")
        log, tmp = f"{run_dir}/eval-{subset}.log", f"{run_dir}/eval-{subset}.tmp"
        with open(tmp, "w") as out, open(log, "w") as err:
            status = subprocess.run([str(a) for a in cmd], stdout=out, stderr=err).returncode
        if status != 0:
            compare.tail(log, 5)
            raise ExperimentError(f"[{name}] eval-lm.sh on {subset} failed (see {log})")
        os.replace(tmp, result)
    return lines


def main(argv, prog="compare-lm", usage="scripts/experiment.py compare-lm", argv0=None):
    """ARGV0: the command as invoked, recorded in OUT/invocation.txt (the wrapper's path)."""
    args = parse(argv, usage)
    runs.use_venv()
    out = args.out
    names = compare.unique_names(args.configs, lambda path: load(path, args.data))
    compare.write_invocation(out, argv0 or usage, argv)
    Path(out, "runs.tsv").write_text("name\tarch\tconfig\tdir\tdata\n")
    rows, logs = [], []
    for cfg in args.configs:
        c = load(cfg, args.data)
        name = c["NAME"]
        run_dir, ckpt = f"{out}/{name}", f"{out}/{name}/checkpoints"
        os.makedirs(ckpt, exist_ok=True)
        shutil.copyfile(cfg, f"{run_dir}/config.sh")
        train(prog, c, cfg, run_dir, ckpt, args)
        if not os.path.isfile(f"{ckpt}/checkpoint_best.pt"):
            raise ExperimentError(f"[{name}] no {ckpt}/checkpoint_best.pt")
        if os.path.isfile(f"{ckpt}/command.txt"):
            Path(run_dir, "train-command.txt").write_bytes(Path(ckpt, "command.txt").read_bytes())
        evals = evaluate(prog, c, run_dir, ckpt, args)
        trained = Path(run_dir, "train-command.txt")
        commands = trained.read_text() if trained.is_file() else ""
        Path(run_dir, "commands.txt").write_text(commands + "".join(evals))
        figures = compare.RunFigures(run_dir)
        if figures.log:
            logs.append(figures.log)
        updates = figures.updates(r"\| train \| epoch|\| valid \|")
        rows.append(
            f"| {name} | `{c['ARCH']}` | `{cfg}` | {figures.params} | {updates} | "
            f"{figures.seconds} | {figures.cpu} | {figures.wps} | "
            f"{ppl_of(f'{run_dir}/eval-valid.txt')} | {ppl_of(f'{run_dir}/eval-test.txt')} |"
        )
        with open(f"{out}/runs.tsv", "a") as tsv:
            tsv.write("\t".join([name, c["ARCH"], cfg, run_dir, c["DATA"]]) + "\n")
    curves = ""
    if len(logs) == len(names):
        cmd = [*logs, "--labels", *names, "--metric", "ppl", "--out", f"{out}/curves.png"]
        if compare.run_python("plot-curves.py", *cmd, stdout=sys.stderr).returncode == 0:
            curves = "curves.png"
    text = compare.report_heading(
        usage, f"Language-model comparison: {' '.join(names)}", "Perplexity of"
    )
    text += "checkpoint_best.pt (lowest validation loss during training) with `scripts/eval-lm.sh\n"
    text += f"--context-window {args.context_window}` (fairseq-eval-lm) on the full valid and "
    text += "test subsets.\n\n"
    text += (
        "| System | Arch | Config | Params | Updates | Train wall (s) | Train CPU (s) "
        "| Train tokens/s | Valid ppl | Test ppl |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    text += "".join(row + "\n" for row in rows) + "\n"
    if curves:
        text += f"![validation perplexity vs epoch and updates]({curves})\n\n"
    text += compare.report_commands(out, [(n, f"{out}/{n}/commands.txt") for n in names])
    Path(out, "REPORT.md").write_text(text)
    compare.report_done(prog, "lm", out, args.doc, args.smoke)
    return 0
