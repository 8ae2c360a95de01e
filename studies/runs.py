"""What the experiment drivers share: one-line usage errors, seeds and budgets, the resume state
of a run folder, locks, the time pieces of a resumed run, the results CSV and atomic data
preparation. Pure Python (the standard library only); the drivers call fairseq's tools and the
pipeline scripts as subprocesses.
"""

import argparse
import csv
import datetime
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from plugin_tools.cli import OneLineParser

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


# ---------------------------------------------------------------------------- errors and options


class ExperimentError(Exception):
    """A usage error or a failed step: the driver prints `PROG: MESSAGE` (one line), exits 2."""


class Parser(OneLineParser):
    """The project's parser with the drivers' conventions: --help prints the driver's own usage
    text, and an error is one line `PROG: MESSAGE` with exit status 2 (via ExperimentError; the
    messages the drivers' shell versions printed)."""

    def __init__(self, usage_text, **kwargs):
        super().__init__(add_help=False, allow_abbrev=False, **kwargs)
        self.usage_text = usage_text
        self.add_argument("-h", "--help", action=_PrintUsage, nargs=0)

    def format_help(self):
        return self.usage_text

    def error(self, message):
        missing = re.fullmatch(r"argument (\S+?)(?:/\S+)?: expected one argument", message)
        if missing:
            message = f"{missing.group(1)} needs a value"
        unknown = re.fullmatch(r"unrecognized arguments: (.*)", message)
        if unknown:
            message = f"unknown option {unknown.group(1)} (see --help)"
        raise ExperimentError(message)

    def parse_with_extra(self, argv):
        """Parse ARGV up to a `--`; the arguments after it are returned as `extra` (they go to
        fairseq-train last)."""
        argv = list(argv)
        extra = []
        if "--" in argv:
            i = argv.index("--")
            argv, extra = argv[:i], argv[i + 1 :]
        args = self.parse_intermixed_args(argv)
        args.extra = extra
        return args


class _PrintUsage(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(parser.format_help())
        parser.exit(0)


def check_positive(value, flag):
    """VALUE (a string or None: not given) as a positive integer, else the one-line error."""
    if value is None:
        return None
    if not re.fullmatch(r"[0-9]+", str(value)) or int(value) < 1:
        raise ExperimentError(f"{flag} {value}: not a positive integer")
    return int(value)


def check_choice(value, flag, choices, how="choose"):
    if value is not None and value not in choices:
        listed = " or ".join(choices) if len(choices) == 2 else "from " + ", ".join(choices)
        raise ExperimentError(f"{flag} {value}: {how} {listed}")
    return value


def check_common_run_options(args):
    """The options compgen-run and cogs-tagging-run share: seeds, budget, lr, raw dir, row."""
    args.seeds = check_positive(args.seeds, "--seeds")
    args.seed = check_positive(args.seed, "--seed")
    args.max_update = check_positive(args.max_update, "--max-update")
    args.epochs = check_positive(args.epochs, "--epochs")
    if args.warmup is not None and not re.fullmatch(r"[0-9]+", args.warmup):
        raise ExperimentError(f"--warmup {args.warmup}: not an integer")
    check_choice(args.report_checkpoint, "--report-checkpoint", ("best", "last"))
    if args.lr is not None and not re.fullmatch(r"[0-9.eE+-]+", args.lr):
        raise ExperimentError(f"--lr {args.lr}: not a number")
    if args.raw_dir is not None and not os.path.isdir(args.raw_dir):
        raise ExperimentError(f"--raw-dir {args.raw_dir}: not a directory")
    if args.grid_row is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.grid_row):
        raise ExperimentError(f"--grid-row {args.grid_row}: letters, digits, _ . - only")


def add_common_run_options(parser, max_update, out, csv_path):
    """The options compgen-run and cogs-tagging-run share (validated by check_common_run_options)."""
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--seed")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--out", default=str(ROOT / out))
    parser.add_argument("--csv", default=str(ROOT / csv_path))
    parser.add_argument("--max-update", default=str(max_update))
    parser.add_argument("--epochs")
    parser.add_argument("--report-checkpoint", default="best")
    parser.add_argument("--lr")
    parser.add_argument("--warmup")
    parser.add_argument("--raw-dir")
    parser.add_argument("--grid-row")


def add_archive_options(parser):
    """--archive DIR | --no-archive of the studies (resolved by archive_folder)."""
    parser.add_argument("--archive")
    parser.add_argument("--no-archive", action="store_true")


def archive_folder(args, default):
    """The run archive a study keeps and restores its runs in: --archive (the caller's path,
    resolved before the study moves to the checkout), else DEFAULT (relative to the checkout;
    None: no archive), or None with --no-archive."""
    if args.archive and args.no_archive:
        raise ExperimentError("--archive and --no-archive: choose one")
    if args.archive:
        return Path(args.archive).resolve()
    return None if args.no_archive or default is None else ROOT / default


def say(prog, message):
    print(f"{prog}: {message}", file=sys.stderr, flush=True)


def main_of(prog, body, argv):
    """Run BODY(ARGV) as the program PROG: an ExperimentError is the one line `PROG: MESSAGE` and
    exit status 2; Ctrl-C exits 130 and SIGTERM 143, after the `finally` clauses (a run's time
    piece is recorded) have run."""

    def terminated(signum, frame):
        raise SystemExit(143)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        return body(argv) or 0
    except ExperimentError as e:
        print(f"{prog}: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def use_venv():
    """The project's venv first on PATH (fairseq's tools), when it exists and is not there yet."""
    venv = ROOT / ".venv" / "bin"
    path = os.environ.get("PATH", "")
    if venv.is_dir() and str(venv) not in path.split(os.pathsep):
        os.environ["PATH"] = f"{venv}{os.pathsep}{path}"


def tool_environment(threads=None):
    """The environment of the drivers' subprocesses: the project's venv first on PATH (fairseq's
    tools) and OMP_NUM_THREADS (THREADS, else the caller's, else 1)."""
    use_venv()
    if threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return os.environ["OMP_NUM_THREADS"]


def require_tool(name):
    if shutil.which(name) is None:
        raise ExperimentError(f"{name} not found (run scripts/setup.sh)")


def check_arch(arch, *check_args):
    """Fail fast on an unknown --arch (fairseq-train says so only after data preparation)."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "check-arch.py"), arch, *check_args],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        raise ExperimentError(lines[-1] if lines else f"check-arch.py {arch} failed")


# ----------------------------------------------------------------------------- seeds and budgets


def seed_range(seeds, only_seed):
    """--seed S alone, or 1..--seeds."""
    return [only_seed] if only_seed is not None else list(range(1, seeds + 1))


def noam_lr(d_model):
    """The paper's peak learning rate: d^-0.5 * 4000^-0.5 (the Noam schedule's), as text."""
    return f"{d_model**-0.5 * 4000**-0.5:.6g}"


def training_budget(n_train, max_update, epochs, warmup):
    """(max_update, warmup): --epochs N is N * floor(N_TRAIN / 64) updates (the authors' loader
    drops the last partial batch); without --warmup, the paper's 4000 scaled down for short runs
    (max_update / 10, at least 1)."""
    if epochs is not None:
        max_update = epochs * (n_train // 64)
        if max_update < 1:
            raise ExperimentError(
                f"--epochs {epochs}: {n_train} training examples make no full batch of 64"
            )
    if warmup is None:
        warmup = max(1, min(max_update // 10, 4000))
    return max_update, int(warmup)


def line_count(path):
    """Lines of a file as `wc -l` counts them (newline characters)."""
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


# ------------------------------------------------------------------------------------ locks


class FileLock:
    """An exclusive flock(2) on PATH (interoperates with util-linux flock(1)). Its file
    descriptor can be handed to a subprocess (pass_fds) so that the lock outlives this process
    while the subprocess runs."""

    def __init__(self, path):
        self.path = Path(path)
        self.file = None

    def acquire(self, blocking=True):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.path, "w")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            self.release()
            return False
        return True

    def fileno(self):
        return self.file.fileno()

    def release(self):
        if self.file is not None:
            self.file.close()
            self.file = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()


# ------------------------------------------------------------------------- data preparation


def raw_dir_key(raw_dir):
    """A hash of every file under RAW_DIR (links followed): `find -L . -type f | LC_ALL=C sort |
    xargs sha256sum | sha256sum`, so that keys written by the shell drivers still match."""
    raw_dir = Path(raw_dir)
    names = []
    for dirpath, _, files in os.walk(raw_dir, followlinks=True):
        rel = os.path.relpath(dirpath, raw_dir)
        for name in files:
            if (Path(dirpath) / name).is_file():
                names.append("./" + name if rel == "." else f"./{rel}/{name}")
    listing = []
    for name in sorted(names, key=os.fsencode):
        digest = hashlib.sha256((raw_dir / name).read_bytes()).hexdigest()
        listing.append(f"{digest}  {name}\n")
    return hashlib.sha256("".join(listing).encode()).hexdigest()


def prepare_once(dest, marker, build, lock_path, key=""):
    """Make DEST with BUILD(TMP) unless DEST/MARKER exists and DEST was built from KEY (a
    raw_dir_key, "" for none). Built in DEST.partial and renamed when complete, so an interrupted
    preparation leaves nothing that looks finished; under LOCK_PATH, so that drivers running at
    once prepare it once (the others wait). Returns True when it built DEST."""
    dest = Path(dest)
    with FileLock(lock_path):
        key_file = dest / "raw-dir.key"
        old_key = key_file.read_text().strip() if key_file.is_file() else ""
        if (dest / marker).is_file() and old_key == key:
            return False
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        build(tmp)
        if key:
            (tmp / "raw-dir.key").write_text(key + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        return True


# ----------------------------------------------------------------------------- the results CSV


class HeaderError(ExperimentError):
    pass


def append_rows(path, header, rows):
    """Append ROWS (lists of cells) to the CSV at PATH under HEADER. A new or empty file gets the
    header first. A file whose header is a prefix of HEADER (written before the later columns
    existed) is first rewritten, atomically, with the new header and those columns empty; any
    other header raises HeaderError."""
    path = str(path)
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    if not new:
        with open(path, newline="") as f:
            old = list(csv.reader(f))
        if old[0] != header:
            if old[0] != header[: len(old[0])]:
                raise HeaderError(
                    f"{path}: header {','.join(old[0])} is not the expected {','.join(header)}"
                )
            tmp = path + ".tmp"
            with open(tmp, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(header)
                for r in old[1:]:
                    w.writerow(r + [""] * (len(header) - len(r)))
            os.replace(tmp, path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        w.writerows(rows)


def read_rows(path):
    """The rows of a results CSV as dicts ([] when it does not exist or is empty)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def refresh_kept_csv(path, header, key, fresh, keep, order):
    """The rows of a CSV kept from run folders that may be gone: PATH's rows updated with FRESH
    (rows read from the run folders on this machine; KEY(row) identifies a row), those for which
    KEEP(row) holds (the runs still recorded), sorted by ORDER; written back atomically under
    HEADER when there are any, so that a committed CSV renders its tables on a machine without
    the run folders."""
    kept = {key(r): r for r in read_rows(path)}
    kept.update((key(r), r) for r in fresh)
    out = sorted((r for r in kept.values() if keep(r)), key=order)
    if out:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            w.writerows(out)
        tmp.replace(p)
    return out


def done_cells(path):
    """{(preset, task, seed)} of the rows of a results CSV (a grid's finished cells)."""
    return {(r["preset"], r["task"], r["seed"]) for r in read_rows(path)}


def now():
    """The CSV's date: local time, to the second."""
    return datetime.datetime.now().isoformat(timespec="seconds")


# --------------------------------------------------------------------- one seed of a run driver


class TimePiece:
    """Wall and CPU time of a run, summed over the pieces of an interrupted and resumed run:
    every piece (also one ended by an exception, Ctrl-C or SIGTERM) appends its seconds to
    DIR/wall.pieces and DIR/cpu.pieces. CPU: user + system time of this process's children
    (fairseq's tools, the scoring scripts), which unlike the wall time does not grow when other
    jobs share the CPU.

    A piece killed without a chance to record itself (SIGKILL, the machine or the login going away)
    would lose its time, and a resumed run would then report only its last piece. So while a
    piece runs, a heartbeat rewrites DIR/time.open every HEARTBEAT seconds with the piece's time
    so far (the CPU of the running children read from /proc, where there is one), and the next
    piece of the run folds a leftover time.open into the pieces: a kill loses at most one
    heartbeat interval."""

    HEARTBEAT = 30.0
    OPEN = "time.open"

    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)

    @staticmethod
    def children_cpu():
        t = os.times()
        return t.children_user + t.children_system

    @staticmethod
    def running_descendants_cpu():
        """CPU seconds so far of this process's running descendants (and of their own finished
        children), from /proc; 0 where there is no /proc."""
        stats = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                # after the command name: state, ppid, ..., utime stime cutime cstime (14-17)
                fields = stat.read_text().rsplit(")", 1)[1].split()
                stats[int(stat.parent.name)] = (int(fields[1]), sum(map(int, fields[11:15])))
            except (OSError, IndexError, ValueError):
                continue  # the process ended while we read
        children = {}
        for pid, (ppid, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        ticks, todo = 0, list(children.get(os.getpid(), ()))
        while todo:
            pid = todo.pop()
            ticks += stats[pid][1]
            todo += children.get(pid, ())
        return ticks / os.sysconf("SC_CLK_TCK") if ticks else 0.0

    def _so_far(self):
        return (
            time.time() - self.wall,
            self.children_cpu() - self.cpu + self.running_descendants_cpu(),
        )

    def _record(self, wall, cpu):
        with open(self.run_dir / "wall.pieces", "a") as f:
            f.write(f"{wall:.1f}\n")
        with open(self.run_dir / "cpu.pieces", "a") as f:
            f.write(f"{cpu:.1f}\n")

    def _heartbeat(self, stop):
        while not stop.wait(self.HEARTBEAT):
            tmp = self.run_dir / (self.OPEN + ".tmp")
            wall, cpu = self._so_far()
            try:  # written whole, then renamed: a kill never leaves half a line
                tmp.write_text(f"{wall:.1f} {cpu:.1f}\n")
                os.replace(tmp, self.run_dir / self.OPEN)
            except OSError:
                pass  # the run folder went away: nothing to keep

    def __enter__(self):
        left_open = self.run_dir / self.OPEN
        if left_open.is_file():  # the last piece was killed: its last heartbeat is its time
            self._record(*map(float, left_open.read_text().split()))
            left_open.unlink()
        self.wall, self.cpu = time.time(), self.children_cpu()
        self._stop = threading.Event()
        self._beating = threading.Thread(target=self._heartbeat, args=(self._stop,), daemon=True)
        self._beating.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._beating.join()  # no heartbeat may rewrite time.open after it is removed
        if self.run_dir.is_dir():
            self._record(time.time() - self.wall, self.children_cpu() - self.cpu)
            (self.run_dir / self.OPEN).unlink(missing_ok=True)

    def totals(self):
        """(wall, cpu) seconds over all pieces, as the CSV's text."""
        return tuple(
            f"{sum(float(x) for x in (self.run_dir / name).read_text().split()):.1f}"
            for name in ("wall.pieces", "cpu.pieces")
        )


TIMED_USAGE = """Usage: scripts/experiment.py timed DIR -- COMMAND [ARGS...]

Runs COMMAND as one time piece of the run folder DIR: its wall and CPU seconds are appended to
DIR/wall.pieces and DIR/cpu.pieces (see TimePiece: a piece killed without recording itself is
folded in by the next one, from its heartbeat). Exits with COMMAND's status. (The drivers time
their training in-process with the same TimePiece; this is for a command of one's own.)
"""


def main_timed(argv, prog, usage):
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(TIMED_USAGE)
        return 0
    if len(argv) < 3 or argv[1] != "--":
        raise ExperimentError("usage: timed DIR -- COMMAND [ARGS...] (see --help)")
    run_dir = Path(argv[0])
    if not run_dir.is_dir():
        raise ExperimentError(f"no run folder {run_dir}")
    with TimePiece(run_dir):
        try:
            return subprocess.call(argv[2:])
        except OSError as e:
            raise ExperimentError(f"cannot run {argv[2]}: {e.strerror}") from None


def start_seed(prog, label, seed, run_dir, resume, recorded_in, max_update):
    """The resume state of one seed's run folder. Returns None when the seed is in a CSV
    (RECORDED_IN: that CSV's path, else None; with --resume: skipped); otherwise makes RUN_DIR (afresh without --resume) and
    returns whether it needs training (False: a resumed run whose training had finished, only
    evaluated; an interrupted one continues from its checkpoint_last.pt)."""
    run_dir = Path(run_dir)
    if resume and recorded_in:
        say(prog, f"{label} seed {seed}: already in {recorded_in}, skipped")
        return None
    if not resume:
        shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    if resume and (run_dir / ".trained").is_file():
        say(prog, f"{label} seed {seed}: training already finished, evaluating")
        return False
    last = run_dir / "checkpoints" / "checkpoint_last.pt"
    if last.is_file():
        say(prog, f"{label} seed {seed}: resuming from {last}")
    else:
        say(prog, f"{label} seed {seed}: training ({max_update} updates) -> {run_dir}")
    return True


def train_seed(data, run_dir, options, lr, warmup, max_update, seed, extra):
    """fairseq-train DATA with OPTIONS (task, criterion, arch) and the paper's recipe: Adam (0.9,
    0.98, 1e-9), inverse_sqrt from 1e-7 to LR after WARMUP, dropout 0.1, 64 sentences a batch,
    best checkpoint by valid accuracy; EXTRA last (it wins). Appends to RUN_DIR/train.log; marks
    RUN_DIR/.trained."""
    run_dir = Path(run_dir)
    cmd = ["fairseq-train", str(data), "--user-dir", str(ROOT / "fairseq_plugins"), *options]
    cmd += ["--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--adam-eps", "1e-9"]
    cmd += ["--lr", lr, "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(warmup)]
    cmd += ["--warmup-init-lr", "1e-7", "--dropout", "0.1", "--batch-size", "64"]
    cmd += ["--required-batch-size-multiple", "1", "--max-update", str(max_update)]
    cmd += ["--seed", str(seed), "--best-checkpoint-metric", "accuracy"]
    cmd += ["--maximize-best-checkpoint-metric", "--save-dir", str(run_dir / "checkpoints")]
    cmd += ["--no-epoch-checkpoints", "--log-format", "simple", "--log-interval", "100", *extra]
    run_logged(cmd, run_dir / "train.log", "fairseq-train", append=True)
    (run_dir / ".trained").touch()


def run_logged(cmd, log, what, append=False, stdout=None):
    """Run CMD with its stderr (and stdout, unless STDOUT is a path) into LOG; a failure is the
    one-line error `WHAT failed, see LOG`."""
    with open(log, "a" if append else "w") as err:
        out = open(stdout, "w") if stdout else err
        try:
            # close_fds=False: a grid's cell lock, handed to this driver, stays held by the tools
            # too (were the driver killed, the cell would still be locked while they run).
            proc = subprocess.run([str(c) for c in cmd], stdout=out, stderr=err, close_fds=False)
        finally:
            if stdout:
                out.close()
    if proc.returncode != 0:
        raise ExperimentError(f"{what} failed, see {log}")


def trained_updates(run_dir):
    """The last num_updates logged in RUN_DIR/train.log (0 when none); checks that training
    left a best checkpoint."""
    run_dir = Path(run_dir)
    found = re.findall(r"num_updates (\d+)", (run_dir / "train.log").read_text(errors="replace"))
    if not (run_dir / "checkpoints" / "checkpoint_best.pt").is_file():
        raise ExperimentError(f"no checkpoint_best.pt after training, see {run_dir}/train.log")
    return found[-1] if found else "0"


def evaluated_checkpoints(run_dir, report_checkpoint):
    """[(name, file suffix)] of the checkpoints evaluated after training: best (its files keep
    their names), and last (files with a -last suffix) with --report-checkpoint last; each
    checked to exist."""
    which = [("best", "")] + ([("last", "-last")] if report_checkpoint == "last" else [])
    for name, _ in which:
        if not (Path(run_dir) / "checkpoints" / f"checkpoint_{name}.pt").is_file():
            raise ExperimentError(
                f"no checkpoint_{name}.pt after training, see {run_dir}/train.log"
            )
    return which


def run_seeds(prog, label, args, max_update, run_dir_of, recorded, train, evaluate, finish):
    """The seed loop of the run drivers. For every seed of --seeds / --seed: the run folder
    RUN_DIR_OF(seed) and its resume state (start_seed; RECORDED(seed): the CSV holding the seed,
    or None), then in one time piece TRAIN(seed, run_dir) when it needs training and
    EVALUATE(run_dir, which, suffix) of every evaluated checkpoint; then FINISH(seed, run_dir,
    updates, {which: result}, wall, cpu) records the seed."""
    for seed in seed_range(args.seeds, args.seed):
        run_dir = Path(run_dir_of(seed))
        need_training = start_seed(
            prog, label, seed, run_dir, args.resume, recorded(seed), max_update
        )
        if need_training is None:
            continue
        piece = TimePiece(run_dir)
        with piece:
            if need_training:
                train(seed, run_dir)
            updates = trained_updates(run_dir)
            results = {
                which: evaluate(run_dir, which, suffix)
                for which, suffix in evaluated_checkpoints(run_dir, args.report_checkpoint)
            }
        finish(seed, run_dir, updates, results, *piece.totals())
