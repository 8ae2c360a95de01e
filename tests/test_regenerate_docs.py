"""Every results document regenerates byte for byte from committed files alone (no training, no
checkpoints, no corpora), into a temporary folder; and a number edited by hand in what a
document is generated from changes the document (so a hand edit of the document cannot pass)."""

import csv
import gzip
import json
import re
import shutil

import pytest
from conftest import ROOT

from studies import grid_report, retrieval_report, study_report

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
            cut = tmp_path / "compgen-paper-notebook-cogs-cut.csv"  # refreshed too: a copy
            shutil.copyfile(DOCS / cut.name, cut)
            args += ["--notebook-runs", str(none), "--notebook-cut-csv", str(cut)]
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


def test_retrieval_paper_block_follows_its_archive(tmp_path):
    archive = tmp_path / "retrieval-paper"
    shutil.copytree(DOCS / "study-runs" / "retrieval-paper", archive)
    rows = (archive / "runs.csv").read_text().splitlines()
    header = rows[0].split(",")
    comp_2x4 = "-comp-s2r4-"  # the 2x4 compositional runs (the archive holds 4x8 ones too)
    last_comp = [r for r in rows[1:] if comp_2x4 in r][-1]
    kept = [rows[0]] + [r for r in rows[1:] if comp_2x4 not in r or r == last_comp]
    (archive / "runs.csv").write_text("\n".join(kept) + "\n")  # one 2x4 compositional run left
    doc = tmp_path / "results-contextual-retrieval.md"
    shutil.copyfile(DOCS / doc.name, doc)
    retrieval_report.write_report(tmp_path / "no-study-folder", doc, archive)
    text = doc.read_text()
    block = text.split("<!-- study-paper:begin -->")[1].split("<!-- study-paper:end -->")[0]
    comp = [r.split(",") for r in kept[1:] if comp_2x4 in r]
    l1 = [float(r[header.index("iid_l1")]) for r in comp]
    # one seed: its value alone, no spread
    assert f"| comp-s2r4 | 64 | 30,705 | {len(comp)} | {l1[0]:.4f} |" in block
    assert "at 1 seeds" not in block  # one common seed: no test
    assert (
        text.split("<!-- study-paper:begin -->")[0]
        == committed(doc.name).decode().split("<!-- study-paper:begin -->")[0]
    )  # the rest of the document is untouched
    (archive / "protocol.json").unlink()
    with pytest.raises(SystemExit, match="protocol.json: no such file"):
        retrieval_report.write_report(tmp_path / "no-study-folder", doc, archive)


def test_retrieval_paper_block_names_runs_stopped_early(tmp_path):
    """Runs stopped before the protocol's updates (4x8 that learns nothing by 30,000) get rows of
    their own, named by where they stopped, and are not counted as finished."""
    archive = tmp_path / "retrieval-paper"
    shutil.copytree(DOCS / "study-runs" / "retrieval-paper", archive)
    lines = (archive / "runs.csv").read_text().splitlines()
    header = lines[0].split(",")
    finished = len(lines) - 1
    stopped = []
    for line in lines[1:4]:  # seed 1 of the three 2x4 i.i.d. models, as 4x8 runs stopped early
        row = dict(zip(header, line.split(",")))
        model = {"mha-h2": "mha-h4", "mha-h8": "mha-h32", "comp-s2r4": "comp-s4r8"}[row["model"]]
        row.update(run=f"4x8-iid-{model}-d64-s1", setting="4x8", model=model, updates="30000")
        stopped.append(",".join(row[h] for h in header))
    (archive / "runs.csv").write_text("\n".join(lines + stopped) + "\n")
    doc = tmp_path / "results-contextual-retrieval.md"
    shutil.copyfile(DOCS / doc.name, doc)
    retrieval_report.write_report(tmp_path / "no-study-folder", doc, archive)
    block = doc.read_text().split("<!-- study-paper:begin -->")[1].split("<!-- study-paper:end")[0]
    assert block.lstrip().startswith(f"{finished} runs finished, 100,000 updates each")
    assert "3 more runs were stopped early, at 30,000 updates" in block
    assert "### Paper protocol: 4x8, i.i.d." in block
    assert "| mha-h4 (stopped at 30,000 updates) | 64 |" in block
    assert "| comp-s4r8 (stopped at 30,000 updates) | 64 |" in block


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


NMT = [("nmt-ende", "results-nmt.md"), ("nmt-deen", "results-nmt-deen.md")]


@pytest.mark.slow  # the significance tests of every seed (bootstrap and randomization): minutes
@pytest.mark.parametrize("archive,name", NMT)
def test_nmt_results_regenerate(tmp_path, archive, name):
    doc = tmp_path / name
    study_report.regenerate(DOCS / "study-runs" / archive, doc)
    assert doc.read_bytes() == committed(name)


@pytest.mark.slow  # as above: one direction is enough to see a hand edit fail
def test_nmt_results_change_with_a_number(tmp_path):
    archive = tmp_path / "nmt-deen"
    shutil.copytree(DOCS / "study-runs" / "nmt-deen", archive)
    log = archive / "multi30k-deen-baseline" / "seed1" / "train.log.gz"
    text = gzip.decompress(log.read_bytes()).decode()
    best = min(float(x) for x in re.findall(r"valid on 'valid' subset \| loss ([0-9.]+) ", text))
    edited = text.replace(f"| loss {best:.3f} |", f"| loss {best - 0.1:.3f} |")
    assert edited != text
    log.write_bytes(gzip.compress(edited.encode()))
    doc = tmp_path / "results-nmt-deen.md"
    study_report.regenerate(archive, doc)
    assert doc.read_bytes() != committed("results-nmt-deen.md")
    assert f"| {best - 0.1:.3f} |" in doc.read_text()  # the best valid loss of that run


# ------------------------------------------------------------------------------ provenance

STUDY_DOCS = ["results-lm.md"] + [name for _, name in NMT]


@pytest.mark.parametrize("name", STUDY_DOCS)
def test_committed_provenance_is_relative_and_timeless(name):
    """The provenance beside a document: relative paths only, no time of writing (the same
    runs written the same way give the same file)."""
    f = DOCS / name.replace(".md", ".provenance.json")
    record = json.loads(f.read_text())
    assert set(record) <= {"runs_made_on", "written_from", "written_by"}, name
    assert record["written_from"].startswith("docs/study-runs/"), name
    assert record["written_by"].endswith(f" --doc docs/{name}"), name
    text = f.read_text()
    assert "/tmp" not in text and str(ROOT) not in text and "/work/" not in text, name
    assert not re.search(r"\b20\d\d-\d\d-\d\d|\bUTC\b", text), name


def test_regenerating_elsewhere_leaves_the_committed_provenance(tmp_path):
    committed_record = (DOCS / "results-lm.provenance.json").read_bytes()
    doc = tmp_path / "results-lm.md"
    study_report.regenerate(DOCS / "study-runs" / "lm", doc)
    assert (DOCS / "results-lm.provenance.json").read_bytes() == committed_record
    written = json.loads((tmp_path / "results-lm.provenance.json").read_text())
    record = json.loads(committed_record)
    assert written["runs_made_on"] == record["runs_made_on"]  # carried from the committed one
    assert written["written_from"] == record["written_from"]
    assert (
        written["written_by"] == f"scripts/study-report.py archive docs/study-runs/lm --doc {doc}"
    )


RESULTS = [
    "results-nmt.md",
    "results-nmt-deen.md",
    "results-lm.md",
    "compgen-results.md",
    "results-contextual-retrieval.md",
]


def test_no_time_machine_or_absolute_path_in_the_documents():
    for name in RESULTS:
        text = (DOCS / name).read_text()
        assert "/work/" not in text and str(ROOT) not in text, name
        assert " UTC" not in text and "## Machine" not in text, name
        assert "../shared" not in text, name


# Development history a reader has no use for: issue numbers, sessions of work, dates and times
# of runs (a run's date stays in the CSV or archive it is generated from, not in the document).
HISTORY = re.compile(
    r"\bissues?[- ]?#?\d|\bsessions?\b|\b20\d\d-\d\d-\d\d|\b\d\d:\d\d(:\d\d)?\b"
    r"|\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* 20\d\d\b",
    re.IGNORECASE,
)


@pytest.mark.parametrize("path", [f"docs/{n}" for n in RESULTS] + ["docs/results.md", "README.md"])
def test_no_development_history_in_the_documents(path):
    found = [
        f"{path}:{i}: {m.group(0)!r}"
        for i, line in enumerate((ROOT / path).read_text().splitlines(), 1)
        for m in [HISTORY.search(line)]
        if m
    ]
    assert not found, "\n".join(found)
