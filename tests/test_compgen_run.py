"""scripts/compgen-run.sh end to end (tiny: Reverse --small, a few updates) and compgen-table.py."""

import csv
import json
import subprocess
import sys

import pytest
from conftest import ROOT, run

from plugin_tools import seq_accuracy as sa

RUN = ROOT / "scripts" / "compgen-run.sh"
TABLE = ROOT / "scripts" / "compgen-table.py"
ENV = {"OMP_NUM_THREADS": "1"}
PRESET = "compgen_rel2_eb_c"  # the paper's base configuration (relative positions + copy decoder)


def test_help_and_bad_flags(tmp_path):
    proc = run(["bash", RUN, "--help"], env=ENV)
    assert proc.stdout.startswith("Usage: scripts/compgen-run.sh PRESET TASK")
    for args, word in (
        ([PRESET, "reverse", "--bogus"], "--bogus"),
        ([PRESET], "PRESET and TASK"),
        ([PRESET, "reverse", "--seeds", "0"], "--seeds"),
        ([PRESET, "reverse", "--max-update"], "--max-update needs a value"),
        ([PRESET, "reverse", "--raw-dir", tmp_path / "none"], "--raw-dir"),
        ([PRESET, "reverse", "--epochs", "0"], "--epochs 0: not a positive integer"),
        ([PRESET, "reverse", "--report-checkpoint", "mid"], "choose best or last"),
        ([PRESET, "reverse", "--grid-row", "a/b"], "--grid-row a/b: letters"),
    ):
        proc = run(["bash", RUN, *args], env=ENV, check=False)
        assert proc.returncode != 0
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
        assert proc.stderr.startswith("compgen-run.sh: ") and word in proc.stderr


def test_unknown_arch_fails_before_data(tmp_path):
    proc = run(["bash", RUN, "no_such_arch", "reverse", "--out", tmp_path], env=ENV, check=False)
    assert proc.returncode != 0 and "unknown --arch no_such_arch" in proc.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_tiny_reverse_run_appends_a_scored_row(tmp_path):
    out, results = tmp_path / "out", tmp_path / "results.csv"
    run(
        ["bash", RUN, PRESET, "reverse", "--small", "--max-update", "12"]
        + ["--out", out, "--csv", results, "--", "--cpu", "--log-interval", "5"],
        env=ENV,
    )
    rows = list(csv.DictReader(results.open()))
    assert len(rows) == 1
    row = rows[0]
    assert (row["preset"], row["task"], row["seed"], row["split"]) == (
        PRESET,
        "reverse",
        "1",
        "test",
    )
    assert (row["updates"], row["n_test"], row["n_train"], row["beam"]) == (
        "12",
        "100",
        "1000",
        "1",
    )
    assert float(row["wall_seconds"]) > 0 and row["date"][:2] == "20"

    # The recorded accuracy is the exact-match score of the generated test set.
    run_dir = out / "runs" / PRESET / "reverse-small" / "seed1"
    hyps, _, _ = sa.parse_generate_output((run_dir / "generate.out").read_text().splitlines())
    refs = (out / "data" / "reverse-small-s1" / "raw" / "test.tgt").read_text().splitlines()
    assert len(hyps) == len(refs) == 100
    h, r = sa.align(hyps, dict(enumerate(refs)))
    expected = sa.score(h, r)["accuracy"]
    assert float(row["accuracy"]) == pytest.approx(expected, abs=1e-6)
    assert json.loads((run_dir / "accuracy.json").read_text())["accuracy"] == expected
    assert "accuracy" in (run_dir / "train.log").read_text()  # validation logged it

    # compgen-table renders the row (mean ± std over one run) and a chart.
    proc = subprocess.run(
        [sys.executable, TABLE, results, "--png", tmp_path / "chart.png"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| preset | Reverse | Avg. |"
    assert lines[2].startswith(f"| {PRESET} | **{expected:.3f} ± 0.000 (1)** |")
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_epochs_and_the_final_checkpoint(tmp_path):
    """The paper-budget options: --epochs N is N * floor(n_train / 64) updates; with
    --report-checkpoint last both checkpoints are decoded and the final one is the accuracy. A
    variant recorded as its own row (--grid-row), with the notebook's Keras initialisation."""
    out, results = tmp_path / "out", tmp_path / "results.csv"
    # A CSV written before the newer columns (threads onwards): its header gains them, empty.
    old_header = "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam"
    results.write_text(f"{old_header},extra_args\nx,add,1,9,0.5,1,d,test,1,1,1,\n")
    proc = run(
        ["bash", RUN, "compgen_abs", "reverse", "--small", "--epochs", "1"]
        + ["--grid-row", "abs_keras", "--report-checkpoint", "last"]
        + ["--out", out, "--csv", results, "--", "--cpu", "--validate-interval-updates", "5"]
        + ["--seq2seq-init", "official"],
        env=ENV,
    )
    old, row = list(csv.DictReader(results.open()))
    assert old["preset"] == "x" and old["threads"] == old["checkpoint"] == ""
    assert list(row)[-6:] == [
        "extra_args",
        "threads",
        "cpu_seconds",
        "checkpoint",
        "accuracy_best",
        "accuracy_last",
    ]
    assert row["updates"] == str(1000 // 64) == "15"
    assert row["preset"] == "abs_keras"
    assert row["extra_args"].startswith("--arch compgen_abs --cpu ")
    assert row["extra_args"].endswith(" --seq2seq-init official")
    run_dir = out / "runs" / "abs_keras" / "reverse-small" / "seed1"
    assert "seq2seq_init='official'" in (run_dir / "train.log").read_text()
    best = json.loads((run_dir / "accuracy.json").read_text())["accuracy"]
    last = json.loads((run_dir / "accuracy-last.json").read_text())["accuracy"]
    assert row["checkpoint"] == "last"
    assert float(row["accuracy"]) == float(row["accuracy_last"]) == pytest.approx(last, abs=1e-6)
    assert float(row["accuracy_best"]) == pytest.approx(best, abs=1e-6)
    assert (run_dir / "generate-last.out").read_text().count("\nH-") == 100
    assert "(last checkpoint)" in proc.stderr


def test_table_mean_std_order_and_mixed_sizes(tmp_path):
    path = tmp_path / "r.csv"
    head = (
        "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,extra_args\n"
    )
    path.write_text(
        head
        + "compgen_rel2_e,add,1,9,0.99,1,d,test,512,200000,1,\n"
        + "compgen_rel2_e,add,2,9,0.97,1,d,test,512,200000,1,\n"
        + "compgen_abs,cogs,1,9,0.30,1,d,gen,21000,24155,1,\n"
        + "compgen_abs,add,1,9,0.01,1,d,test,512,200000,1,\n"
    )
    proc = subprocess.run([sys.executable, TABLE, path], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| preset | Add | COGS | Avg. |"  # paper's column order
    assert lines[2] == "| compgen_abs | 0.010 ± 0.000 (1) | **0.300 ± 0.000 (1)** | 0.155 |"
    assert lines[3] == "| compgen_rel2_e | **0.980 ± 0.014 (2)** | – | 0.980 |"
    with path.open("a") as f:
        f.write("compgen_abs,add,2,9,0.5,1,d,test,100,1000,1,\n")
    proc = subprocess.run([sys.executable, TABLE, path], capture_output=True, text=True)
    assert proc.returncode != 0 and "mixes data sizes" in proc.stderr


@pytest.mark.slow
def test_resume_skips_recorded_and_only_evaluates_a_finished_training(tmp_path):
    out, results = tmp_path / "out", tmp_path / "results.csv"
    args = ["bash", RUN, PRESET, "reverse", "--small", "--max-update", "6", "--seed", "2"]
    args += ["--resume", "--out", out, "--csv", results, "--", "--cpu", "--log-interval", "2"]
    run(args, env=ENV)
    rows = list(csv.DictReader(results.open()))
    assert [(r["seed"], r["updates"], r["threads"]) for r in rows] == [("2", "6", "1")]
    assert float(rows[0]["cpu_seconds"]) > 1
    run_dir = out / "runs" / PRESET / "reverse-small" / "seed2"
    assert (run_dir / ".trained").is_file() and (out / "data" / "reverse-small-s1" / "bin").is_dir()
    assert not list((out / "data").glob("*.partial"))

    # Recorded: skipped without training again.
    proc = run(args, env=ENV)
    assert "already in" in proc.stderr and len(list(csv.DictReader(results.open()))) == 1

    # Trained but not recorded (stopped between training and the CSV): only evaluated.
    results.write_text(results.read_text().splitlines()[0] + "\n")
    log_size = (run_dir / "train.log").stat().st_size
    proc = run(args, env=ENV)
    assert "training already finished, evaluating" in proc.stderr
    assert (run_dir / "train.log").stat().st_size == log_size
    rows = list(csv.DictReader(results.open()))
    assert len(rows) == 1 and rows[0]["updates"] == "6"
    assert float(rows[0]["wall_seconds"]) > 0
    assert len((run_dir / "wall.pieces").read_text().split()) == 2  # wall summed over 2 pieces
    cpu = [float(x) for x in (run_dir / "cpu.pieces").read_text().split()]
    assert len(cpu) == 2 and cpu[0] > 1  # the first piece trained (CPU of fairseq-train)
    assert float(rows[0]["cpu_seconds"]) == pytest.approx(sum(cpu), abs=0.2)
