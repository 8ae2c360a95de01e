"""Every results document regenerates byte for byte from committed files alone (no training, no
checkpoints, no corpora), into a temporary folder; and a number edited by hand in what a
document is generated from changes the document (so a hand edit of the document cannot pass)."""

import csv
import json
import shutil

import pytest
from conftest import ROOT

from fairseq_plugins.analysis import retrieval_report
from plugin_tools.experiments import grid_report, study_report

DOCS = ROOT / "docs"


def committed(name):
    return (DOCS / name).read_bytes()


# --------------------------------------------------------------------------------- compgen


def regenerate_compgen(tmp_path, csv_dir=DOCS):
    doc = tmp_path / "compgen-results.md"
    shutil.copyfile(DOCS / "compgen-results.md", doc)  # the hand-written prose around the blocks
    none = tmp_path / "no-runs"  # no run folders: the tables come from the committed CSVs
    for budget, csv_name, categories in (
        ("short", "compgen-grid.csv", "compgen-grid-cogs-categories.csv"),
        ("paper", "compgen-paper.csv", "compgen-paper-cogs-categories.csv"),
    ):
        cats = tmp_path / categories  # the report refreshes it: a copy
        shutil.copyfile(DOCS / categories, cats)
        args = ["--budget", budget, "--csv", str(csv_dir / csv_name), "--doc", str(doc)]
        args += ["--png", str(tmp_path / f"{budget}.png"), "--runs", str(none)]
        args += ["--tagging-runs", str(none), "--categories", str(cats)]
        if budget == "paper":
            args += ["--variants-csv", str(csv_dir / "compgen-paper-variants.csv")]
        grid_report.main(args)
    return doc.read_bytes()


def test_compgen_results_regenerate(tmp_path):
    assert regenerate_compgen(tmp_path) == committed("compgen-results.md")


def test_compgen_results_change_with_a_number(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("compgen-grid.csv", "compgen-paper.csv", "compgen-paper-variants.csv"):
        shutil.copyfile(DOCS / name, data / name)
    with open(data / "compgen-grid.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows[0]["accuracy"] = f"{float(rows[0]['accuracy']) + 0.25:.6f}"
    with open(data / "compgen-grid.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    assert regenerate_compgen(tmp_path, data) != committed("compgen-results.md")


# ---------------------------------------------------------------------- contextual retrieval


def regenerate_retrieval(tmp_path):
    doc = tmp_path / "results-contextual-retrieval.md"
    shutil.copyfile(DOCS / doc.name, doc)
    retrieval_report.write_report(tmp_path / "no-study-folder", doc)
    return doc.read_bytes()


def test_retrieval_results_regenerate(tmp_path):
    assert regenerate_retrieval(tmp_path) == committed("results-contextual-retrieval.md")


def test_retrieval_results_change_with_a_number(tmp_path):
    # a side file beside the document wins over the committed one
    runs = (DOCS / "results-contextual-retrieval-runs.csv").read_text()
    first = runs.splitlines()[1].split(",")
    edited = first.copy()
    edited[13] = "0.1234"  # iid_l1 of the first run
    (tmp_path / "results-contextual-retrieval-runs.csv").write_text(
        runs.replace(",".join(first), ",".join(edited), 1)
    )
    spec = json.loads((DOCS / "results-contextual-retrieval-specialisation.json").read_text())
    spec["cells"][0]["agreement_mean"] += 0.1
    (tmp_path / "results-contextual-retrieval-specialisation.json").write_text(json.dumps(spec))
    text = regenerate_retrieval(tmp_path).decode()
    assert text.encode() != committed("results-contextual-retrieval.md")
    assert "0.6839 ± 0.0982" in text  # the specialisation table follows its file


# ----------------------------------------------------------------------------- the studies


def test_lm_results_regenerate(tmp_path):
    doc = tmp_path / "results-lm.md"
    study_report.regenerate(DOCS / "study-runs" / "lm", doc)
    assert doc.read_bytes() == committed("results-lm.md")


def test_lm_results_change_with_a_number(tmp_path):
    archive = tmp_path / "lm"
    shutil.copytree(DOCS / "study-runs" / "lm", archive)
    f = archive / "compositional" / "seed2" / "result.json"
    result = json.loads(f.read_text())
    result["eval"]["test"]["word_ppl"] += 3.0
    f.write_text(json.dumps(result, indent=1) + "\n")
    doc = tmp_path / "results-lm.md"
    study_report.regenerate(archive, doc)
    assert doc.read_bytes() != committed("results-lm.md")


@pytest.mark.slow  # the significance tests of every seed (bootstrap and randomization): minutes
@pytest.mark.parametrize(
    "archive,name", [("nmt-ende", "results-nmt.md"), ("nmt-deen", "results-nmt-deen.md")]
)
def test_nmt_results_regenerate(tmp_path, archive, name):
    doc = tmp_path / name
    study_report.regenerate(DOCS / "study-runs" / archive, doc)
    assert doc.read_bytes() == committed(name)


def test_no_time_machine_or_absolute_path_in_the_documents():
    for name in (
        "results-nmt.md",
        "results-nmt-deen.md",
        "results-lm.md",
        "compgen-results.md",
        "results-contextual-retrieval.md",
    ):
        text = (DOCS / name).read_text()
        assert "/work/" not in text and str(ROOT) not in text, name
        assert " UTC" not in text and "## Machine" not in text, name
        assert "../shared" not in text, name
