"""plugin_tools/cogs_tags.py and scripts/cogs-tags.py: the worked examples of
docs/official-code.md O1.7, the parent encodings, the two metrics, and the exact round trip
LF -> tags -> LF over every example of the COGS corpus (found by plugin_tools/corpora.py)."""

import gzip
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from plugin_tools import cogs_tags as ct

SCRIPT = ROOT / "scripts" / "cogs-tags.py"
_ = ""  # the empty tag

# (sentence, LF, abs parents, relative, attention, role, category, noun_type, verb_name)
E1 = (
    "Audrey wished to crawl .",
    "wish . agent ( x _ 1 , Audrey ) AND wish . xcomp ( x _ 1 , x _ 3 ) AND "
    "crawl . agent ( x _ 3 , Audrey )",
    [1, -1, -1, 1, -1],
    [1, 0, 0, -2, 0],
    [1, 1, 2, 1, 4],
    ["agent", _, _, "xcomp", _],
    ["PNOUN", "VERB", _, _, _],
    [_, _, _, _, _],
    [_, "wish", _, "crawl", _],
)
E2 = (
    "The girl offered the weapon beside a machine to a chicken .",
    "* girl ( x _ 1 ) ; * weapon ( x _ 4 ) ; offer . agent ( x _ 2 , x _ 1 ) AND "
    "offer . theme ( x _ 2 , x _ 4 ) AND offer . recipient ( x _ 2 , x _ 10 ) AND "
    "weapon . nmod . beside ( x _ 4 , x _ 7 ) AND machine ( x _ 7 ) AND chicken ( x _ 10 )",
    [-1, 2, -1, -1, 2, 4, -1, 5, -1, -1, 2, -1],
    [0, 1, 0, 0, -2, -1, 0, -2, 0, 0, -8, 0],
    [0, 2, 2, 3, 2, 4, 6, 5, 8, 9, 2, 11],
    [_, "agent", _, _, "theme", "PREP", _, "PP_NOUN", _, _, "recipient", _],
    [_, "CNOUN", "VERB", _, "CNOUN", _, _, "CNOUN", _, _, "CNOUN", _],
    [_, "DEF", _, _, "DEF", _, _, "INDEF", _, _, "INDEF", _],
    [_, _, "offer", _, _, _, _, _, _, _, _, _],
)
E3 = (
    "Emma believed that the sheep tried to run .",
    "* sheep ( x _ 4 ) ; believe . agent ( x _ 1 , Emma ) AND believe . ccomp ( x _ 1 , x _ 5 ) "
    "AND try . agent ( x _ 5 , x _ 4 ) AND try . xcomp ( x _ 5 , x _ 7 ) AND "
    "run . agent ( x _ 7 , x _ 4 )",
    [1, -1, -1, -1, 5, 1, -1, 5, -1],
    [1, 0, 0, 0, 1, -4, 0, -2, 0],
    [1, 1, 2, 3, 5, 1, 6, 5, 8],
    ["agent", _, _, _, "agent", "ccomp", _, "xcomp", _],
    ["PNOUN", "VERB", _, _, "CNOUN", "VERB", _, _, _],
    [_, _, _, _, "DEF", _, _, _, _],
    [_, "believe", _, _, _, "try", _, "run", _],
)
E0 = (
    "A rose was helped by a dog .",
    "rose ( x _ 1 ) AND help . theme ( x _ 3 , x _ 1 ) AND help . agent ( x _ 3 , x _ 6 ) AND "
    "dog ( x _ 6 )",
    [-1, 3, -1, -1, -1, -1, 3, -1],
    [0, 2, 0, 0, 0, 0, -3, 0],
    [0, 3, 2, 3, 4, 5, 3, 7],
    [_, "theme", _, _, _, _, "agent", _],
    [_, "CNOUN", _, "VERB", _, _, "CNOUN", _],
    [_, "INDEF", _, _, _, _, "INDEF", _],
    [_, _, _, "help", _, _, _, _],
)
EXAMPLES = {"E0": E0, "E1": E1, "E2": E2, "E3": E3}


def gold(ex):
    return ct.Tags(ex[2], *ex[5:])


@pytest.mark.parametrize("name", EXAMPLES)
def test_worked_examples(name):
    ex = EXAMPLES[name]
    sentence, lf = ex[:2]
    tags = ct.lf_to_tags(sentence, lf)
    assert tags == gold(ex)
    assert ct.tags_to_lf(sentence, tags) == lf
    assert ct.encode_parents(tags.parent, "relative") == ex[3]
    assert ct.encode_parents(tags.parent, "attention") == ex[4]
    for kind, values in (("absolute", ex[2]), ("relative", ex[3]), ("attention", ex[4])):
        assert ct.decode_parents(values, kind) == ex[2]


def test_e0_official_classes():
    parents = gold(E0).parent
    assert ct.parent_classes(parents, "absolute", 61) == [1, 5, 1, 1, 1, 1, 5, 1]
    assert ct.parent_classes(parents, "attention", 61) == [1, 4, 3, 4, 5, 6, 4, 8]
    assert ct.parent_classes(parents, "relative", 61) == [61, 63, 61, 61, 61, 61, 58, 61]


def test_e3_controller_agent_is_not_stored():
    tags = gold(E3)
    # five role clauses in the LF, four role tags: `run . agent ( x _ 7 , x _ 4 )` comes back
    # from the last agent of run's parent (tried), the sheep at 4
    assert E3[1].count(" . ") == 5 and sum(r != _ for r in tags.role) == 4
    rows = [list(r) for r in tags]
    rows[0][0] = 5  # Emma also an agent of `tried`, before the sheep: the last one (4) wins
    assert "run . agent ( x _ 7 , x _ 4 )" in ct.tags_to_lf(E3[0], ct.Tags(*rows))
    rows[0][4], rows[1][4] = 1, "theme"  # now Emma is the only agent of `tried`
    assert "run . agent ( x _ 7 , Emma )" in ct.tags_to_lf(E3[0], ct.Tags(*rows))
    rows[0][0] = 1  # and now `tried` has no agent
    with pytest.raises(ct.TagError, match="no agent"):
        ct.tags_to_lf(E3[0], ct.Tags(*rows))


def test_primitives_are_tagged_not_rebuilt():
    lam2 = "LAMBDA a . LAMBDA e . inflate . theme ( e , a )"
    assert ct.lf_to_tags("inflate", lam2, "primitive") == ct.Tags(
        [-1], [_], ["VERB"], [_], ["inflate"]
    )
    noun = ct.lf_to_tags("ball", "LAMBDA a . ball ( a )", "primitive")
    assert noun.category == ["CNOUN"] and noun.noun_type == [_]  # no DEF/INDEF for primitives
    assert ct.lf_to_tags("Paula", "Paula", "primitive").category == ["PNOUN"]
    with pytest.raises(ct.TagError):
        ct.tags_to_lf("ball", noun)


def test_unrepresentable_lfs_raise():
    # a proper-name argument that occurs twice has no single child position
    with pytest.raises(ct.TagError, match="occurs 2 times"):
        ct.lf_to_tags(
            "Emma saw Emma .", "see . agent ( x _ 1 , Emma ) AND see . theme ( x _ 1 , Emma )"
        )
    # a preposition missing between its nouns
    with pytest.raises(ct.TagError, match="0 tokens 'in'"):
        ct.lf_to_tags(
            "A cake on a TV .",
            "cake ( x _ 1 ) AND cake . nmod . in ( x _ 1 , x _ 4 ) AND tv ( x _ 4 )",
        )


def test_tv_is_written_lower_case_in_nmod_and_noun_clauses():
    sentence = "Emma saw a TV in a room ."
    lf = (
        "see . agent ( x _ 1 , Emma ) AND see . theme ( x _ 1 , x _ 3 ) AND tv ( x _ 3 ) AND "
        "tv . nmod . in ( x _ 3 , x _ 6 ) AND room ( x _ 6 )"
    )
    tags = ct.lf_to_tags(sentence, lf)
    assert tags.category[3] == "CNOUN"  # TV is not a proper name
    assert ct.tags_to_lf(sentence, tags) == lf


def test_metrics():
    sentence, lf = E2[:2]
    g = gold(E2)
    assert ct.tags_exact_match(g, g) and ct.lf_exact_match(sentence, g, lf)

    def changed(row, i, value):
        rows = [list(r) for r in g]
        rows[ct.Tags._fields.index(row)][i] = value
        return ct.Tags(*rows)

    # the category row is not read by the inverse: LF right, official tag metric wrong
    p = changed("category", 2, _)
    assert ct.lf_exact_match(sentence, p, lf) and not ct.tags_exact_match(p, g)
    # a wrong determiner changes the LF
    p = changed("noun_type", 7, "DEF")
    assert not ct.lf_exact_match(sentence, p, lf) and not ct.tags_exact_match(p, g)
    # unreadable rows count as wrong, never as an exception
    for row, i, value in (("parent", 1, -1), ("parent", 1, 1), ("parent", 7, 40)):
        p = changed(row, i, value)
        assert not ct.lf_exact_match(sentence, p, lf)
    assert not ct.lf_exact_match(sentence, ct.Tags(*(r[:-1] for r in g)), lf)  # short rows


def test_file_strings_round_trip():
    for ex in EXAMPLES.values():
        for kind in ct.PARENT_KINDS:
            rows = ct.tags_to_strings(gold(ex), kind)
            assert all(
                len(v) == len(ex[2]) and all(" " not in s and s for s in v) for v in rows.values()
            )
            assert ct.tags_from_strings(rows, kind) == gold(ex)
    with pytest.raises(ct.TagError):
        ct.decode_parents([0, 5], "relative")


@pytest.mark.parametrize("fname", ["train.tsv", "dev.tsv", "test.tsv", "gen.tsv.gz"])
def test_full_round_trip(shared_data, fname):
    r = ct.round_trip(shared_data / "cogs" / fname)
    expected = {"train.tsv": 24155, "dev.tsv": 3000, "test.tsv": 3000, "gen.tsv.gz": 21000}
    assert r["total"] == expected[fname]
    assert r["failed"] == []
    assert r["exact"] + r["primitive"] == r["total"]
    n_prim = 143 if fname == "train.tsv" else 0
    assert r["primitive"] == n_prim


def cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)


def test_cli_files_and_check(tmp_path):
    tsv = tmp_path / "mini.tsv"
    tsv.write_text(
        "".join(f"{ex[0]}\t{ex[1]}\tin_distribution\n" for ex in (E0, E1, E2, E3))
        + "ball\tLAMBDA a . ball ( a )\tprimitive\n"
    )
    proc = cli("dev=" + str(tsv), "--outdir", tmp_path / "out", "--parent", "relative")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    src = (out / "dev.src").read_text().splitlines()
    rows = {
        row: [line.split() for line in (out / f"dev.{suffix}").read_text().splitlines()]
        for row, suffix in ct.FILE_SUFFIX.items()
    }
    assert src[2] == E2[0] and (out / "dev.lf").read_text().splitlines()[2] == E2[1]
    assert rows["parent"][2] == [str(v) for v in E2[3]]  # relative offsets
    assert rows["role"][3] == ["agent", "_", "_", "_", "agent", "ccomp", "_", "xcomp", "_"]
    for k, ex in enumerate((E0, E1, E2, E3)):
        tags = ct.tags_from_strings({r: v[k] for r, v in rows.items()}, "relative")
        assert ct.tags_to_lf(src[k], tags) == ex[1]
    assert (out / "dev.category").read_text().splitlines()[-1] == "primitive"

    proc = cli(tsv, "--check")
    assert proc.returncode == 0 and "4 exact round trips, 1 primitive" in proc.stdout

    bad = tmp_path / "bad.tsv"
    bad.write_text(f"{E0[0]}\t{E0[1]}\tx\nEmma saw Emma .\tsee . agent ( x _ 1 , Emma )\tx\n")
    proc = cli(bad, "--check")
    assert proc.returncode == 1 and "1 failed" in proc.stdout and f"{bad}:2:" in proc.stdout
    proc = cli(bad, "--outdir", tmp_path / "o2")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{bad}:2" in lines[0]


def test_cli_one_line_errors(tmp_path):
    for args, word in (
        ([tmp_path / "none.tsv", "--check"], "none.tsv"),
        (["--raw-dir", tmp_path / "nodir", "--check"], "--raw-dir"),
        ([tmp_path / "none.tsv"], "none.tsv"),
    ):
        proc = cli(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1 and word in lines[0], proc.stderr
    (tmp_path / "t.tsv").write_text("a\tb\n")
    proc = cli(tmp_path / "t.tsv", "--check")
    assert proc.returncode != 0 and "t.tsv:1" in proc.stderr and "3 tab-separated" in proc.stderr
    assert "--parent" in cli("--help").stdout
    proc = cli("--parent", "nested", "--check")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "--parent" in lines[0], proc.stderr


def test_cli_reads_the_corpus_where_the_corpora_lookup_finds_it(tmp_path):
    """With no INPUT the COGS files are the corpus that plugin_tools.corpora finds
    ($FAIRSEQ_PLUGINS_DATA first); when it finds none, one line says where it looked."""
    env = {**os.environ, "FAIRSEQ_PLUGINS_DATA": str(tmp_path / "data")}
    check = [sys.executable, SCRIPT, "--check"]
    proc = subprocess.run(check, capture_output=True, text=True, env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert "corpora missing: cogs" in lines[0] and str(tmp_path / "data") in lines[0]
    cogs = tmp_path / "data" / "cogs"
    cogs.mkdir(parents=True)
    examples = {"train.tsv": E0, "dev.tsv": E1, "test.tsv": E2}
    for name, ex in examples.items():
        (cogs / name).write_text(f"{ex[0]}\t{ex[1]}\tin_distribution\n")
    with gzip.open(cogs / "gen.tsv.gz", "wt") as f:
        f.write(f"{E3[0]}\t{E3[1]}\tin_distribution\n")
    (cogs / "gen_cases_to_paper_sections.json").write_text("{}\n")
    proc = subprocess.run(check, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    for name in (*examples, "gen.tsv.gz"):
        assert str(cogs / name) in proc.stdout
