"""The notebook path's COGS gen lines scored apart by whether the notebook cut their targets
(studies/cogs_target_cut.py): labels from the corpus, counts from the generations, the CSV kept
when the run folders are gone, and the tables' numbers."""

import gzip
import json

import pytest

from studies import cogs_target_cut as cut

FORMS = ["a b c d", "e f", "g h i j k", "l m"]
CATEGORIES = ["cat1", "cat1", "cat2", "cat2"]


def notebook_run(tmp_path, hyps):
    """A notebook-path grid folder: the corpus (gz), data raw/ whose targets cut lines 0 and 2
    to their last 2 tokens, and a run's final generations HYPS (id -> text)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with gzip.open(corpus / "gen.tsv.gz", "wt") as f:
        f.writelines(f"src{i}\t{form}\t{c}\n" for i, (form, c) in enumerate(zip(FORMS, CATEGORIES)))
    raw = tmp_path / "out" / "data" / "cogs-va500-nb-s1" / "raw"
    raw.mkdir(parents=True)
    targets = [" ".join(f.split()[-2:]) for f in FORMS]
    (raw / "gen.tgt").write_text("\n".join(targets) + "\n")
    (raw / "gen.category").write_text("\n".join(CATEGORIES) + "\n")
    meta = {"source": str(corpus), "categories": "gen.category", "eval_split": "gen"}
    (raw / "meta.json").write_text(json.dumps(meta))
    run = tmp_path / "out" / "runs" / "compgen_abs" / "cogs-va500-nb" / "seed1"
    run.mkdir(parents=True)
    lines = [f"T-{i}\t{t}\nH-{i}\t-0.1\t{hyps[i]}\n" for i, t in enumerate(targets) if i in hyps]
    (run / "generate-last.out").write_text("".join(lines))
    return raw, run


def test_labels_counts_and_a_csv_that_outlives_the_run_folders(tmp_path):
    # line 0 (cut) right, line 1 (whole) right, line 2 (cut) wrong, line 3 (whole) missing
    raw, run = notebook_run(tmp_path, {0: "c d", 1: "e f", 2: "x y"})
    targets = (raw / "gen.tgt").read_text().splitlines()
    assert cut.line_labels(raw, targets) == ["cat1|cut", "cat1|whole", "cat2|cut", "cat2|whole"]
    assert cut.run_counts(run, raw) == {
        ("cat1", "cut"): (1, 1),
        ("cat1", "whole"): (1, 1),
        ("cat2", "cut"): (0, 1),
        ("cat2", "whole"): (0, 1),
    }
    rows = [{"preset": "compgen_abs", "task": "cogs", "seed": "1", "accuracy": 0.25}]
    csv_path = tmp_path / "cut.csv"
    written = cut.sync(rows, tmp_path / "out" / "runs", csv_path)
    assert len(written) == 4 and csv_path.is_file()
    # the run folders gone: the CSV's rows are kept, for the recorded runs only
    kept = cut.sync(rows, None, csv_path)
    assert [(r["category"], r["target"], r["correct"]) for r in kept] == [
        ("cat1", "cut", "1"),
        ("cat1", "whole", "1"),
        ("cat2", "cut", "0"),
        ("cat2", "whole", "0"),
    ]
    assert cut.sync([], None, csv_path) == []

    head, table = cut.summary_table(kept, rows, ["compgen_abs", "compgen_rel2_eb_c"])
    assert len(table) == 1 and len(head) == len(table[0])
    # all lines 2/4, whole-target lines 1/2, cut lines 1/2; ours 0.25 on the same seed
    assert table[0][1:] == ["1", "0.500", "0.500 (0.500)", "0.500 (0.500)", "0.250", "2 / 2"]

    ours = [
        {"task": "cogs", "preset": "compgen_abs", "seed": "1", "category": "cat1", "correct": 0,
         "total": 100},
        {"task": "cogs", "preset": "compgen_abs", "seed": "2", "category": "cat1", "correct": 90,
         "total": 100},
    ]  # fmt: skip
    _, per = cut.category_table(kept, ours, "compgen_abs")
    assert per == [
        ["cat1", "50%", "1.000", "1.000", "0.000"],
        ["cat2", "50%", "0.000", "0.000", "–"],
    ]


def test_a_corpus_that_does_not_match_the_targets_is_an_error(tmp_path):
    raw, _ = notebook_run(tmp_path, {})
    with pytest.raises(ValueError, match="differ in length"):
        cut.line_labels(raw, ["only one line"])
