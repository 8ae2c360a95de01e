"""scripts/compgen-data.py: the options of the official generators (docs/official-code.md O4)
on small seeded samples, and the CFQ loader on a hand-written sample in the release's format."""

import json
import re
import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT, read_split

from plugin_tools import compgen_data as cd

SCRIPT = ROOT / "scripts" / "compgen-data.py"
SIZES = ["--train", "300", "--valid", "40", "--test", "40", "--seed", "5"]


def make(tmp_path, task, *opts, name=None):
    out = tmp_path / (name or "_".join([task, *opts]).replace("-", ""))
    cd.main([task, str(out), *SIZES, *opts])
    return out


def splits(d, names=("train", "valid", "test")):
    return {s: read_split(d, s) for s in names}


def cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("task,pad", [("add", "0"), ("addneg", "#")])
def test_alignment_tokens(tmp_path, task, pad):
    plain = splits(make(tmp_path, task))
    marked_dir = make(tmp_path, task, "--alignment-tokens")
    marked = splits(marked_dir)
    markers = [f"P{k}" for k in range(12, 0, -1)]
    for name in plain:
        assert len(marked[name]) == len(plain[name])
        for (src, tgt), (psrc, ptgt) in zip(marked[name], plain[name]):
            assert tgt == ptgt  # the sum has no markers
            sep = src.index("[SEP]")
            for operand in (src[:sep], src[sep + 1 :]):
                assert operand[1::2] == markers  # every operand token, counting down
            assert [t for t in src if not re.fullmatch(r"P\d+", t)] == psrc  # same numbers
    meta = json.loads((marked_dir / "meta.json").read_text())
    assert meta["options"] == {"alignment_tokens": True}
    assert "options" not in json.loads((tmp_path / task / "meta.json").read_text())


@pytest.mark.parametrize("variant", [1, 2, 3])
def test_dup_variants(tmp_path, variant):
    data = splits(make(tmp_path, "dup", "--dup-variant", str(variant)))
    for name, pairs in data.items():
        ns, lengths = Counter(), set()
        for src, tgt in pairs:
            sep = src.index("[SEP]")
            head, digits = src[:sep], src[sep + 1 :]
            if variant == 1:
                assert len(head) == 1
                n = int(head[0])
            else:
                assert set(head) == {"1"}
                n = len(head)
            assert tgt == digits * n
            assert all(t in cd.DIGITS for t in digits)
            ns[n] += 1
            lengths.add(len(digits))
        hard = name == "test"
        assert (min(lengths) >= 17) if hard else (max(lengths) <= 16)
        want = {5, 6} if hard and variant == 3 else {1, 2, 3, 4}
        assert set(ns) == want or (name == "valid" and set(ns) <= want)


def test_dup_variant_zero_is_the_paper_task(tmp_path):
    a = make(tmp_path, "dup")
    b = make(tmp_path, "dup", "--dup-variant", "0", name="dup0")
    for f in ("train.src", "train.tgt", "test.src", "meta.json"):
        assert (a / f).read_bytes() == (b / f).read_bytes()


def test_reverse_cart(tmp_path):
    plain = splits(make(tmp_path, "cart"))
    rev = splits(make(tmp_path, "cart", "--reverse-cart"))
    assert rev["train"] == [(t, s) for s, t in plain["train"]]  # same draws, swapped
    for name, pairs in rev.items():
        lo, hi = (7, 8) if name == "test" else (1, 6)
        for src, tgt in pairs:
            sep = tgt.index("[SEP]")
            s1, s2 = tgt[:sep], tgt[sep + 1 :]
            assert lo <= len(s1) <= hi and lo <= len(s2) <= hi
            assert " ".join(src).split(" [SEP] ") == [f"{x} {y}" for y in s2 for x in s1]
        srcs = [" ".join(s) for s, _ in pairs]
        if name != "train":
            assert len(set(srcs)) == len(srcs)


def test_instance_pairs():
    steps = [["a"], ["b", "c"], ["d"]]
    assert cd.instance_pairs(steps, keep_all_steps=True) == [
        (["a"], ["b", "c"]),
        (["b", "c"], ["d"]),
    ]
    assert cd.instance_pairs(steps) == [(["a"], ["d"])]
    two = [["jump", "twice"], ["I_JUMP", "I_JUMP"]]
    assert cd.instance_pairs(two, True) == cd.instance_pairs(two, False) == [tuple(two)]
    with pytest.raises(ValueError):
        cd.instance_pairs([["a"]])


def test_scan_options(shared_data, tmp_path):
    base, keep, mapped = tmp_path / "base", tmp_path / "keep", tmp_path / "mapped"
    raw = ["--raw-dir", str(shared_data / "scan")]
    cd.main(["scan-length", str(base), *raw])
    cd.main(["scan-length", str(keep), *raw, "--keep-all-steps"])
    cd.main(["scan-length", str(mapped), *raw, "--map-output-to-input"])
    for f in ("train.src", "train.tgt", "valid.src", "test.tgt"):  # SCAN: two steps, same data
        assert (keep / f).read_bytes() == (base / f).read_bytes()
    words = {"I_WALK": "walk", "I_JUMP": "jump", "I_LOOK": "look", "I_RUN": "run"}
    for name in ("train", "valid", "test"):
        b, m = read_split(base, name), read_split(mapped, name)
        assert [s for s, _ in m] == [s for s, _ in b]
        assert [t for _, t in m] == [[words.get(x, x) for x in t] for _, t in b]
        vocab = {x for _, t in m for x in t}
        assert not vocab & set(words) and vocab <= {"walk", "jump", "look", "run"} | {
            "I_TURN_LEFT",
            "I_TURN_RIGHT",
        }
    assert json.loads((mapped / "meta.json").read_text())["options"] == {
        "map_output_to_input": True
    }


@pytest.mark.parametrize(
    "args,word",
    [
        (["dup", "--alignment-tokens"], "--alignment-tokens"),
        (["add", "--dup-variant", "2"], "--dup-variant"),
        (["dup", "--dup-variant", "4"], "--dup-variant 4"),
        (["reverse", "--reverse-cart"], "--reverse-cart"),
        (["cogs", "--map-output-to-input"], "--map-output-to-input"),
        (["cart", "--keep-all-steps"], "--keep-all-steps"),
        (["scan-length", "--cfq-im"], "--cfq-im"),
    ],
)
def test_options_refuse_other_tasks(tmp_path, args, word):
    proc = cli(args[0], tmp_path / "out", *args[1:])
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and word in lines[0], proc.stderr
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------------------- CFQ

CFQ_EXAMPLES = [
    (
        "Did a person marry a cinematographer , influence M1 , and influence M2",
        "SELECT count(*) WHERE {\n?x0 a ns:people.person .\n"
        "?x0 ns:influence.influence_node.influenced M1 .\n"
        "?x0 ns:influence.influence_node.influenced M2 .\n"
        "?x0 ns:people.person.spouse_s ?x1 .\n?x1 a ns:film.cinematographer .\n"
        "FILTER ( ?x0 != ?x1 )\n}",
    ),
    ("Did M0 direct M1?", "SELECT count(*) WHERE {\nM1 ns:film.film.directed_by M0\n}"),
    (
        "What film did M1 and M2 write?",
        "SELECT DISTINCT ?x0 WHERE {\n?x0 a ns:film.film .\n?x0 ns:film.film.written_by M1 .\n"
        "?x0 ns:film.film.written_by M2\n}",
    ),
    ("Was M0 's spouse M1?", "SELECT count(*) WHERE {\nM0 ns:people.person.spouse_s M1\n}"),
    ("Who directed M3?", "SELECT DISTINCT ?x0 WHERE {\n?x0 ns:film.director.film M3\n}"),
    ("Did M2 edit M0?", "SELECT count(*) WHERE {\nM0 ns:film.film.edited_by M2\n}"),
]


def cfq_release(root, dev=True, name="mcd1"):
    rel = root / "cfq"
    (rel / "splits").mkdir(parents=True)
    data = [
        {"questionPatternModEntities": q, "sparqlPatternModEntities": s, "question": "unused"}
        for q, s in CFQ_EXAMPLES
    ]
    (rel / "dataset.json").write_text(json.dumps(data))
    idx = {"trainIdxs": [1, 3, 4, 5], "testIdxs": [0, 2]}
    if dev:
        idx["devIdxs"] = [2]
    (rel / "splits" / f"{name}.json").write_text(json.dumps(idx))
    return root


def test_cfq_loader(tmp_path):
    raw = cfq_release(tmp_path / "raw")
    out = tmp_path / "plain"
    cd.main(["cfq-mcd1", str(out), "--raw-dir", str(raw)])
    data = splits(out)
    assert [len(v) for v in data.values()] == [4, 1, 2]
    src, tgt = data["test"][1]
    assert src == "What film did M1 and M2 write ?".split()
    assert " ".join(tgt) == (
        "SELECT DISTINCT ?x0 WHERE { ?x0 a film.film . ?x0 film.film.written_by M1 . "
        "?x0 film.film.written_by M2 }"
    )
    meta = json.loads((out / "meta.json").read_text())
    assert meta["eval_split"] == "test" and meta["train_overlap"] == {"valid": 0, "test": 0}

    im_out = tmp_path / "im"
    cd.main(["cfq-mcd1", str(im_out), "--raw-dir", str(raw), "--cfq-im"])
    im_data = splits(im_out)
    assert [s for s, _ in im_data["test"]] == [s for s, _ in data["test"]]
    assert " ".join(im_data["test"][1][1]) == (
        "SELECT DISTINCT ?x0 WHERE { ?x0 a film.film . ?x0 film.film.written_by { M1 , M2 } }"
    )
    for name in data:
        queries = (im_out / f"{name}.sparql").read_text().splitlines()
        assert queries == [" ".join(t) for _, t in data[name]]
        assert [cd.cfq_im.from_im(t) for _, t in im_data[name]] == queries
    meta = json.loads((im_out / "meta.json").read_text())
    assert meta["options"] == {"cfq_im": True} and meta["cfq_im_segments"]["kept"] == 0


def test_cfq_loader_without_dev_and_errors(tmp_path):
    raw = cfq_release(tmp_path / "raw", dev=False, name="random_split")
    out = tmp_path / "out"
    cd.main(["cfq-random_split", str(out), "--raw-dir", str(raw), "--valid", "1"])
    data = splits(out)
    assert (len(data["train"]), len(data["valid"]), len(data["test"])) == (3, 1, 2)

    for args, word in (
        (["cfq-mcd1", tmp_path / "x", "--raw-dir", tmp_path], "dataset.json"),
        (["cfq-mcd2", tmp_path / "x", "--raw-dir", raw], "mcd2.json"),
    ):
        proc = cli(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1 and word in lines[0], proc.stderr
    (raw / "cfq" / "splits" / "bad.json").write_text(
        json.dumps({"trainIdxs": [0, 99], "testIdxs": []})
    )
    proc = cli("cfq-bad", tmp_path / "x", "--raw-dir", raw)
    assert proc.returncode != 0 and "index 99" in proc.stderr
