"""Sequence-level accuracy: plugin_tools.seq_accuracy and scripts/seq-accuracy.py."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from plugin_tools import seq_accuracy as sa

SCRIPT = ROOT / "scripts" / "seq-accuracy.py"

# fairseq-generate output, ids out of order, with n-best, D-/P- and logging lines.
GENERATE = """\
2026-01-01 00:00:00 | INFO | fairseq_cli.generate | loading model(s)
S-2\tc b a
T-2\ta b c
H-2\t-0.10\ta b c
H-2\t-0.90\ta b b
D-2\t-0.10\ta b c
P-2\t-0.1 -0.2 -0.3 -0.1
S-0\tx y
T-0\ty x
H-0\t-0.20\ty x z
D-0\t-0.20\ty x z
S-1\t1 2
T-1\t<<unk>> 1
H-1\t-0.30\t<unk> 1
S-3\tq
T-3\tq  q
H-3\t-0.05\tq q
Generate test with beam=2: BLEU4 = 10.0
"""


def test_score_exact_match_and_whitespace():
    r = sa.score(["a b c", "a  b ", "a b", ""], ["a b c", "a b", "a b c", ""])
    assert (r["correct"], r["total"]) == (3, 4)
    assert r["accuracy"] == pytest.approx(0.75)
    assert sa.score(["a b"], ["a c"])["accuracy"] == 0.0  # one wrong token: wrong
    assert sa.score(["a b c"], ["a b"])["accuracy"] == 0.0  # a longer output is wrong


def test_score_categories():
    r = sa.score(["1", "2", "x", "4"], ["1", "2", "3", "4"], ["p", "q", "p", "p"])
    assert r["categories"] == {
        "p": {"accuracy": pytest.approx(2 / 3), "correct": 2, "total": 3},
        "q": {"accuracy": 1.0, "correct": 1, "total": 1},
    }
    assert list(r["categories"]) == ["p", "q"]  # first-seen order


def test_score_rejects_misaligned_input():
    with pytest.raises(ValueError, match="2 hypotheses but 1"):
        sa.score(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="category"):
        sa.score(["a"], ["a"], ["c1", "c2"])
    with pytest.raises(ValueError, match="nothing"):
        sa.score([], [])


def test_parse_generate_output():
    hyps, refs, srcs = sa.parse_generate_output(GENERATE.splitlines())
    assert hyps == {0: "y x z", 1: "<unk> 1", 2: "a b c", 3: "q q"}  # first H of id 2
    assert refs[1] == "<<unk>> 1" and srcs[0] == "x y"
    h, r = sa.align(hyps, refs)
    assert sa.score(h, r)["correct"] == 2  # ids 2 and 3; <unk> never matches <<unk>>


def test_align_missing_hypothesis():
    with pytest.raises(ValueError, match="1 of 2 references have no hypothesis"):
        sa.align({0: "a"}, {0: "a", 1: "b"})
    h, r = sa.align({0: "a"}, {0: "a", 1: "b"}, missing_as_wrong=True)
    assert sa.score(h, r)["correct"] == 1 and len(h) == 2
    with pytest.raises(ValueError, match="not 0..N-1"):
        sa.align({0: "a"}, {0: "a", 2: "b"})


def run_cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)


def test_cli_generate_output(tmp_path):
    gen = tmp_path / "gen.out"
    gen.write_text(GENERATE)
    proc = run_cli(gen, "--json", tmp_path / "a.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "accuracy 0.5000 (2/4)"
    assert json.loads((tmp_path / "a.json").read_text())["correct"] == 2
    # --ref replaces the T- lines (raw references: here the <unk> example is right)
    ref = tmp_path / "ref"
    ref.write_text("y x\n<unk> 1\na b c\nq\n")
    cats = tmp_path / "cats"
    cats.write_text("short\nshort\nlong\nshort\n")
    proc = run_cli(gen, "--ref", ref, "--categories", cats, "--json", tmp_path / "b.json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "b.json").read_text())
    assert (result["correct"], result["total"]) == (2, 4)
    assert result["categories"]["long"]["accuracy"] == 1.0
    assert result["categories"]["short"]["correct"] == 1
    assert "  long\t1.0000\t(1/1)" in proc.stdout


def test_cli_plain_files_and_errors(tmp_path):
    hyp, ref = tmp_path / "hyp", tmp_path / "ref"
    hyp.write_text("a b\nc\nd e f\n")
    ref.write_text("a b\nc d\nd e f\n")
    proc = run_cli(hyp, "--ref", ref)
    assert proc.returncode == 0 and proc.stdout.startswith("accuracy 0.6667 (2/3)")
    for args, word in (
        ([hyp], "--ref"),
        ([tmp_path / "nope", "--ref", ref], "no such file"),
        ([hyp, "--ref", ref, "--categories", hyp.with_name("x")], "--categories"),
    ):
        proc = run_cli(*args)
        assert proc.returncode != 0 and word in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    ref.write_text("a b\n")
    proc = run_cli(hyp, "--ref", ref)
    assert proc.returncode != 0 and "3 hypotheses but 1 references" in proc.stderr
