"""scripts/compgen-grid.sh (plan, options; no training) and scripts/compgen-grid-report.py."""

import csv
import importlib.util
import subprocess
import sys

from conftest import ROOT, run

GRID = ROOT / "scripts" / "compgen-grid.sh"
REPORT = ROOT / "scripts" / "compgen-grid-report.py"
ENV = {"OMP_NUM_THREADS": "1"}


def load_report():
    spec = importlib.util.spec_from_file_location("compgen_grid_report", REPORT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_help_and_one_line_errors(tmp_path):
    assert run(["bash", GRID, "--help"], env=ENV).stdout.startswith(
        "Usage: scripts/compgen-grid.sh"
    )
    for args, word in (
        (["--bogus"], "--bogus"),
        (["--threads", "0"], "--threads"),
        (["--max-runs"], "--max-runs needs a value"),
        (["--only-task", "nope", "--list"], "no cell matches"),
    ):
        proc = run(["bash", GRID, "--out", tmp_path, *args], env=ENV, check=False)
        assert proc.returncode != 0
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
        assert proc.stderr.startswith("compgen-grid.sh: ") and word in proc.stderr


def test_plan_order_seed_rounds_and_done_cells(tmp_path):
    results = tmp_path / "r.csv"
    results.write_text(
        "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,"
        "extra_args,threads\ncompgen_abs,add,1,9,0.5,1,d,test,512,200000,1,,1\n"
    )
    proc = run(["bash", GRID, "--list", "--out", tmp_path, "--csv", results], env=ENV)
    cells = [
        line.split()
        for line in proc.stdout.splitlines()
        if line.startswith("  ") and "seed " in line
    ]
    assert len(cells) == load_report().plan_total() == 153
    seeds = [int(c[2]) for c in cells]
    assert seeds == sorted(seeds) and seeds.count(3) == 27  # 3 rows with a third seed x 9 tasks
    assert cells[0] == ["done", "seed", "1", "add", "compgen_abs"]
    assert cells[1][0] == "todo" and "153 cells, 1 done" in proc.stdout
    assert not (tmp_path / "grid.lock").exists()  # --list starts nothing


def test_paper_rows_average_to_the_printed_avg():
    report = load_report()
    for preset, (values, avg) in report.PAPER.items():
        assert len(values) == 12
        assert abs(sum(values.values()) / 12 - avg) < 0.0006, preset


def test_report_renders_table_categories_and_chart(tmp_path):
    results = tmp_path / "r.csv"
    with results.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "preset",
                "task",
                "seed",
                "updates",
                "accuracy",
                "wall_seconds",
                "date",
                "split",
                "n_test",
                "n_train",
                "beam",
                "extra_args",
                "threads",
            ]
        )
        w.writerow(
            ["compgen_abs", "add", "1", "9", "0.25", "10", "d", "test", "512", "9", "1", "", "1"]
        )
        w.writerow(
            ["compgen_abs", "add", "2", "9", "0.75", "30", "d", "test", "512", "9", "1", "", "1"]
        )
        w.writerow(
            ["compgen_rel2_eb_c", "cogs", "1", "9", "0.5", "5", "d", "gen", "2", "9", "1", "", "1"]
        )
    runs = tmp_path / "runs" / "compgen_rel2_eb_c" / "cogs-te2" / "seed1"
    runs.mkdir(parents=True)
    (runs / "accuracy.json").write_text(
        '{"accuracy": 0.5, "correct": 1, "total": 2, "categories": '
        '{"obj_to_subj_common": {"accuracy": 1.0, "correct": 1, "total": 1}, '
        '"pp_recursion": {"accuracy": 0.0, "correct": 0, "total": 1}}}'
    )
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{load_report().BEGIN}\nold\n{load_report().END}\noutro\n")
    cats, png = tmp_path / "cats.csv", tmp_path / "t.png"
    proc = subprocess.run(
        [
            sys.executable,
            REPORT,
            "--csv",
            results,
            "--doc",
            doc,
            "--png",
            png,
            "--runs",
            tmp_path / "runs",
            "--categories",
            cats,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "\nold\n" not in text
    row = next(line for line in text.splitlines() if line.startswith("| abs<br>"))
    assert "**0.500 ± 0.354 (2)**<br>*paper 0.005*" in row and "pending" in row
    assert "no data<br>*paper 0.174*" in row
    assert "| pp_recursion | 0.000 | pending |" in text
    assert "| 2 | add | compgen_abs | 9 | 0.7500 | 30 | – | 1 | d |" in text
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert len(list(csv.DictReader(cats.open()))) == 2
    # Lost run folders keep their rows in the categories CSV.
    subprocess.run(
        [
            sys.executable,
            REPORT,
            "--csv",
            results,
            "--doc",
            doc,
            "--png",
            "",
            "--runs",
            tmp_path / "none",
            "--categories",
            cats,
        ],
        check=True,
    )
    assert len(list(csv.DictReader(cats.open()))) == 2
