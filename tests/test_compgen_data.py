"""scripts/compgen-data.py: generator formats, lengths, splits, determinism; SCAN/COGS loaders on
the real files (tests/conftest.py finds them); PCFG's one-line error when its files are absent."""

import gzip
import json
import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT, corpora, read_split

from plugin_tools import compgen_data as cd

SCRIPT = ROOT / "scripts" / "compgen-data.py"
SMALL_ARGS = ["--train", "400", "--valid", "60", "--test", "60"]


def cli(*args, check=True, env=None):
    proc = subprocess.run(
        [sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True, env=env
    )
    if check and proc.returncode:
        raise AssertionError(proc.stderr)
    return proc


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    base = tmp_path_factory.mktemp("gen")
    for task in cd.ALGORITHMIC:
        cd.main([task, str(base / task), *SMALL_ARGS, "--seed", "7"])
    return base


def check_splits(d, n=(400, 60, 60)):
    train, valid, test = (read_split(d, s) for s in ("train", "valid", "test"))
    assert (len(train), len(valid), len(test)) == n
    train_src = {" ".join(s) for s, _ in train}
    for held in (valid, test):
        srcs = [" ".join(s) for s, _ in held]
        assert len(set(srcs)) == len(srcs), "held-out sources repeat"
        assert not set(srcs) & train_src, "held-out source also in train"
    meta = json.loads((d / "meta.json").read_text())
    assert meta["splits"] == {"train": n[0], "valid": n[1], "test": n[2]}
    assert meta["eval_split"] == "test"
    return train, valid, test


def _operand(tokens, pad):
    """Integer value of a padded operand; checks the padding layout."""
    body = tokens
    while body and body[0] == pad and len(body) > 1:
        body = body[1:]
    sign = -1 if body[0] == "-" else 1
    digits = body[1:] if sign < 0 else body
    assert digits and all(t.isdigit() and len(t) == 1 for t in digits), tokens
    if pad == "#":  # no leading zeros after the padding
        assert len(digits) == 1 or digits[0] != "0", tokens
    return sign * int("".join(digits)), len(str(int("".join(digits))))


@pytest.mark.parametrize("task,pad", [("add", "0"), ("addneg", "#")])
def test_addition_format_and_values(generated, task, pad):
    train, valid, test = check_splits(generated / task)
    negatives = total = 0
    for split, (lo, hi) in ((train, (1, 8)), (valid, (1, 8)), (test, (9, 10))):
        for src, tgt in split:
            assert len(src) == 25 and src[12] == "[SEP]" and len(tgt) == 12
            (a, la), (b, lb) = _operand(src[:12], pad), _operand(src[13:], pad)
            assert _operand(tgt, pad)[0] == a + b
            for value, n_digits in ((a, la), (b, lb)):
                assert lo <= n_digits <= hi or (value == 0 and lo == 1)
                negatives += value < 0
                total += 1
            if task == "add":
                assert set(src) <= set(cd.DIGITS) | {"[SEP]"} and set(tgt) <= set(cd.DIGITS)
    if task == "add":
        assert negatives == 0
    else:
        assert 0.18 < negatives / total < 0.32  # 25% negative operands


@pytest.mark.parametrize("task", ["reverse", "dup"])
def test_reverse_dup(generated, task):
    train, valid, test = check_splits(generated / task)
    for split, (lo, hi) in ((train, (1, 16)), (valid, (1, 16)), (test, (17, 24))):
        lengths = set()
        for src, tgt in split:
            assert set(src) <= set(cd.DIGITS)
            assert tgt == (src[::-1] if task == "reverse" else src + src)
            lengths.add(len(src))
        assert min(lengths) >= lo and max(lengths) <= hi
    assert {len(s) for s, _ in train} == set(range(1, 17))  # the whole range is drawn
    assert {len(s) for s, _ in test} == set(range(17, 25))


def test_cart(generated):
    train, valid, test = check_splits(generated / "cart")
    for split, (lo, hi) in ((train, (1, 6)), (valid, (1, 6)), (test, (7, 8))):
        for src, tgt in split:
            sep = src.index("[SEP]")
            s1, s2 = src[:sep], src[sep + 1 :]
            assert lo <= len(s1) <= hi and lo <= len(s2) <= hi
            assert set(s1) <= set(cd.DIGITS) and set(s2) <= set(cd.LETTERS)
            pairs = " ".join(tgt).split(" [SEP] ")
            assert pairs == [f"{x} {y}" for y in s2 for x in s1]  # paper: `1 a [SEP] 2 a ...`


def test_inters(generated):
    train, valid, test = check_splits(generated / "inters")
    vocab = set(cd.INTERS_VOCAB)
    assert len(vocab) == 100 and {"a0", "j9"} <= vocab
    for split, (lo, hi) in ((train, (1, 16)), (valid, (1, 16)), (test, (17, 24))):
        labels = Counter()
        for src, tgt in split:
            sep = src.index("[SEP]")
            a, b = src[:sep], src[sep + 1 :]
            assert len(set(a)) == len(a) and len(set(b)) == len(b), "sets repeat a token"
            assert lo <= len(a) <= hi and lo <= len(b) <= hi
            assert set(a) | set(b) <= vocab
            assert tgt == ["true" if set(a) & set(b) else "false"]
            labels[tgt[0]] += 1
        assert abs(labels["true"] - labels["false"]) <= 1  # balanced


@pytest.mark.parametrize("task", cd.ALGORITHMIC)
def test_deterministic_and_seeded(generated, tmp_path, task):
    cd.main([task, str(tmp_path / "again"), *SMALL_ARGS, "--seed", "7"])
    cd.main([task, str(tmp_path / "other"), *SMALL_ARGS, "--seed", "8"])
    for name in ("train.src", "train.tgt", "valid.src", "test.src", "test.tgt"):
        first = (generated / task / name).read_bytes()
        assert (tmp_path / "again" / name).read_bytes() == first
        if name.endswith(".src"):
            assert (tmp_path / "other" / name).read_bytes() != first


@pytest.mark.parametrize("task", cd.ALGORITHMIC)
def test_default_sizes(task):
    counts, _ = cd.resolve_counts(task)
    n_test = 512 if task in ("add", "addneg") else 1024
    assert counts == {"train": 200_000, "valid": n_test, "test": n_test}
    assert cd.resolve_counts(task, small=True)[0] == {"train": 1000, "valid": 100, "test": 100}
    assert cd.resolve_counts(task, train=50, test=7)[0] == {"train": 50, "valid": 7, "test": 7}


def test_cli_small_and_bad_options(tmp_path):
    cli("dup", tmp_path / "d", "--small")
    assert len((tmp_path / "d" / "train.src").read_text().splitlines()) == 1000
    for bad, word in (
        (["nosuchtask", tmp_path / "x"], "unknown task"),
        (["dup", tmp_path / "x", "--test", "0"], "--test"),
        (["scan-length-cutoff-41", tmp_path / "x"], "cutoff 41"),
        (["cogs", tmp_path / "x", "--raw-dir", tmp_path / "none"], "--raw-dir"),
    ):
        proc = cli(*bad, check=False)
        assert proc.returncode != 0
        assert word in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------ SCAN, COGS, PCFG


def scan_file(*parts):
    pairs = []
    for line in (corpora.corpus_dir("scan") / "/".join(parts)).read_text().splitlines():
        src, tgt = line[4:].split(" OUT: ")
        pairs.append((src, tgt))
    return pairs


def joined(pairs):
    return [(" ".join(s), " ".join(t)) for s, t in pairs]


def test_scan_length(scan_data, tmp_path):
    cli("scan-length", tmp_path)
    train, valid, test = (joined(read_split(tmp_path, s)) for s in ("train", "valid", "test"))
    assert sorted(train + valid) == sorted(scan_file("length_split", "tasks_train_length.txt"))
    assert test == scan_file("length_split", "tasks_test_length.txt")
    assert len(valid) == 1699  # 10% held out
    assert not {s for s, _ in train} & {s for s, _ in test + valid}
    assert max(len(t.split()) for _, t in train) <= 22 < min(len(t.split()) for _, t in test)


def test_scan_addjump_has_no_test_here(scan_data, tmp_path):
    proc = cli("scan-addjump", tmp_path)
    assert "held out" in proc.stderr and "no test split" in proc.stderr
    assert not (tmp_path / "test.src").exists()
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["eval_split"] is None and set(meta["splits"]) == {"train", "valid"}
    train, valid = (read_split(tmp_path, s) for s in ("train", "valid"))
    # the 1467 copies of the primitive `jump` stay in train; valid never holds `jump`
    assert sum(s == ["jump"] for s, _ in train) == 1467
    assert all("jump" not in s for s, _ in valid)
    assert len(train) + len(valid) == 14670


def test_scan_length_with_full_raw_dir_uses_test(tmp_path):
    raw = tmp_path / "raw" / "add_prim_split"
    raw.mkdir(parents=True)
    raw.joinpath("tasks_train_addprim_jump.txt").write_text(
        "".join(f"IN: walk {w} OUT: I_WALK {w.upper()}\n" for w in ("a", "b", "c", "d", "e"))
    )
    raw.joinpath("tasks_test_addprim_jump.txt").write_text("IN: jump twice OUT: I_JUMP I_JUMP\n")
    cli("scan-addjump", tmp_path / "out", "--raw-dir", tmp_path / "raw", "--valid", "1")
    assert read_split(tmp_path / "out", "test") == [(["jump", "twice"], ["I_JUMP", "I_JUMP"])]
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["eval_split"] == "test"


@pytest.mark.parametrize("cutoff", [22, 30])
def test_scan_length_cutoff(scan_data, tmp_path, cutoff):
    cli(f"scan-length-cutoff-{cutoff}", tmp_path / "a")
    train, valid, test = (joined(read_split(tmp_path / "a", s)) for s in ("train", "valid", "test"))
    everything = scan_file("tasks.txt")
    assert sorted(train + valid + test) == sorted(everything)
    assert all(len(t.split()) <= cutoff for _, t in train + valid)
    assert all(len(t.split()) > cutoff for _, t in test)
    assert abs(len(valid) - 0.1 * (len(train) + len(valid))) <= 1
    if cutoff == 22:  # the cutoff-22 resplit is exactly the original length split
        assert sorted(test) == sorted(scan_file("length_split", "tasks_test_length.txt"))
    cli(f"scan-length-cutoff-{cutoff}", tmp_path / "b")
    assert (tmp_path / "a" / "valid.src").read_bytes() == (
        tmp_path / "b" / "valid.src"
    ).read_bytes()


def test_cogs(cogs_data, tmp_path):
    cli("cogs", tmp_path)
    sizes = {s: len(read_split(tmp_path, s)) for s in ("train", "valid", "test", "gen")}
    assert sizes == {"train": 24155, "valid": 3000, "test": 3000, "gen": 21000}
    cats = (tmp_path / "gen.category").read_text().splitlines()
    assert len(cats) == 21000 and set(Counter(cats).values()) == {1000} and len(set(cats)) == 21
    with gzip.open(cogs_data / "gen.tsv.gz", "rt") as f:
        raw = [line.rstrip("\n").split("\t") for line in f]
    gen = joined(read_split(tmp_path, "gen"))
    assert [(s, t, c) for (s, t), c in zip(gen, cats)] == [tuple(r) for r in raw]
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["eval_split"] == "gen" and meta["categories"] == "gen.category"
    # --small keeps each gen line with its category
    cli("cogs", tmp_path / "small", "--small")
    small = joined(read_split(tmp_path / "small", "gen"))
    small_cats = (tmp_path / "small" / "gen.category").read_text().splitlines()
    assert len(small) == len(small_cats) == 100
    truth = {(s, t): c for s, t, c in raw}
    assert all(truth[p] == c for p, c in zip(small, small_cats))


def test_pcfg_absent_is_one_clear_line(tmp_path):
    for extra, env in (
        (["--no-download"], None),
        ([], {"COMPGEN_PCFG_URL": (tmp_path / "nothing").as_uri(), "PATH": "/usr/bin:/bin"}),
    ):
        proc = cli(
            "pcfg-productivity",
            tmp_path / "out",
            "--raw-dir",
            tmp_path,
            *extra,
            check=False,
            env=env,
        )
        assert proc.returncode != 0
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--raw-dir" in lines[0] and "pcfg-productivity" in lines[0]
        if not extra:
            assert "download" in lines[0]
    assert not (tmp_path / "out").exists()


def test_pcfg_from_raw_dir(tmp_path):
    d = tmp_path / "pcfgset" / "systematicity"
    d.mkdir(parents=True)
    ops = [f"copy A{i} B{i}" for i in range(30)]
    d.joinpath("train.src").write_text("".join(o + "\n" for o in ops))
    d.joinpath("train.tgt").write_text("".join(o[5:] + "\n" for o in ops))
    d.joinpath("test.src").write_text("reverse C1 C2\n")
    d.joinpath("test.tgt").write_text("C2 C1\n")
    cli("pcfg-systematicity", tmp_path / "out", "--raw-dir", tmp_path, "--valid", "5")
    train, valid, test = (read_split(tmp_path / "out", s) for s in ("train", "valid", "test"))
    assert (len(train), len(valid)) == (25, 5)  # no dev file: valid held out of train
    assert test == [(["reverse", "C1", "C2"], ["C2", "C1"])]
