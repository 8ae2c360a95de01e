"""What the comparison pipelines share (nmt_compare.py, scripts/compare-nmt.sh): their common
options, the configs (shell-variables files, read by sourcing them in a leaf bash), the commands
recorded as bash's `printf %q` writes them, the training log's figures, the time of a resumed
training, and the parts of OUT/REPORT.md. Pure Python; fairseq's tools and the pipeline scripts
run as subprocesses."""

import datetime
import os
import re
import subprocess
import sys
from pathlib import Path

from . import runs
from .runs import SCRIPTS, ExperimentError

# -------------------------------------------------------------------------------------- options


def add_compare_options(parser, out):
    """The options every comparison takes: CONFIG..., --out (default OUT), --doc, --smoke,
    --data, --train-args, --tensorboard, --skip-train."""
    parser.add_argument("configs", nargs="*")
    parser.add_argument("--out", default=out)
    parser.add_argument("--doc", default="")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--data", default="")
    parser.add_argument("--train-args")
    parser.add_argument("--tensorboard", action="store_true")
    parser.add_argument("--skip-train", action="store_true")


def parse_compare_options(parser, argv):
    """ARGV parsed, the comparison's way: --train-args takes the next argument whatever it is
    (e.g. "--max-update 50", or ""), and at least one CONFIG. `extra`: the words of
    --train-args."""
    argv = list(argv)
    for i, a in enumerate(argv[:-1]):
        if a == "--train-args":  # its value may start with a dash
            argv[i : i + 2] = [f"--train-args={argv[i + 1]}"]
            break
    args = parser.parse_intermixed_args(argv)
    for flag, value in (("--out", args.out), ("--doc", args.doc), ("--data", args.data)):
        if value == "" and flag in argv:
            raise ExperimentError(f"{flag} needs a value (see --help)")
    if not args.configs:
        raise ExperimentError("needs at least one CONFIG (see --help)")
    args.extra = (args.train_args or "").split()
    return args


# -------------------------------------------------------------------------------------- configs

# The leaf that reads a config: sources it (in bash, as the configs are written) and prints every
# variable NUL-terminated, an array as its length and its elements. A string TRAIN_ARGS/GEN_ARGS
# becomes the words of its first line, as `read -r -a` splits it.
_SOURCE = r"""
for v in "${@:2}"; do declare "$v="; done
TRAIN_ARGS=() GEN_ARGS=() SELECT_FROM=()
source "$1" >&2 || exit 3
for v in "${@:2}"; do printf '%s\0' "${!v}"; done
[[ "$(declare -p TRAIN_ARGS)" == "declare -a"* ]] || read -r -a TRAIN_ARGS <<<"$TRAIN_ARGS"
[[ "$(declare -p GEN_ARGS)" == "declare -a"* ]] || read -r -a GEN_ARGS <<<"$GEN_ARGS"
for a in TRAIN_ARGS GEN_ARGS SELECT_FROM; do
  declare -n arr=$a
  printf '%s\0' "${#arr[@]}"
  for x in ${arr[@]+"${arr[@]}"}; do printf '%s\0' "$x"; done
done
"""
SCALARS = ("NAME", "ARCH", "DATA", "SRC", "TGT", "BEAM", "LENPEN", "SELECT_EPOCHS")
ARRAYS = ("TRAIN_ARGS", "GEN_ARGS", "SELECT_FROM")


def source_config(path):
    """{variable: value} of the config PATH as bash sources it: the SCALARS (strings, "" when
    unset) and the ARRAYS (lists)."""
    if not os.path.isfile(path):
        raise ExperimentError(f"{path}: no such config file")
    proc = subprocess.run(
        ["bash", "-c", _SOURCE, "source-config", path, *SCALARS], stdout=subprocess.PIPE
    )
    if proc.returncode != 0:
        raise ExperimentError(f"{path}: could not be sourced")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    config = dict(zip(SCALARS, fields))
    rest = fields[len(SCALARS) :]
    for name in ARRAYS:
        n = int(rest[0])
        config[name], rest = rest[1 : n + 1], rest[n + 1 :]
    return config


def check_name(path, name):
    if not name:
        raise ExperimentError(f"{path}: does not set NAME")
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", name):
        raise ExperimentError(f"{path}: NAME '{name}' may only use letters, digits and ._+-")


def unique_names(configs, load):
    """The NAMEs of CONFIGS (LOAD(path) -> a config), each used once; every config loaded (and
    so checked) before any training."""
    names = []
    for path in configs:
        name = load(path)["NAME"]
        if name in names:
            raise ExperimentError(f"{path}: NAME '{name}' used twice")
        names.append(name)
    return names


def logical_cwd():
    """The working directory as bash's `pwd` names it (its $PWD when that is this directory)."""
    pwd = os.environ.get("PWD", "")
    try:
        if os.path.isabs(pwd) and os.path.samefile(pwd, "."):
            return pwd
    except OSError:
        pass
    return os.getcwd()


# ------------------------------------------------------------------------------------- commands


def shell_line(args):
    """ARGS as bash's `printf '%q ' ARGS; echo` writes them (the recorded commands; a leaf bash
    quotes them, so that they read exactly as before)."""
    proc = subprocess.run(
        ["bash", "-c", 'printf "%q " "$@"', "quote", *map(str, args)],
        stdout=subprocess.PIPE,
        check=True,
    )
    return proc.stdout.decode("utf-8", "surrogateescape") + "\n"


def write_invocation(out, argv0, argv):
    """OUT made, the command line (ARGV0 ARGV) into OUT/invocation.txt."""
    os.makedirs(out, exist_ok=True)
    Path(out, "invocation.txt").write_text(shell_line([argv0, *argv]))


def run_python(script, *args, **kwargs):
    """scripts/SCRIPT ARGS with this interpreter (the venv's); the CompletedProcess."""
    return subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)], **kwargs)


def newer(a, b):
    """bash's `[[ A -nt B ]]`: A exists and B does not, or A was modified after B."""
    if not os.path.exists(a):
        return False
    return not os.path.exists(b) or os.path.getmtime(a) > os.path.getmtime(b)


def tail(path, n):
    """The last N lines of PATH on stderr (`tail -n N PATH >&2`)."""
    if os.path.isfile(path):
        lines = Path(path).read_bytes().splitlines(keepends=True)[-n:]
        sys.stderr.buffer.write(b"".join(lines))
        sys.stderr.flush()


# ------------------------------------------------------------------------------------- training


def utc_now(fmt):
    return datetime.datetime.now(datetime.UTC).strftime(fmt)


def training_starts(prog, tag, run_dir, ckpt, arch):
    """Say that TAG's training starts, or resumes from CKPT/checkpoint_last.pt, on stderr and in
    RUN_DIR/train.log."""
    what = "training"
    if os.path.isfile(f"{ckpt}/checkpoint_last.pt"):
        what = "resuming from checkpoint_last.pt"
    runs.say(prog, f"[{tag}] {what} ({arch}) -> {run_dir}/train.log")
    with open(f"{run_dir}/train.log", "a") as f:
        f.write(f"{prog}: {what} at {utc_now('%Y-%m-%d %H:%M:%S UTC')}\n")


def timed(run_dir, cmd, **kwargs):
    """CMD as one time piece of RUN_DIR (runs.TimePiece: a resumed training reports the time of
    every attempt); its return code. close_fds=False: the run's lock stays held by the tool."""
    with runs.TimePiece(run_dir):
        return subprocess.run([str(c) for c in cmd], close_fds=False, **kwargs).returncode


def training_done(tag, run_dir, ckpt):
    """RUN_DIR/train.seconds (the wall and CPU seconds of every attempt), then RUN_DIR/train.done
    once CKPT/checkpoint_best.pt is there."""
    totals = []
    for name in ("wall.pieces", "cpu.pieces"):
        f = Path(run_dir, name)
        totals.append(sum(float(x) for x in f.read_text().split()) if f.is_file() else 0.0)
    Path(run_dir, "train.seconds").write_text(f"{totals[0]:.0f} {totals[1]:.0f}\n")
    if not os.path.isfile(f"{ckpt}/checkpoint_best.pt"):
        raise ExperimentError(f"[{tag}] no {ckpt}/checkpoint_best.pt after training")
    Path(run_dir, "train.done").touch()


# --------------------------------------------------------------------------- the training log


def log_params(text):
    """The model's parameter count in a fairseq-train log, else -."""
    found = re.search(r"num\. (?:shared )?model params: ([0-9,]+)", text)
    return found.group(1) if found and found.group(1) else "-"


def log_wps(text):
    """Words (tokens) per second of the training epochs of a fairseq-train log, averaged."""
    wps = [
        float(m)
        for line in text.splitlines()
        if re.search(r"\| train \| epoch", line)
        for m in re.findall(r"\| wps ([0-9.]+)", line)
    ]
    return f"{sum(wps) / len(wps):.0f}" if wps else "-"


def valid_lines(text):
    return [line for line in text.splitlines() if re.search(r"\| valid \|", line)]


def best_valid_loss(text):
    """The lowest validation loss of a fairseq-train log, as logged ("" if none)."""
    losses = [m for line in valid_lines(text) for m in re.findall(r"\| loss ([0-9.]+)", line)]
    return min(losses, key=lambda s: (float(s), s)) if losses else ""


class RunFigures:
    """A run's figures for the report: from RUN_DIR/train.seconds the wall and CPU `seconds`
    and `cpu` of its training ("-" without the file; CPU "" when it holds one number), from
    RUN_DIR/train.log (`log`, None when missing) the `params` and `wps` ("-" without the log)."""

    def __init__(self, run_dir):
        self.seconds = self.cpu = self.params = self.wps = "-"
        f = Path(run_dir, "train.seconds")
        if f.is_file():  # as `read -r seconds cpu < FILE`
            words = f.read_text().split("\n")[0].split()
            self.seconds, self.cpu = (words or [""])[0], " ".join(words[1:])
        log = Path(run_dir, "train.log")
        self.log, self.text = (
            (str(log), log.read_text(errors="replace")) if log.is_file() else (None, "")
        )
        if self.log:
            self.params, self.wps = log_params(self.text), log_wps(self.text)

    def updates(self, lines_pattern):
        """The num_updates of the last log line matching LINES_PATTERN ("-" if none)."""
        if not self.log:
            return "-"
        lines = [ln for ln in self.text.splitlines() if re.search(lines_pattern, ln)]
        return last_number(lines, r"num_updates ([0-9]+)")


def last_number(lines, pattern, strip_zeros=False):
    """The number of PATTERN (one group) in the last of LINES, else -."""
    if not lines:
        return "-"
    found = re.findall(pattern, lines[-1])
    if strip_zeros:
        found = [f.lstrip("0") for f in found]
    return "\n".join(found) or "-"


# --------------------------------------------------------------------------------- the report


def report_heading(usage, title, text):
    """The top of REPORT.md, its second paragraph starting with who wrote it when."""
    when = utc_now("%Y-%m-%d %H:%M UTC")
    return f"# {title}\n\nWritten by `{usage}` on {when}. {text}\n"


def report_commands(out, runs_commands):
    """REPORT.md's "Commands": the invocation, then every run's commands (RUNS_COMMANDS:
    [(heading, its commands.txt)])."""
    text = "## Commands\n\n```\n" + Path(out, "invocation.txt").read_text() + "```\n"
    for heading, path in runs_commands:
        text += f"\n### {heading}\n\n```\n" + Path(path).read_text() + "```\n"
    return text


def report_done(prog, kind, out, doc, smoke):
    """Say that OUT/REPORT.md is written; with DOC, scripts/study-report.py KIND writes it."""
    runs.say(prog, f"wrote {out}/REPORT.md")
    if not doc:
        return
    sys.stdout.flush()
    flags = ["--smoke"] if smoke else []
    if run_python("study-report.py", kind, out, "--doc", doc, *flags).returncode != 0:
        raise ExperimentError(f"could not write {doc} (scripts/study-report.py {kind} failed)")
    runs.say(prog, f"wrote {doc}")
