"""The experiment drivers' shared layer (studies/runs.py) and the program's front
door: results CSV, locks, resume state, time pieces, seeds and budgets, atomic preparation,
one-line usage errors. No fairseq, no training."""

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT

from studies import runs
from studies.runs import ExperimentError

EXPERIMENT = ROOT / "scripts" / "experiment.py"
HEADER = ["preset", "task", "seed", "accuracy", "threads"]


def test_csv_new_file_append_and_header_upgrade(tmp_path):
    path = tmp_path / "r.csv"
    runs.append_rows(path, HEADER[:3], [["a", "add", 1]])
    runs.append_rows(path, HEADER[:3], [["a", "add", 2]])
    assert path.read_bytes() == b"preset,task,seed\r\na,add,1\r\na,add,2\r\n"  # as before
    # A CSV written before the later columns existed gains them, empty, then the new row.
    runs.append_rows(path, HEADER, [["b", "dup", 1, "0.500000", 1]])
    rows = runs.read_rows(path)
    assert [list(r.values()) for r in rows] == [
        ["a", "add", "1", "", ""],
        ["a", "add", "2", "", ""],
        ["b", "dup", "1", "0.500000", "1"],
    ]
    assert runs.done_cells(path) == {("a", "add", "1"), ("a", "add", "2"), ("b", "dup", "1")}
    assert not (tmp_path / "r.csv.tmp").exists()
    with pytest.raises(runs.HeaderError, match="is not the expected"):
        runs.append_rows(path, ["other"] + HEADER, [["x"] * 6])
    assert len(runs.read_rows(path)) == 3  # left as it was
    assert runs.read_rows(tmp_path / "none.csv") == [] and runs.done_cells(tmp_path / "x") == set()


HOLD = """import fcntl, sys, time
f = open(sys.argv[1], "w")
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("got", flush=True)
except BlockingIOError:
    print("busy", flush=True)
"""


def other_process_gets(lock_path):
    """Can a separate process take the lock now (flock is per open file, so test from outside)?"""
    out = subprocess.run([sys.executable, "-c", HOLD, str(lock_path)], capture_output=True)
    return out.stdout.decode().strip() == "got"


def test_lock_excludes_other_processes_and_outlives_us_in_a_child(tmp_path):
    path = tmp_path / "locks" / "cell.lock"
    lock = runs.FileLock(path)
    assert lock.acquire(blocking=False) and not other_process_gets(path)
    # Handed to a subprocess (as the grid hands a cell's lock to its run), the lock stays held
    # after we let go, until the subprocess ends.
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(1.5)"], pass_fds=(lock.fileno(),)
    )
    lock.release()
    assert not other_process_gets(path)
    child.wait()
    assert other_process_gets(path)
    with runs.FileLock(path):
        assert not other_process_gets(path)
        second = runs.FileLock(path)
        assert not second.acquire(blocking=False) and second.file is None
    assert other_process_gets(path)


def test_a_killed_driver_leaves_the_cell_locked_while_its_tools_run(tmp_path):
    """The grid hands a cell's lock to the run driver, whose tools (run_logged) inherit it: if
    the driver dies, the cell stays locked until fairseq-train & co. have ended."""
    path = tmp_path / "cell.lock"
    lock = runs.FileLock(path)
    assert lock.acquire(blocking=False)
    code = (
        "import sys; from studies import runs\n"
        "runs.run_logged(['sleep', '2'], sys.argv[1], 'sleep')"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "tool.log")], pass_fds=(lock.fileno(),)
    )
    lock.release()
    time.sleep(0.7)  # the tool has started
    driver.kill()
    driver.wait()
    assert not other_process_gets(path)  # the orphaned tool still holds it
    time.sleep(2)
    assert other_process_gets(path)


def test_time_pieces_sum_over_pieces_and_count_children_cpu(tmp_path):
    piece = runs.TimePiece(tmp_path)
    with piece:
        busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
        subprocess.run([sys.executable, "-c", busy], check=True)
    with pytest.raises(KeyboardInterrupt), piece:  # an interrupted piece is recorded too
        time.sleep(0.15)
        raise KeyboardInterrupt
    wall = [float(x) for x in (tmp_path / "wall.pieces").read_text().split()]
    cpu = [float(x) for x in (tmp_path / "cpu.pieces").read_text().split()]
    assert len(wall) == len(cpu) == 2 and wall[0] >= 0.3 and wall[1] >= 0.1
    assert cpu[0] >= 0.25 and cpu[1] == 0.0  # the second piece ran no child
    assert piece.totals() == (f"{sum(wall):.1f}", f"{sum(cpu):.1f}")


def test_time_piece_killed_without_recording_is_folded_into_the_next(tmp_path):
    """A piece killed by SIGKILL (a session or machine going away) cannot record itself; its
    heartbeat (time.open) has its time so far, CPU of the running child included, and the next
    piece of the run folds it in."""
    killed = (
        "import subprocess, sys, time\n"
        "from studies import runs\n"
        "runs.TimePiece.HEARTBEAT = 0.2\n"
        "busy = 'import time\\nt = time.process_time()\\nwhile True: pass'\n"
        f"with runs.TimePiece({str(tmp_path)!r}):\n"
        "    subprocess.Popen([sys.executable, '-c', busy])\n"
        "    time.sleep(60)\n"
    )
    driver = subprocess.Popen([sys.executable, "-c", killed], cwd=ROOT, start_new_session=True)
    left_open = tmp_path / runs.TimePiece.OPEN
    deadline = time.time() + 30
    while time.time() < deadline and not (
        left_open.is_file() and float(left_open.read_text().split()[1]) >= 0.5
    ):
        time.sleep(0.1)
    os.killpg(driver.pid, signal.SIGKILL)  # the driver and its busy child, with no clean-up
    driver.wait()
    assert left_open.is_file() and not (tmp_path / "cpu.pieces").exists()
    with runs.TimePiece(tmp_path) as piece:
        pass
    wall = [float(x) for x in (tmp_path / "wall.pieces").read_text().split()]
    cpu = [float(x) for x in (tmp_path / "cpu.pieces").read_text().split()]
    assert len(wall) == len(cpu) == 2  # the killed piece, then this one
    assert wall[0] >= 0.5 and cpu[0] >= 0.5  # the busy child's CPU, read while it ran
    assert wall[1] < 5 and cpu[1] == 0.0
    assert not left_open.exists()
    assert piece.totals() == (f"{sum(wall):.1f}", f"{sum(cpu):.1f}")


def test_start_seed_resume_states(tmp_path, capsys):
    run_dir = tmp_path / "seed1"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "old.txt").touch()

    def start(resume, recorded_in=None):
        got = runs.start_seed("prog", "p t", 1, run_dir, resume, recorded_in, 50)
        return got, capsys.readouterr().err.strip()

    assert start(True, "r.csv") == (None, "prog: p t seed 1: already in r.csv, skipped")
    assert (run_dir / "old.txt").exists()  # skipped: untouched
    assert start(False, "r.csv") == (True, f"prog: p t seed 1: training (50 updates) -> {run_dir}")
    assert not (run_dir / "old.txt").exists()  # without --resume: afresh
    (run_dir / "checkpoints").mkdir()
    (run_dir / "checkpoints" / "checkpoint_last.pt").touch()
    got, said = start(True)
    assert got is True and said.endswith(f"resuming from {run_dir}/checkpoints/checkpoint_last.pt")
    (run_dir / ".trained").touch()
    assert start(True) == (False, "prog: p t seed 1: training already finished, evaluating")


def test_trained_updates_and_evaluated_checkpoints(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "train.log").write_text("| num_updates 100 | x\n| num_updates 132 | y\n")
    with pytest.raises(ExperimentError, match="no checkpoint_best.pt after training"):
        runs.trained_updates(tmp_path)
    (tmp_path / "checkpoints" / "checkpoint_best.pt").touch()
    assert runs.trained_updates(tmp_path) == "132"
    assert runs.evaluated_checkpoints(tmp_path, "best") == [("best", "")]
    with pytest.raises(ExperimentError, match="no checkpoint_last.pt"):
        runs.evaluated_checkpoints(tmp_path, "last")
    (tmp_path / "checkpoints" / "checkpoint_last.pt").touch()
    assert runs.evaluated_checkpoints(tmp_path, "last") == [("best", ""), ("last", "-last")]


def test_seeds_budget_and_learning_rate():
    assert runs.seed_range(3, None) == [1, 2, 3] and runs.seed_range(3, 7) == [7]
    # --epochs: N * floor(n_train / 64); the warm-up: max_update / 10 up to 4000, at least 1
    assert runs.training_budget(24155, 6000, 16, None) == (16 * 377, 603)
    assert runs.training_budget(1000, 20000, None, None) == (20000, 2000)
    assert runs.training_budget(1000, 50000, None, None) == (50000, 4000)
    assert runs.training_budget(1000, 5, None, None) == (5, 1)
    assert runs.training_budget(1000, 60000, 2, "4000") == (30, 4000)
    with pytest.raises(ExperimentError, match="--epochs 1: 10 training examples make no full"):
        runs.training_budget(10, 100, 1, None)
    assert runs.noam_lr(64) == "0.00197642" and runs.noam_lr(128) == "0.00139754"


def test_raw_dir_key_is_the_shell_pipelines(tmp_path):
    raw = tmp_path / "raw"
    (raw / "sub dir").mkdir(parents=True)
    (raw / "b.txt").write_text("b\n")
    (raw / "a.txt").write_text("a\n")
    (raw / "sub dir" / "c.txt").write_text("c\n")
    (raw / "link.txt").symlink_to(raw / "a.txt")
    shell = subprocess.run(
        "find -L . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum",
        shell=True,
        cwd=raw,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    assert runs.raw_dir_key(raw) == shell
    (raw / "b.txt").write_text("B\n")
    assert runs.raw_dir_key(raw) != shell


def test_prepare_once_is_atomic_and_keyed(tmp_path):
    dest, lock = tmp_path / "data", tmp_path / "data.lock"
    built = []

    def build(tmp):
        built.append(tmp)
        tmp.mkdir()
        (tmp / "half").touch()
        if len(built) == 1:
            raise ExperimentError("interrupted")
        (tmp / "done").touch()

    with pytest.raises(ExperimentError):
        runs.prepare_once(dest, "done", build, lock)
    assert not dest.exists()  # nothing that looks finished
    assert runs.prepare_once(dest, "done", build, lock) is True
    assert (dest / "done").is_file() and not (tmp_path / "data.partial").exists()
    assert runs.prepare_once(dest, "done", build, lock) is False and len(built) == 2
    assert runs.prepare_once(dest, "done", build, lock, key="k1") is True  # other raw files
    assert (dest / "raw-dir.key").read_text() == "k1\n"
    assert runs.prepare_once(dest, "done", build, lock, key="k1") is False and len(built) == 3


def test_parser_errors_are_one_line():
    p = runs.Parser("Usage: x\n")
    p.add_argument("--value")
    p.add_argument("--flag", action="store_true")
    args = p.parse_with_extra(["--flag", "--value", "3", "--", "--cpu", "--seed", "1"])
    assert (args.flag, args.value, args.extra) == (True, "3", ["--cpu", "--seed", "1"])
    for argv, message in (
        (["--value"], "--value needs a value"),
        (["--bogus"], "unknown option --bogus (see --help)"),
        (["--val", "1"], "unknown option --val 1 (see --help)"),  # no abbreviations
    ):
        with pytest.raises(ExperimentError) as e:
            p.parse_with_extra(argv)
        assert str(e.value) == message
    with pytest.raises(ExperimentError, match="--seeds 0: not a positive integer"):
        runs.check_positive("0", "--seeds")
    with pytest.raises(ExperimentError, match="--budget x: choose short or paper"):
        runs.check_choice("x", "--budget", ("short", "paper"))


def test_timed_runs_a_command_as_one_time_piece(tmp_path):
    def timed(*argv):
        cmd = [sys.executable, EXPERIMENT, "timed", *map(str, argv)]
        return subprocess.run(cmd, capture_output=True, text=True)

    fails = timed(tmp_path, "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert fails.returncode == 3  # the command's status
    works = timed(tmp_path, "--", sys.executable, "-c", "print('out')")
    assert works.returncode == 0 and works.stdout == "out\n"
    assert len((tmp_path / "cpu.pieces").read_text().split()) == 2  # one piece per call
    assert timed(tmp_path, "true").stderr == (
        "timed: usage: timed DIR -- COMMAND [ARGS...] (see --help)\n"
    )
    nothing = timed(tmp_path, "--", tmp_path / "no-such-tool")
    assert nothing.returncode == 2
    assert (
        nothing.stderr == f"timed: cannot run {tmp_path}/no-such-tool: No such file or directory\n"
    )
    missing = timed(tmp_path / "nope", "--", "true")
    assert missing.returncode == 2 and missing.stderr == f"timed: no run folder {tmp_path}/nope\n"


def test_front_door_and_no_torch(tmp_path):
    proc = subprocess.run([sys.executable, EXPERIMENT, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for name in ("compgen-run", "cogs-tagging-run", "grid", "paper-variants", "report"):
        assert f"  {name} " in proc.stdout
    bad = subprocess.run([sys.executable, EXPERIMENT, "nope"], capture_output=True, text=True)
    assert (
        bad.returncode == 2
        and bad.stderr == "experiment.py: unknown subcommand nope (see --help)\n"
    )
    err = subprocess.run(
        [sys.executable, "-m", "studies", "grid", "--threads", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert err.returncode == 2 and err.stderr == "grid: --threads 0: not a positive integer\n"
    # The drivers import neither torch nor fairseq (they run them as subprocesses).
    code = (
        "import sys, importlib, pkgutil, studies as e\n"
        "for m in pkgutil.iter_modules(e.__path__):\n"
        "    if m.name != '__main__': importlib.import_module(f'{e.__name__}.{m.name}')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'fairseq')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
