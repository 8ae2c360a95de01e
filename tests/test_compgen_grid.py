"""The grid (scripts/compgen-grid.sh = `experiment.py grid`: plan, options; no training) and its
report (scripts/compgen-grid-report.py = `experiment.py report compgen`)."""

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, run

from studies import grid_report
from studies.grid_plan import POSITION_ROWS

GRID = ROOT / "scripts" / "compgen-grid.sh"
REPORT = ROOT / "scripts" / "compgen-grid-report.py"
ENV = {"OMP_NUM_THREADS": "1"}
TAG_ARCH = {"compgen_abs": "cogs_tagging_base", "compgen_rel_eb": "cogs_tagging_rel_eb"}


def load_report():
    return grid_report


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
    # 7 rows x 9 seq2seq columns (17 row-seeds) + the tagging column without the two rel2 rows,
    # + the 7 position-scheme rows (6 and their baseline rel-eb-c) on their 6 columns, 3 seeds each
    assert len(cells) == load_report().plan_total() == 17 * 9 + 12 + 7 * 6 * 3 == 291
    new_rows = {c[4] for c in cells} - {
        "compgen_abs",
        "compgen_rel_eb",
        "compgen_rel2_eb",
        "compgen_rel2_eb_c",
        "compgen_small_2s",
        "compgen_comp_rel2_eb_c",
        "compgen_comp_rel2_eb_cs",
    }
    assert len(new_rows) == 7
    assert {c[3] for c in cells if c[4] in new_rows} == {
        "add",
        "addneg",
        "reverse",
        "dup",
        "scan-length",
        "cogs",
    }
    seeds = [int(c[2]) for c in cells]
    # 3 rows with a third seed (abs, rel2-eb-c, comp-rel2-eb-c) x 9 tasks, + the tagging of abs
    # and comp-rel2-eb-c (rel2-eb-c's is rel-eb's), + the 7 position-scheme rows x 6 columns
    assert seeds == sorted(seeds) and seeds.count(3) == 27 + 2 + 42
    assert cells[0] == ["done", "seed", "1", "add", "compgen_abs"]
    assert cells[1][0] == "todo" and "291 cells, 1 done" in proc.stdout
    assert not (tmp_path / "locks").exists()  # --list starts nothing
    # The tagging column comes right after cogs in every seed round, with the row's tagging arch.
    for seed in (1, 2, 3):
        tasks = [c[3] for c in cells if c[2] == str(seed)]
        first = tasks.index("cogs-tagging")
        assert tasks[first - 1] == "cogs" and set(tasks[first:]) == {"cogs-tagging"}
    tagging = {(c[2], c[4]): c[5:] for c in cells if c[3] == "cogs-tagging"}
    comp = ["--attention-type", "compositional", "--num-searches", "4", "--num-retrievals", "4"]
    assert tagging == {
        **{
            (s, "compgen_abs"): ["->", "cogs_tagging_base", "--tagging-init", "fairseq"]
            for s in "123"
        },
        **{(s, "compgen_rel_eb"): ["->", "cogs_tagging_rel_eb"] for s in "12"},
        **{(s, "compgen_small_2s"): ["->", "cogs_tagging_rel_eb_s"] for s in "12"},
        **{(s, "compgen_comp_rel2_eb_c"): ["->", "cogs_tagging_rel_eb", *comp] for s in "123"},
        **{(s, "compgen_comp_rel2_eb_cs"): ["->", "cogs_tagging_rel_eb_s", *comp] for s in "12"},
    }
    # The rel2 rows share rel-eb's tagging model: listed as such, never planned.
    section = proc.stdout.split("cogs-tagging (encoder-only", 1)[1].split("cells in run order")[0]
    mapping = {line.split()[0]: line.split()[1:] for line in section.splitlines()[1:]}
    for rel2 in ("compgen_rel2_eb", "compgen_rel2_eb_c"):
        assert mapping[rel2][:2] == ["=", "compgen_rel_eb"] and "not trained again" in " ".join(
            mapping[rel2]
        )
    assert mapping["compgen_comp_rel2_eb_cs"] == ["cogs_tagging_rel_eb_s", *comp]
    none = run(
        ["bash", GRID, "--list", "--out", tmp_path, "--only-task", "cogs-tagging"]
        + ["--only-preset", "compgen_rel2_eb", "--only-preset", "compgen_rel2_eb_c"],
        env=ENV,
        check=False,
    )
    assert none.returncode == 2 and "no cell matches" in none.stderr


def test_dry_run_prints_the_tagging_commands(tmp_path):
    results = tmp_path / "r.csv"
    results.write_text(
        "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,"
        "extra_args,threads,cpu_seconds\n"
        "compgen_abs,cogs-tagging,1,9,0.5,1,d,gen,21000,24155,,--arch cogs_tagging_base,1,1\n"
    )
    out = tmp_path / "grid"
    proc = run(
        ["bash", GRID, "--dry-run", "--out", out, "--csv", results, "--only-task", "cogs-tagging"],
        env=ENV,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == 12 - 1  # seed 1 of abs is in the CSV
    first = lines[0].split(" -- ")[0].split()
    assert first[1].endswith("scripts/experiment.py") and first[2:10] == [
        "cogs-tagging-run",
        "cogs_tagging_rel_eb",
        "--grid-row",
        "compgen_rel_eb",
        "--seed",
        "1",
        "--resume",
        "--max-update",
    ]
    assert f"--out {out}/cogs-tagging --csv {results}" in lines[0]
    small = next(x for x in lines if "--grid-row compgen_small_2s " in x)
    assert " cogs_tagging_rel_eb_s " in small and "--copy-decoder" not in small
    comp = next(x for x in lines if "--grid-row compgen_comp_rel2_eb_cs --seed 2 " in x)
    assert comp.split(" -- ")[1].endswith(
        "--attention-type compositional --num-searches 4 --num-retrievals 4"
    )
    assert " cogs_tagging_rel_eb_s " in comp
    assert not any("--grid-row compgen_rel2_eb" in x for x in lines)
    assert not out.exists()  # starts nothing


def test_paper_variants_list_their_rows_runs(tmp_path):
    """scripts/paper-variants.sh --list: a tagging variant runs its row's tagging model (the
    grid row cogs_tagging_tuned_comp: the tuned model with compositional attention), a seq2seq
    variant compgen-run on its row's preset and paper-budget column, each recorded as the variant
    (--grid-row) with its one changed option last; the variants trained on fairseq's
    initialisation rerun with it; nothing starts."""
    out, results = tmp_path / "out", tmp_path / "v.csv"
    proc = run(
        ["bash", ROOT / "scripts" / "paper-variants.sh", "--list", "--seeds", "2"]
        + ["--only", "tuned_comp_fairseq_init", "--only", "rel2_eb_c_official_init"]
        + ["--only", "no_dropout", "--out", out, "--csv", results],
        env=ENV,
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == 6
    tagging = next(x for x in lines if "--grid-row tuned_comp_fairseq_init --seed 2 " in x)
    assert " cogs-tagging-run cogs_tagging_tuned " in tagging and "--epochs 16 " in tagging
    assert f"--out {out}/cogs-tagging --csv {results} -- " in tagging
    comp = "--attention-type compositional --num-searches 4 --num-retrievals 4"
    assert tagging.endswith(f" {comp} --tagging-init fairseq")
    no_dropout = next(x for x in lines if "--grid-row no_dropout --seed 1 " in x)
    assert no_dropout.endswith(" --log-interval 100 --dropout 0 --tagging-init fairseq")
    seq2seq = next(
        x for x in lines if "--grid-row rel2_eb_c_official_init" in x and "--seed 1" in x
    )
    assert " compgen-run compgen_rel2_eb_c cogs " in seq2seq
    assert "--epochs 16 " in seq2seq and "--valid 500 --test 2100 " in seq2seq
    assert f"--out {out} --csv {results} -- " in seq2seq
    assert seq2seq.endswith(" --seq2seq-init official")
    assert not out.exists()


def test_notebook_factor_variants_add_up_to_the_notebook_path():
    """The one-factor variants of the notebook path (dup_*, reverse_*): each is rel2-eb-c in its
    paper-budget column with one difference, and together their options are exactly what
    compgen-run --notebook adds to fairseq-train (the padding through --notebook-padding)."""
    from studies import compgen_run, paper_variants

    for task in ("dup", "reverse"):
        names = [f"{task}_{factor}" for factor in paper_variants.NOTEBOOK_FACTORS]
        factors = {name: paper_variants.VARIANTS[name] for name in names}
        train, run_options = [], []
        for v in factors.values():
            assert (v.base, v.task, v.against) == ("compgen_rel2_eb_c", task, None)
            assert len(v.train_options) + len(v.run_options) >= 1
            train += v.train_options
            run_options += v.run_options
        assert sorted(train + ["--copy-attend-padding"]) == sorted(compgen_run.NOTEBOOK_TRAIN)
        assert run_options == ["--notebook-padding"]
        # the notebook path's last difference, its data set per seed (row 12)
        fresh = paper_variants.VARIANTS[f"{task}_fresh_data"]
        assert (fresh.base, fresh.task, fresh.against, fresh.fresh_data) == (
            "compgen_rel2_eb_c",
            task,
            None,
            True,
        )
        assert fresh.train_options == fresh.run_options == ()
    cmd = paper_variants.command("dup_copy_padding", 2, "OUT", "V.csv")
    text = " ".join(map(str, cmd))
    assert " compgen-run compgen_rel2_eb_c dup --seed 2 " in text and "--epochs 4 " in text
    assert "--grid-row dup_copy_padding --notebook-padding " in text
    assert "--data-seed" not in text
    # each seed its own data set, none of them the row's (--data-seed 1)
    for seed in (1, 2, 3):
        text = " ".join(map(str, paper_variants.command("reverse_fresh_data", seed, "O", "V.csv")))
        assert f" reverse --seed {seed} " in text
        assert f"--grid-row reverse_fresh_data --data-seed {100 + seed} --out O " in text


STUB_RUN = """#!/usr/bin/env bash
# Stand-in for `experiment.py compgen-run`: logs which grid ran the cell, then records it.
set -euo pipefail
preset=$2 task=$3
shift 3
while (($#)); do
  case $1 in --seed) seed=$2; shift 2 ;; --csv) csv=$2; shift 2 ;; --) break ;; *) shift ;; esac
done
echo "$preset $task $seed $PPID" >>"$STUB_LOG"
sleep 0.1
echo "$preset,$task,$seed,1,0.5,1,d,test,1,1,1,,1,1" >>"$csv"
"""
# A grid whose cells run the stand-in instead of the experiment program.
STUB_GRID = """import sys
from studies import cli, grid
grid.EXPERIMENT = ["bash", sys.argv[1]]
sys.exit(cli.main(["grid", *sys.argv[2:]]))
"""


def test_two_grids_on_one_out_share_the_cells(tmp_path):
    """A second grid started on the same --out runs the cells the first is not running: each
    cell runs exactly once, and both grids run some."""
    stub = tmp_path / "compgen-run-stub.sh"
    stub.write_text(STUB_RUN)
    out, results, log = tmp_path / "out", tmp_path / "r.csv", tmp_path / "ran.log"
    (out / "raw" / "scan-addjump").mkdir(parents=True)
    (out / "raw" / "scan-addjump" / ".done").touch()  # no ../shared needed
    results.write_text(
        "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,"
        "extra_args,threads,cpu_seconds\n"
    )
    cmd = [sys.executable, "-c", STUB_GRID, stub, "--out", out, "--csv", results]
    cmd += ["--only-task", "add", "--only-task", "dup"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "STUB_LOG": str(log)}
    grids = [
        subprocess.Popen([str(c) for c in cmd], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errs = [g.communicate(timeout=300)[1] for g in grids]
    assert [g.returncode for g in grids] == [0, 0], errs
    ran = [line.split() for line in log.read_text().splitlines()]
    cells = [tuple(r[:3]) for r in ran]
    # 7 rows, 17 row-seeds, + 7 position-scheme rows of 3 seeds, on 2 columns
    assert len(cells) == len(set(cells)) == 2 * (17 + 21)
    assert len({r[3] for r in ran}) == 2  # both grids ran cells
    with open(results, newline="") as f:
        assert sorted((r["preset"], r["task"], r["seed"]) for r in csv.DictReader(f)) == sorted(
            cells
        )
    assert any("left to the other grid" in e for e in errs)


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
        for preset, seed, acc in (
            ("compgen_abs", "1", "0.6"),
            ("compgen_abs", "2", "0.7"),
            ("compgen_rel_eb", "1", "0.8"),
        ):
            w.writerow(
                [preset, "cogs-tagging", seed, "9", acc, "4", "d", "gen", "2", "9", ""]
                + [f"--arch {TAG_ARCH[preset]} --cpu", "1"]
            )
    for preset, seed, correct in (("compgen_abs", 1, 1), ("compgen_abs", 2, 0)):
        pred = tmp_path / "tagging" / preset / f"seed{seed}" / "pred"
        pred.mkdir(parents=True)
        (pred / "gen.scores.json").write_text(
            json.dumps(
                {
                    "accuracy": 0.5,
                    "lf_accuracy": 0.5,
                    "total": 2,
                    "categories": {
                        "pp_recursion": {
                            "accuracy": float(correct),
                            "lf_accuracy": 1.0,
                            "correct": correct,
                            "lf_correct": 1,
                            "total": 1,
                        },
                    },
                }
            )
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

    def report(png, runs, tagging_runs):
        args = ["--csv", results, "--doc", doc, "--png", png, "--runs", runs]
        args += ["--tagging-runs", tagging_runs, "--categories", cats]
        cmd = [sys.executable, REPORT, *args]
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)

    proc = report(png, tmp_path / "runs", tmp_path / "tagging")
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "\nold\n" not in text
    assert "pending" not in text
    rows = {
        line.split("<br>")[0]: line.rstrip(" |").split(" | ")
        for line in text.splitlines()
        if "<br>`" in line
    }
    row = next(line for line in text.splitlines() if line.startswith("| abs<br>"))
    assert "**0.500 ± 0.354 (2)**<br>*paper 0.005*" in row
    assert "no data<br>*paper 0.174*" in row
    # COGS tag. (13th column): abs has Table 5's base value; not in the averages.
    assert rows["| abs"][13] == "0.650 ± 0.071 (2)<br>*paper 0.637*"
    assert rows["| abs"][14] == "0.500 (partial)" and rows["| abs"][15] == "0.005"
    assert rows["| rel-eb"][13] == "**0.800 (1)**"
    # The rel2 rows show rel-eb's tagging runs, footnoted; rows without a run of their own show –.
    for name in ("| rel2-eb", "| rel2-eb-c (= small-2)"):
        assert rows[name][13] == "**0.800 (1)** (rel-eb's †)"
    assert rows["| small-2s (rel2-eb-c, shared)"][13] == "–"
    assert "† rel2-eb and rel2-eb-c have rel-eb's encoder" in text
    assert "Runs recorded: 6 of 291 planned" in text
    seq2seq, tagging = text.split("### COGS (tagging) per generalisation category")
    assert "| pp_recursion | 0.000 |" in seq2seq.split("### COGS (seq2seq)")[1]
    assert (
        "| COGS gen category | compgen_abs<br>cogs_tagging_base --tagging-init fairseq (2) |"
        in tagging
    )
    assert "| pp_recursion | 0.500 |" in tagging
    # every run, without its date (the date stays in the CSV)
    assert "| 2 | add | compgen_abs | 9 | 0.7500 | 30 | – | 1 |\n" in text
    assert "| 1 | cogs-tagging | compgen_rel_eb | 9 | 0.8000 | 4 | – | 1 |\n" in text
    assert png.read_bytes()[:4] == b"\x89PNG"
    got = list(csv.DictReader(cats.open()))
    assert [(r["task"], r["preset"], r["seed"], r["category"]) for r in got] == [
        ("cogs", "compgen_rel2_eb_c", "1", "obj_to_subj_common"),
        ("cogs", "compgen_rel2_eb_c", "1", "pp_recursion"),
        ("cogs-tagging", "compgen_abs", "1", "pp_recursion"),
        ("cogs-tagging", "compgen_abs", "2", "pp_recursion"),
    ]
    # Lost run folders keep their rows in the categories CSV.
    assert report("", tmp_path / "none", tmp_path / "none").returncode == 0
    assert len(list(csv.DictReader(cats.open()))) == 4


def test_comparison_with_rel2_eb_c():
    report = load_report()

    def row(preset, task, acc, cpu):
        return {"preset": preset, "task": task, "accuracy": acc, "cpu_seconds": cpu}

    rows = [
        row("compgen_rel2_eb_c", "add", 0.5, 100.0),
        row("compgen_rel2_eb_c", "add", 0.6, 100.0),
        row("compgen_comp_rel2_eb_c", "add", 0.9, 150.0),
        row("compgen_comp_rel2_eb_c", "add", 0.8, 150.0),
        row("compgen_comp_rel2_eb_cs", "add", 0.6, float("nan")),
        row("compgen_rel2_eb_c", "dup", 0.4, 10.0),
        row("compgen_comp_rel2_eb_c", "dup", 0.2, 20.0),
        row("compgen_rel2_eb_c", "scan-addjump", 0.002, 1.0),
        row("compgen_rel2_eb_c", "scan-addjump", 0.002, 1.0),
        row("compgen_comp_rel2_eb_c", "scan-addjump", 0.0, 1.0),
        row("compgen_comp_rel2_eb_c", "scan-addjump", 0.0, 1.0),
        row("compgen_rel_eb", "cogs-tagging", 0.5, 10.0),  # rel2-eb-c's tagging model
        row("compgen_comp_rel2_eb_c", "cogs-tagging", 0.7, 11.0),
    ]
    lines = report.comparison_table(rows, report.summarize(rows)).splitlines()
    cells = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines[2:]}
    # 0.85 - 0.55 = +0.30 > std 0.071 + 0.071: marked; CPU 150 / 100
    assert cells["Add"][:4] == ["0.550 (2)", "0.850 (2)", "+0.300 *", "1.50x"]
    assert cells["Add"][4:6] == ["0.600 (1)", "+0.050"]  # one run: never marked
    assert cells["Add"][6].rstrip(" |") == "–"  # no CPU recorded
    assert cells["Dup"][:4] == ["0.400 (1)", "0.200 (1)", "-0.200", "2.00x"]
    assert cells["COGS tag."][:4] == ["0.500 (1)", "0.700 (1)", "+0.200", "1.10x"]
    assert cells["AddNeg"][:3] == ["–", "–", "–"]
    assert cells["SCAN-aj"][2] == "-0.002"  # beyond a zero spread, but below 0.01: unmarked
    # the mean leaves out COGS tag.: (0.30 - 0.20 - 0.002) / 3
    assert cells["mean Δ over the seq2seq columns"][2] == "+0.033 (3 columns)"


def test_new_rows_against_their_one_factor_baselines():
    """The position-scheme table: each new row paired by seed with the baseline
    SCHEME_BASELINES names, only on seeds both have; with 2 seeds the t-interval (t = 12.7)
    rarely excludes 0, and with 1 seed there is none; p (Holm) adjusts the table's tests."""
    report = load_report()

    def row(preset, task, seed, acc, cpu=10.0):
        return {"preset": preset, "task": task, "seed": seed, "accuracy": acc, "cpu_seconds": cpu}

    rows = [
        row("compgen_rel_eb_c", "reverse", "1", 0.50),
        row("compgen_rel_eb_c", "reverse", "2", 0.60),
        row("compgen_rel_eb_c", "reverse", "3", 0.90),  # no T5 seed 3: left out of the pairing
        row("compgen_t5_c", "reverse", "1", 0.30, 20.0),
        row("compgen_t5_c", "reverse", "2", 0.30, 20.0),
        row("compgen_rope_c", "reverse", "1", 0.10),
        row("compgen_rope_c", "reverse", "2", 0.35),
        row("compgen_rel2_eb_c", "add", "1", 0.9),
        row("compgen_rel_eb_c", "add", "1", 0.0),
    ]
    pairs = {r: b for r, (b, _) in report.SCHEME_BASELINES.items()}
    lines = report.paired_comparison(rows, pairs, report.COLUMNS, row_head="row").splitlines()
    split = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    parsed = {tuple(cells[:2]): cells for cells in split}
    t5 = parsed["Reverse", "`compgen_t5_c` − `compgen_rel_eb_c`"]
    assert t5[2:6] == ["2", "0.300", "0.550", "-0.250"] and t5[10] == "2.00x"
    assert t5[9] == "cannot tell"  # -0.2, -0.3: t(1) = 12.7 makes the interval include 0
    rope = parsed["Reverse", "`compgen_rope_c` − `compgen_rel_eb_c`"]
    # Holm over the table's two tests: t5's p = 0.126 (t = -5, 1 df) is the smaller, times 2;
    # rope's (0.144, times 1) is raised to it, since adjusted p-values never decrease
    assert (t5[7], rope[7]) == ("0.126", "0.144") and t5[8] == rope[8] == "0.251"
    add = parsed["Add", "`compgen_rel_eb_c` − `compgen_rel2_eb_c`"]
    assert add[2] == "1" and add[5] == "-0.900" and add[9] == "cannot tell"
    assert add[7] == add[8] == "–"  # one seed: no test, outside Holm's family
    assert len(lines) == 5


def test_paper_budget_plan_blocks_and_commands(tmp_path):
    """--budget paper: the authors' epochs per column, the planned blocks in order (all seeds of
    a block before the next), the final checkpoint reported; the short grid is unchanged."""
    proc = run(
        ["bash", GRID, "--budget", "paper", "--list", "--out", tmp_path]
        + ["--csv", tmp_path / "none.csv", "--tagging-csv", tmp_path / "none.csv"],
        env=ENV,
    )
    cells = [line.split() for line in proc.stdout.splitlines() if line.startswith("  todo ")]
    # 3 tagging rows x 5 seeds; 4 seq2seq rows x 3 seeds x 9 columns; 11 position rows x 3 seeds
    # x 4 columns (add, addneg, reverse, dup); 4 coupling rows x 3 seeds x their one column
    planned = 3 * 5 + 4 * 3 * 9 + 11 * 3 * 4 + 4 * 3
    assert len(cells) == load_report().paper_plan_total() == planned == 267
    tasks = [c[3] for c in cells]
    blocks = [
        ["cogs-tagging"],
        ["add", "reverse"],
        ["cogs", "dup"],
        ["scan-length", "scan-addjump"],
        ["addneg"],
        ["cart", "inters"],
    ]
    sizes = [15, 24 + 12 * 3 * 2, 24 + 12 * 3, 24, 12 + 12 * 3, 24]
    start = 0
    for block, size in zip(blocks, sizes):
        assert set(tasks[start : start + size]) == set(block)
        seeds = [int(c[2]) for c in cells[start : start + size]]
        assert seeds == sorted(seeds)  # seed rounds within the block
        start += size
    rows = {c[4] for c in cells if c[3] == "add"}
    assert rows == {
        "compgen_abs",
        "compgen_rel2_eb_c",
        "compgen_comp_rel2_eb_c",
        "compgen_comp_rel2_eb_cs",
        *(f"compgen_{s}{n}_c" for n in ("", "2") for s in ("alibi", "t5", "rope", "fire")),
        "compgen_rel_eb_cope_c",
        "compgen_fire_rand_c",
        "compgen_rel2_eb_abacus_c",
        "compgen_rel2_eb_coupled_add_c",
    }
    assert {c[4] for c in cells if c[3] == "scan-length"} == rows - set(POSITION_ROWS)
    dry = run(
        ["bash", GRID, "--budget", "paper", "--dry-run", "--out", tmp_path / "o"]
        + ["--csv", tmp_path / "p.csv", "--tagging-csv", tmp_path / "p.csv"],
        env=ENV,
    ).stdout.splitlines()
    assert len(dry) == planned
    first_add = next(x for x in dry if "experiment.py compgen-run compgen_abs add " in x)
    assert "--epochs 2 --warmup 4000 --report-checkpoint last --valid 256" in first_add
    first_cart = next(x for x in dry if "experiment.py compgen-run compgen_abs cart " in x)
    assert "--epochs 4 --warmup 4000 --report-checkpoint last --valid 256 --notebook" in first_cart
    assert "--test" not in first_cart  # the notebook's 1,024 test examples
    assert "compgen_rel2_eb_c inters --seed 3 " in " ".join(dry) and "--epochs 8 " in dry[-1]
    comp_tag = next(x for x in dry if "--grid-row cogs_tagging_tuned_comp --seed 5 " in x)
    assert " cogs_tagging_tuned " in comp_tag and "--epochs 16 --warmup 4000" in comp_tag
    assert comp_tag.endswith("--attention-type compositional --num-searches 4 --num-retrievals 4")
    assert not any("--max-update" in x for x in dry)
    bad = run(["bash", GRID, "--budget", "huge", "--list"], env=ENV, check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "compgen-grid.sh: --budget huge: choose short or paper"


def test_notebook_path_shares_the_tagging_cells_with_the_fairseq_path(tmp_path):
    """A COGS-tagging cell runs the same on both paths, so it has one place: the notebook path
    finds it done in the fairseq path's CSV and runs it there (--tagging-csv/--tagging-out,
    default the fairseq path's), never a second time in its own CSV."""
    fairseq_csv, fairseq_out = tmp_path / "fq.csv", tmp_path / "fq"
    fairseq_csv.write_text(
        ",".join(PAPER_HEADER) + "\n"
        "cogs_tagging_tuned,cogs-tagging,1,9,0.5,1,d,gen,21000,24155,,"
        "--arch cogs_tagging_tuned,1,1,last,0.5,0.5\n"
    )
    common = ["--budget", "paper", "--only-task", "cogs-tagging", "--out", tmp_path / "nb"]
    common += ["--csv", tmp_path / "nb.csv", "--tagging-csv", fairseq_csv]
    common += ["--tagging-out", fairseq_out]
    listed = run(["bash", GRID, "--list", *common], env=ENV).stdout.splitlines()
    states = [line.split()[0] for line in listed if line.startswith(("  todo ", "  done "))]
    assert states == ["done"] + ["todo"] * 14
    assert listed[-1] == "15 cells, 1 done"
    dry = run(["bash", GRID, "--dry-run", *common], env=ENV).stdout.splitlines()
    assert len(dry) == 14
    assert all(f"--out {fairseq_out}/cogs-tagging --csv {fairseq_csv} " in x for x in dry)
    assert not (tmp_path / "nb").exists()

    # By default the two paths list the same tagging states (the fairseq path's CSV).
    def default_states(path):
        out = run(
            ["bash", GRID, "--budget", "paper", "--path", path, "--list"]
            + ["--only-task", "cogs-tagging"],
            env=ENV,
        ).stdout.splitlines()
        return [x for x in out if x.startswith(("  todo ", "  done ", "  partial "))]

    assert default_states("notebook") == default_states("fairseq")
    # On the fairseq path the tagging cells follow --csv and --out.
    own = ["--budget", "paper", "--path", "fairseq", "--only-task", "cogs-tagging"]
    own += ["--out", tmp_path / "o", "--csv", fairseq_csv]
    dry = run(["bash", GRID, "--dry-run", *own], env=ENV).stdout.splitlines()
    assert len(dry) == 14 and f"--out {tmp_path}/o/cogs-tagging --csv {fairseq_csv} " in dry[0]


PAPER_HEADER = (
    "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,extra_args,"
    "threads,cpu_seconds,checkpoint,accuracy_best,accuracy_last"
).split(",")


def test_paper_budget_report(tmp_path):
    """The paper-budget block: final and best-by-valid means with the paper's value, the tagging
    models against Table 5, the compositional rows paired by seed with a t-interval."""
    results = tmp_path / "p.csv"
    rows = []
    for seed, base, comp in (("1", 0.5, 0.7), ("2", 0.6, 0.8), ("3", 0.4, 0.7)):
        for preset, acc in (("compgen_rel2_eb_c", base), ("compgen_comp_rel2_eb_c", comp)):
            cpu = "100" if preset == "compgen_rel2_eb_c" else "150"
            wall = "9"
            if seed == "3":  # the baseline's run lost a killed piece's time; the pair's CPU ratio
                # leaves the seed out (with it the ratio would be 2.00x)
                cpu, wall = ("", "") if preset == "compgen_rel2_eb_c" else ("300", "9")
            rows.append([preset, "reverse", seed, "6250", acc, wall, "d", "test", "1024", "200000"])
            rows[-1] += ["1", "", "1", cpu, "last", acc - 0.1, acc]
    for seed, acc in (("1", 0.75), ("2", 0.79)):
        rows.append(["cogs_tagging_tuned", "cogs-tagging", seed, "6032", acc, "9", "d", "gen"])
        rows[-1] += ["21000", "24155", "", "--arch cogs_tagging_tuned", "1", "50", "last", 0.7, acc]
    for seed, acc in (("1", 0.3), ("2", 0.5)):  # COGS seq2seq: categories of the final checkpoint
        rows.append(["compgen_rel2_eb_c", "cogs", seed, "6032", acc, "9", "d", "gen", "2100"])
        rows[-1] += ["24155", "1", "", "1", "50", "last", 0.1, acc]
        run = tmp_path / "runs" / "compgen_rel2_eb_c" / "cogs-va500-te2100" / f"seed{seed}"
        run.mkdir(parents=True)
        for name, value in (("accuracy.json", 0.9), ("accuracy-last.json", acc)):  # best, final
            cats = {"cp_recursion": {"accuracy": value, "correct": 1, "total": 2}}
            (run / name).write_text(json.dumps({"categories": cats}))
    with results.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAPER_HEADER)
        w.writerows(rows)
    pred = tmp_path / "tag" / "cogs_tagging_tuned" / "seed1" / "pred-last"
    pred.mkdir(parents=True)
    (pred / "gen.scores.json").write_text(
        json.dumps({"categories": {"pp_recursion": {"accuracy": 0.25, "correct": 1, "total": 4}}})
    )
    doc = tmp_path / "doc.md"
    report = load_report()
    doc.write_text(f"head\n{report.PAPER_BEGIN}\nold\n{report.PAPER_END}\ntail\n")
    png = tmp_path / "p.png"
    variants = tmp_path / "v.csv"
    with variants.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAPER_HEADER)
        for seed, acc in (("1", 0.80), ("2", 0.86)):
            w.writerow(["tuned_fairseq_init", "cogs-tagging", seed, "6032", acc, "9", "d", "gen"])
        for seed, acc in (("1", 0.45), ("2", 0.55)):  # a seq2seq variant: paired with COGS
            w.writerow(["rel2_eb_c_official_init", "cogs", seed, "6032", acc, "9", "d", "gen"])
    notebook = tmp_path / "nb.csv"  # the notebook path: rel2-eb-c and comp on Reverse, 2 seeds
    with notebook.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAPER_HEADER)
        for seed, base, comp in (("1", 0.55, 0.45), ("2", 0.65, 0.50)):
            for preset, acc in (("compgen_rel2_eb_c", base), ("compgen_comp_rel2_eb_c", comp)):
                w.writerow([preset, "reverse", seed, "6250", acc, "9", "d", "test", "1024"]
                           + ["200000", "1", "--notebook", "1", "60", "last", acc, acc])  # fmt: skip
        for seed, acc in (("1", 0.90), ("2", 0.91)):  # far from the paper's 0.283
            w.writerow(["compgen_rel2_eb_c", "dup", seed, "12500", acc, "9", "d", "test", "1024"]
                       + ["200000", "1", "--notebook", "1", "60", "last", acc, acc])  # fmt: skip
    cats = tmp_path / "cats.csv"
    args = ["--budget", "paper", "--csv", str(results), "--doc", str(doc), "--png", str(png)]
    args += ["--notebook-csv", str(notebook)]
    args += ["--tagging-runs", str(tmp_path / "tag"), "--variants-csv", str(variants)]
    args += ["--runs", str(tmp_path / "runs"), "--categories", str(cats)]
    args += ["--notebook-runs", str(tmp_path / "nb-runs")]
    args += ["--notebook-cut-csv", str(tmp_path / "cut.csv")]
    report.main(args)
    text = doc.read_text()
    assert text.startswith("head\n") and text.endswith("tail\n") and "\nold\n" not in text
    table = text.split("### Paper budget: sequence accuracy")[1].split("\n\n")[1]
    rel2 = next(line for line in table.splitlines() if "`compgen_rel2_eb_c`" in line)
    cells = rel2.split(" | ")
    # Reverse: the notebook path (the default) first, then ours, then the paper
    assert cells[3] == (
        "notebook 0.600 ± 0.071 (2) *agrees*<br>best-valid 0.600<br>"
        "fairseq 0.500 ± 0.100 (3) *agrees*<br>best-valid 0.400<br>*paper 0.540*"
    )
    assert cells[1] == "notebook –<br>fairseq –<br>*paper 0.977*"  # Add: not run
    assert cells[4].startswith("notebook 0.905 ± 0.007 (2) **differs**<br>")  # Dup
    assert cells[5] == "notebook –<br>fairseq –<br>*paper 0.000*"  # Cart, planned
    assert cells[9] == "no data<br>*paper 0.336*"  # PCFG productivity
    # The notebook path's own pair: differences -0.10, -0.15 (2 seeds)
    nb_block = text.split("against its baseline on the notebook path")[1].split("###")[0]
    nb_line = next(line for line in nb_block.splitlines() if line.startswith("| Reverse |"))
    nb_parts = [c.strip() for c in nb_line.strip("|").split("|")]
    assert nb_parts[2:6] == ["2", "0.475", "0.600", "-0.125"]
    assert "`compgen_comp_rel2_eb_cs` − `compgen_rel2_eb_c`" in nb_block  # not compared yet
    # Ours, paired by seed: differences 0.2, 0.2, 0.3 -> mean 0.233, t-interval excludes 0.
    ours_block = text.split("against its baseline on our path")[1]
    cmp_line = next(
        line for line in ours_block.splitlines() if line.startswith("| Reverse | `compgen_comp")
    )
    parts = [c.strip() for c in cmp_line.strip("|").split("|")]
    assert parts[2:6] == ["3", "0.733", "0.500", "+0.233"]
    lo, hi = (float(x) for x in parts[6].strip("[]").split(", "))
    assert 0 < lo < 0.233 < hi and parts[9] == "helps" and parts[10] == "1.50x"
    assert float(parts[7]) <= float(parts[8]) <= 1  # Holm never lowers a p
    tag_line = next(line for line in text.splitlines() if "`cogs_tagging_tuned`" in line)
    assert "0.770 ± 0.028 (2)" in tag_line and "0.784" in tag_line and "-0.014" in tag_line
    seq2seq, tagging = text.split("### Paper budget: COGS tagging per generalisation category")
    seq2seq = seq2seq.split("### Paper budget: COGS (seq2seq) per generalisation category")[1]
    assert "| COGS gen category | `compgen_rel2_eb_c` (2) |" in seq2seq
    assert "| cp_recursion | 0.400 |" in seq2seq  # the final checkpoints (0.3, 0.5), not the best
    assert "| COGS gen category | `cogs_tagging_tuned` (1) |" in tagging
    assert "| pp_recursion | 0.250 |" in tagging
    # The categories live in the committed CSV: without the run folders the tables stay.
    shutil.rmtree(tmp_path / "runs"), shutil.rmtree(tmp_path / "tag")
    report.main(args)
    assert doc.read_text() == text
    variant = next(line for line in text.splitlines() if line.startswith("| `tuned_fairseq"))
    assert "0.830 ± 0.042 (2)" in variant and "| +0.060 [" in variant  # paired: +0.05, +0.07
    assert "| `cogs_tagging_tuned` on cogs-tagging, against the row |" in variant
    # Rows with no run yet, and pairs with no seed of both, are named as such.
    base = next(line for line in text.splitlines() if "<br>`cogs_tagging_base` |" in line)
    assert "| not run yet | – | 0.637 | – | – |" in base
    assert (
        "Not compared yet (no seed with runs of both): `compgen_comp_rel2_eb_cs` − "
        "`compgen_rel2_eb_c`, `cogs_tagging_tuned_comp` − `cogs_tagging_tuned`, "
        "`tuned_comp_fairseq_init` − `tuned_fairseq_init`.\n"
    ) in text
    variant = next(line for line in text.splitlines() if line.startswith("| `rel2_eb_c_official"))
    assert "| `compgen_rel2_eb_c` on cogs, against the row |" in variant
    assert "| 0.400 ± 0.141 (2) |" in variant
    assert "| +0.100 [" in variant  # paired: +0.15, +0.05
    with variants.open("a", newline="") as f:
        csv.writer(f).writerow(["renamed", "cogs", "1", "6032", 0.4, "9", "d", "gen"])
    with pytest.raises(report.ReportError, match="renamed: a variant in the CSV that"):
        report.main(args)
    assert "Runs recorded, of 267 planned per path: notebook path 6 (wall 0.01 h," in text
    assert "fairseq path 10 (wall 0.02 h, CPU" in text
    assert "times over the 9 runs that record them" in text
    assert (
        "| 2 | reverse | compgen_comp_rel2_eb_c | 6250 | 0.5000 | 0.5000 | 9 | 60 | notebook |"
        in text
    )
    lost = next(
        line for line in text.splitlines() if line.startswith("| 3 | reverse | compgen_rel2")
    )
    assert "| – | – |" in lost  # not recorded, not 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _tagging_runs(preset, accuracies):
    """Rows of read_csv's form: PRESET on cogs-tagging, seed i+1 with accuracies[i] (None: no
    run of that seed)."""
    return [
        {**_run_row(preset, "cogs-tagging", seed, acc), "accuracy_best": acc}
        for seed, acc in enumerate(accuracies, 1)
        if acc is not None
    ]


def test_variants_table_pairs_a_variant_with_the_variant_it_names(monkeypatch):
    """A variant with `against` is paired with that variant's runs of the same seeds, not with
    its grid row's; the table says which; a variant whose row has no run on its seeds says so;
    an `against` naming no variant is a one-line error."""
    from studies import paper_variants

    assert paper_variants.VARIANTS["warmup600"].against == "tuned_fairseq_init"
    rows = _tagging_runs("cogs_tagging_tuned", [0.90, 0.90, 0.90])  # the row: not the baseline
    variant_rows = _tagging_runs("tuned_fairseq_init", [0.60, 0.70, 0.65])
    variant_rows += _tagging_runs("warmup600", [0.70, 0.75, None, 0.5])  # seed 4: no pair
    variant_rows += _tagging_runs("base_fairseq_init", [0.5, 0.6])  # cogs_tagging_base: no run
    lines = grid_report.variants_table(rows, variant_rows).splitlines()
    warmup = next(x for x in lines if x.startswith("| `warmup600` |"))
    cells = [c.strip() for c in warmup.strip("|").split("|")]
    assert cells[1] == "`cogs_tagging_tuned` on cogs-tagging, against `tuned_fairseq_init`"
    # seeds 1-2 of tuned_fairseq_init (0.60, 0.70): mean 0.650, std 0.0707; Δ +0.10, +0.05
    assert cells[3] == "0.650 ± 0.132 (3)"  # all of the variant's seeds: 0.70, 0.75, 0.5
    assert cells[5] == "0.650 ± 0.071 (2)"
    assert cells[6].startswith("+0.075 [")
    lo, hi = (float(x) for x in cells[6].split(" ", 1)[1].strip("[]").split(", "))
    assert lo < 0.075 < hi
    fairseq = next(x for x in lines if x.startswith("| `tuned_fairseq_init` |"))
    assert "| 0.900 ± 0.000 (3) | -0.250 [" in fairseq  # against its row, seeds 1-3
    base = next(x for x in lines if x.startswith("| `base_fairseq_init` |"))
    assert "| no run of the row on these seeds yet | – |" in base
    assert lines.index(fairseq) < lines.index(base) < lines.index(warmup)  # VARIANTS' order
    broken = paper_variants.VARIANTS["warmup600"]._replace(against="nope")
    monkeypatch.setitem(paper_variants.VARIANTS, "warmup600", broken)
    with pytest.raises(grid_report.ReportError) as err:
        grid_report.variants_table(rows, variant_rows)
    assert str(err.value) == (
        "warmup600: against nope: no variant of that name in the cogs-tagging column "
        "(paper_variants.py)"
    )


def test_every_variant_against_names_a_variant_of_its_column():
    from studies.paper_variants import VARIANTS

    for name, v in VARIANTS.items():
        assert v.against is None or VARIANTS[v.against].task == v.task, name
        if name.endswith("_fairseq_init") or v.against == "tuned_fairseq_init":
            assert v.train_options[-2:] == ("--tagging-init", "fairseq"), name


def test_scan_addjump_test_set_comes_from_the_corpus_the_lookup_finds(tmp_path, monkeypatch):
    """The grid derives SCAN add-jump's test set from the SCAN corpus that plugin_tools.corpora
    finds ($FAIRSEQ_PLUGINS_DATA first): tasks.txt minus the add-jump training lines."""
    from studies import grid
    from studies.runs import ExperimentError

    scan = tmp_path / "data" / "scan"
    monkeypatch.setenv("FAIRSEQ_PLUGINS_DATA", str(tmp_path / "data"))
    with pytest.raises(ExperimentError, match=f"SCAN files missing under {scan}$"):
        grid.derive_scan_addjump(tmp_path / "out-missing")
    train = ["IN: jump OUT: I_JUMP", "IN: walk OUT: I_WALK", "IN: walk twice OUT: I_WALK I_WALK"]
    test = [f"IN: jump {'and walk ' * (i % 3)}x{i} OUT: I_JUMP" for i in range(7706)]
    (scan / "add_prim_split").mkdir(parents=True)
    (scan / "tasks.txt").write_text("\n".join(train[1:] + test + train[:1]) + "\n")
    (scan / "add_prim_split" / "tasks_train_addprim_jump.txt").write_text("\n".join(train) + "\n")
    grid.derive_scan_addjump(tmp_path / "out")
    derived = tmp_path / "out" / "raw" / "scan-addjump" / "add_prim_split"
    assert (derived / "tasks_test_addprim_jump.txt").read_text().splitlines() == test
    assert (derived / "tasks_train_addprim_jump.txt").read_text().splitlines() == train


def _run_row(preset, task, seed, accuracy):
    return {"preset": preset, "task": task, "seed": str(seed), "accuracy": accuracy}


def test_notebook_table_pairs_by_seed_and_reads_the_paper_rule():
    ours = [_run_row("compgen_rel2_eb_c", "reverse", s, a) for s, a in [(1, 0.8), (2, 0.9)]]
    ours += [_run_row("compgen_rel2_eb_c", "dup", s, 0.95) for s in (1, 2, 3)]
    notebook = [_run_row("compgen_rel2_eb_c", "reverse", s, a) for s, a in [(1, 0.5), (2, 0.6)]]
    notebook += [_run_row("compgen_rel2_eb_c", "dup", s, a) for s, a in [(1, 0.9), (3, 0.92)]]
    lines = grid_report.notebook_table(ours, notebook).splitlines()
    reverse = next(x for x in lines if "| Reverse |" in x)
    dup = next(x for x in lines if "| Dup |" in x)
    # Reverse: notebook 0.55 against ours 0.85 on seeds 1-2, paper 0.540 within 0.05 of 0.55
    assert "| 0.550 ± 0.071 (2) | 0.850 ± 0.071 (2) | -0.300 |" in reverse
    assert "| 0.540 | yes | 0.500, 0.600 |" in reverse
    # Dup: seeds 1 and 3 only; paper 0.283 far outside a narrow interval around 0.91
    assert "| 0.910 ± 0.014 (2) | 0.950 ± 0.000 (2) | -0.040 [" in dup and "| 0.283 | no |" in dup
    assert lines.index(reverse) < lines.index(dup)  # the paper budget's column order
    assert "No notebook-path run" in grid_report.notebook_table(ours, [])


def test_agrees_with_paper_inside_the_interval_or_near_the_mean():
    assert grid_report.agrees_with_paper([0.30, 0.70], 0.9)  # wide interval holds it
    assert not grid_report.agrees_with_paper([0.30, 0.31, 0.29], 0.5)
    assert grid_report.agrees_with_paper([0.46, 0.46], 0.5)  # no spread, within 0.05


def test_step_cost_sentence_follows_the_benchmark_file(tmp_path):
    """The position table's step-cost range is read from the benchmark's JSON (1 / the median
    CPU-time speed per row), not quoted: a rerun benchmark changes the sentence."""
    bench = tmp_path / "compgen-step.json"
    speeds = {"compgen-a": 1.25, "compgen-b": 0.8, "compgen-c": 1.0}
    results = {k: {"cpu_speed_vs_stock": {"median": v}} for k, v in speeds.items()}
    bench.write_text(json.dumps({"results": results}))
    assert "costs 0.80-1.25 times rel2-eb-c's CPU time" in grid_report.step_cost_sentence(bench)
    missing = grid_report.step_cost_sentence(tmp_path / "absent.json")
    assert "not measured yet" in missing and "costs" not in missing
