"""scripts/experiment.py run-archive: a finished run's files kept without its checkpoints, and
restored into a fresh folder (for studies that outlive one machine)."""

import gzip

import pytest
from conftest import ROOT, run

from studies import run_archive
from studies.runs import ExperimentError


def finished_run(d):
    (d / "checkpoints").mkdir(parents=True)
    (d / "checkpoints" / "checkpoint_best.pt").write_bytes(b"\0" * 100)
    (d / "train.log").write_text("".join(f"| epoch {i:03d} | loss 1.{i}\n" for i in range(3000)))
    (d / "train.seconds").write_text("10 8\n")
    (d / "run.lock").write_text("")
    (d / "time.open").write_text("1 1\n")
    (d / "generate.done").write_text("")
    return d


def test_save_keeps_the_run_files_only_and_restore_gives_them_back(tmp_path):
    run_dir = finished_run(tmp_path / "out" / "sys" / "seed1")
    kept = tmp_path / "kept" / "sys" / "seed1"
    run_archive.save(run_dir, kept)
    names = sorted(p.name for p in kept.iterdir())
    # big text gzipped; no checkpoints, locks or heartbeat
    assert names == ["generate.done", "train.log.gz", "train.seconds"]
    assert (
        gzip.decompress((kept / "train.log.gz").read_bytes())
        == (run_dir / "train.log").read_bytes()
    )
    first = {p.name: p.read_bytes() for p in kept.iterdir()}
    run_archive.save(run_dir, kept)  # saving again changes no byte (a clean git diff)
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == first

    fresh = tmp_path / "fresh" / "sys" / "seed1"
    fresh.mkdir(parents=True)
    (fresh / "train.log").write_text("an unfinished attempt\n")  # the finished run wins
    assert run_archive.restore(kept, fresh)
    for name in ("train.log", "train.seconds", "generate.done"):
        assert (fresh / name).read_bytes() == (run_dir / name).read_bytes()
    assert not (fresh / "checkpoints").exists()
    assert (fresh / "generate.done").stat().st_mtime_ns >= (fresh / "train.log").stat().st_mtime_ns


def test_save_replaces_an_older_archive_but_keeps_other_runs(tmp_path):
    run_dir = finished_run(tmp_path / "out" / "sys")
    kept = tmp_path / "kept" / "sys"
    (kept / "seed2").mkdir(parents=True)
    (kept / "seed2" / "generate.done").write_text("")
    (kept / "stale.txt").write_text("from an older run")
    run_archive.save(run_dir, kept)
    assert not (kept / "stale.txt").exists() and (kept / "seed2" / "generate.done").is_file()
    assert not (tmp_path / "kept" / "sys.saving").exists()


def test_command_line(tmp_path):
    run_dir = finished_run(tmp_path / "run")
    script = ROOT / "scripts" / "experiment.py"
    assert "restore ARCHIVE_DIR RUN_DIR" in run(["python", script, "run-archive", "--help"]).stdout
    run(["python", script, "run-archive", "save", run_dir, tmp_path / "kept"])
    run(["python", script, "run-archive", "restore", tmp_path / "kept", tmp_path / "back"])
    assert (tmp_path / "back" / "train.log").read_text() == (run_dir / "train.log").read_text()
    for argv, message in (
        (["restore", tmp_path / "nothing", tmp_path / "x"], "nothing archived in"),
        (["save", tmp_path / "missing", tmp_path / "y"], "no run folder"),
        (["copy", "a", "b"], "usage: run-archive save|restore"),
    ):
        proc = run(["python", script, "run-archive", *argv], check=False)
        assert proc.returncode == 2 and message in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    with pytest.raises(ExperimentError):
        run_archive.main(["save", str(tmp_path / "missing"), str(tmp_path / "z")])


def test_two_processes_restore_one_run_at_once(tmp_path):
    """The two processes of a study (one per core) may both restore a run before either holds
    its lock: both succeed and the files are whole."""
    import subprocess
    import sys

    run_dir = finished_run(tmp_path / "run")
    kept = tmp_path / "kept"
    run_archive.save(run_dir, kept)
    code = "import sys; from studies import run_archive as a; "
    code += "[a.restore(sys.argv[1], sys.argv[2]) for _ in range(20)]"
    for attempt in range(3):
        dest = tmp_path / f"fresh{attempt}"
        procs = [
            subprocess.Popen([sys.executable, "-c", code, str(kept), str(dest)], cwd=ROOT)
            for _ in range(2)
        ]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        assert (dest / "train.log").read_bytes() == (run_dir / "train.log").read_bytes()
        assert not list(dest.glob("*.tmp"))
