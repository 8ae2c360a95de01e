"""scripts/significance.sh (bleu-significance.py) and scripts/compare-nmt.sh.

Systems are built from real Multi30k English test references by deleting words at a fixed rate
(deterministically), so "clearly better" and "no real difference" are known by construction.
"""

import gzip
import json
import random
import sys

import pytest
from conftest import BIN, ROOT, run

SIG = ROOT / "scripts" / "significance.sh"
N_SENT = 250
FAST = ["--resamples", "1000", "--trials", "2000"]  # AR trials cut for speed; bs as default


def corrupt(lines, rate, seed):
    rng = random.Random(seed)
    out = []
    for line in lines:
        words = line.split()
        kept = [w for w in words if rng.random() > rate]
        out.append(" ".join(kept) if kept else words[0])
    return out


@pytest.fixture(scope="module")
def corpus(multi30k_data, tmp_path_factory):
    d = tmp_path_factory.mktemp("sig")
    with gzip.open(multi30k_data / "test_2016_flickr.en.gz", "rt", encoding="utf-8") as fh:
        refs = [next(fh).rstrip("\n") for _ in range(N_SENT)]
    files = {
        "ref": refs,
        "good": corrupt(refs, 0.10, 1),  # clearly better
        "bad": corrupt(refs, 0.40, 2),
        "bad_other": corrupt(refs, 0.40, 3),  # same quality as bad, different errors
    }
    paths = {}
    for name, lines in files.items():
        paths[name] = d / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["bad_copy"] = d / "bad_copy.txt"
    paths["bad_copy"].write_text(paths["bad"].read_text(encoding="utf-8"), encoding="utf-8")
    paths["dir"] = d
    return paths


def significance(args, tmp_path, name="out.json", check=True):
    out = tmp_path / name
    proc = run(
        ["bash", SIG, *map(str, args), "--json", out], env={"OMP_NUM_THREADS": "1"}, check=check
    )
    return proc, (json.loads(out.read_text()) if proc.returncode == 0 else None)


def rows(result, metric):
    return {r["system"]: r for r in result["metrics"][metric]["rows"]}


def test_clearly_better_system_is_significant(corpus, tmp_path):
    proc, res = significance(
        [corpus["bad"], corpus["good"], "--ref", corpus["ref"], "--moses", *FAST], tmp_path
    )
    for metric in ("BLEU", "tok-BLEU"):
        r = rows(res, metric)["good.txt"]
        assert r["delta"] > 10
        assert r["p_bs"] < 0.05 and r["p_ar"] < 0.05
        assert r["significant_bs"] and r["significant_ar"]
        lo, hi = r["mean"] - r["ci"], r["mean"] + r["ci"]
        assert lo < r["score"] < hi
    (moses,) = res["moses"]["rows"]
    assert moses["wins"] > 950 and moses["p_value"] < 0.05
    assert moses["p_value"] == pytest.approx(1 - moses["wins"] / 1000)
    # the table: a starred p-value in the system's row, signatures printed
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("good.txt"))
    assert "*" in line
    assert "signature (bs): nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a" in proc.stdout
    assert "tok:none|smooth:none" in proc.stdout


def test_reverse_case_is_not_a_significant_improvement(corpus, tmp_path):
    _, res = significance(
        [corpus["good"], corpus["bad"], "--ref", corpus["ref"], "--moses", *FAST], tmp_path
    )
    r = rows(res, "BLEU")["bad.txt"]
    assert r["delta"] < -10  # the bs/ar tests are two-sided: a significant *drop*
    (moses,) = res["moses"]["rows"]
    assert moses["wins"] < 50
    assert moses["p_value"] >= 0.05
    assert not moses["significant"]


def test_equal_quality_systems_not_significant(corpus, tmp_path):
    _, res = significance(
        [corpus["bad"], corpus["bad_other"], "--ref", corpus["ref"], "--moses", *FAST], tmp_path
    )
    r = rows(res, "BLEU")["bad_other.txt"]
    assert abs(r["delta"]) < 3
    assert r["p_bs"] >= 0.05 and r["p_ar"] >= 0.05
    assert 0.05 <= res["moses"]["rows"][0]["p_value"] <= 0.95


def test_identical_systems_give_p_one(corpus, tmp_path):
    _, res = significance(
        [corpus["bad"], corpus["bad_copy"], "--ref", corpus["ref"], "--moses", *FAST], tmp_path
    )
    for metric in ("BLEU", "tok-BLEU"):
        r = rows(res, metric)["bad_copy.txt"]
        assert r["delta"] == 0.0
        assert r["p_bs"] == 1.0 and r["p_ar"] == 1.0
        # what sacrebleu itself says: strictly-greater counting gives 1/(n+1) for a tie
        assert r["p_bs_sacrebleu"] == pytest.approx(1 / 1001)
    assert res["moses"]["rows"][0]["p_value"] == 1.0


def test_same_seed_same_results_other_seed_differs(corpus, tmp_path):
    args = [corpus["bad"], corpus["bad_other"], corpus["good"], "--ref", corpus["ref"], "--moses"]
    args += ["--resamples", "300", "--trials", "500"]
    _, a = significance(args, tmp_path, "a.json")
    _, b = significance(args, tmp_path, "b.json")
    _, c = significance([*args, "--seed", "7"], tmp_path, "c.json")
    assert a == b
    assert c["settings"]["seed"] == 7
    ra, rc = rows(a, "BLEU")["bad_other.txt"], rows(c, "BLEU")["bad_other.txt"]
    assert ra["score"] == rc["score"]
    assert (ra["mean"], ra["ci"], ra["p_bs"]) != (rc["mean"], rc["ci"], rc["p_bs"])


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_agrees_with_sacrebleu_cli(corpus, tmp_path, test):
    base, sys_a, sys_b = corpus["bad"], corpus["bad_other"], corpus["good"]
    cli = run(
        [BIN / "sacrebleu", corpus["ref"], "-i", base, sys_a, sys_b, "-m", "bleu"]
        + [f"--paired-{test}", "-f", "json"]
        + (["--paired-ar-n", "2000"] if test == "ar" else []),
        env={"SACREBLEU_SEED": "12345"},
    )
    theirs = json.loads(cli.stdout)
    _, ours = significance([base, sys_a, sys_b, "--ref", corpus["ref"], *FAST], tmp_path)
    mine = res_rows = ours["metrics"]["BLEU"]["rows"]
    assert len(theirs) == len(res_rows) == 3
    for t, m in zip(theirs, mine):
        assert t["BLEU"]["score"] == pytest.approx(m["score"], abs=1e-9)
        if test == "bs":
            assert t["BLEU"]["mean"] == pytest.approx(m["mean"], abs=1e-9)
            assert t["BLEU"]["ci"] == pytest.approx(m["ci"], abs=1e-9)
        key = f"p_{test}"
        if m[key] is None:
            assert t["BLEU"]["p_value"] is None
        else:
            assert t["BLEU"]["p_value"] == pytest.approx(m[key], abs=1e-12)
    # and the signature is sacrebleu's own
    assert ours["metrics"]["BLEU"]["signature_bs"].startswith("nrefs:1|bs:1000|seed:12345|")


def write_generate_output(path, hyps, refs, rng):
    """fairseq-generate style: log lines, then S/T/H/D/P blocks in batch (not id) order."""
    ids = list(range(len(hyps)))
    rng.shuffle(ids)
    out = ["2026-01-01 00:00:00 | INFO | fairseq_cli.generate | loading model(s)"]
    for i in ids:
        out += [
            f"S-{i}\tsource sentence {i}",
            f"T-{i}\t{refs[i]}",
            f"H-{i}\t-0.{i + 1:04d}\t{hyps[i]}",
            f"D-{i}\t-0.{i + 1:04d}\t{hyps[i]}",
            f"P-{i}\t" + " ".join("-0.1" for _ in hyps[i].split()),
        ]
    out.append("Generate test with beam=5: BLEU4 = 12.34, 50.0/20.0/10.0/5.0 (BP=1.000)")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_fairseq_generate_format(corpus, tmp_path):
    refs = corpus["ref"].read_text(encoding="utf-8").splitlines()
    rng = random.Random(0)
    gen = {}
    for name in ("bad", "good"):
        hyps = corpus[name].read_text(encoding="utf-8").splitlines()
        gen[name] = tmp_path / f"generate-{name}.txt"
        write_generate_output(gen[name], hyps, refs, rng)
    _, plain = significance(
        [corpus["bad"], corpus["good"], "--ref", corpus["ref"], *FAST], tmp_path, "p.json"
    )
    # reference taken from the T- lines when --ref is absent; also mixing formats works
    _, from_t = significance([gen["bad"], gen["good"], *FAST], tmp_path, "g.json")
    _, mixed = significance(
        [corpus["bad"], gen["good"], "--ref", gen["bad"], *FAST], tmp_path, "m.json"
    )
    assert [s["format"] for s in from_t["systems"]] == ["fairseq-generate"] * 2
    # without --ref, all T- lines must be the same test set
    other = tmp_path / "generate-other-refs.txt"
    write_generate_output(other, refs, refs[::-1], rng)
    proc = run(["bash", SIG, gen["bad"], other], check=False)
    assert proc.returncode == 2 and "generate-other-refs.txt: its T- lines differ" in proc.stderr
    for res in (from_t, mixed):
        for metric in ("BLEU", "tok-BLEU"):
            for a, b in zip(plain["metrics"][metric]["rows"], res["metrics"][metric]["rows"]):
                for key in ("score", "mean", "ci", "p_bs", "p_ar"):
                    assert a[key] == b[key]


def test_tokenized_input(corpus, tmp_path):
    """--tokenized: tok-BLEU straight on the input; BLEU on the sacremoses-detokenized text."""
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang="en")
    tokd = {}
    for name in ("ref", "bad", "good"):
        lines = corpus[name].read_text(encoding="utf-8").splitlines()
        tokd[name] = tmp_path / f"{name}.tok"
        tokd[name].write_text(
            "\n".join(tok.tokenize(x, escape=False, return_str=True) for x in lines) + "\n",
            encoding="utf-8",
        )
    _, detok_in = significance(
        [corpus["bad"], corpus["good"], "--ref", corpus["ref"], *FAST], tmp_path, "d.json"
    )
    _, tok_in = significance(
        [tokd["bad"], tokd["good"], "--ref", tokd["ref"], "--tokenized", *FAST], tmp_path, "t.json"
    )
    for a, b in zip(detok_in["metrics"]["tok-BLEU"]["rows"], tok_in["metrics"]["tok-BLEU"]["rows"]):
        assert a["score"] == pytest.approx(b["score"], abs=1e-9)
    for a, b in zip(detok_in["metrics"]["BLEU"]["rows"], tok_in["metrics"]["BLEU"]["rows"]):
        assert a["score"] == pytest.approx(b["score"], abs=0.5)  # detok(tok(x)) ~ x


def test_markdown_table(corpus, tmp_path):
    proc, _ = significance(
        [corpus["bad"], corpus["good"], "--ref", corpus["ref"], "--format", "markdown", *FAST],
        tmp_path,
    )
    assert (
        "| System | BLEU | bootstrap mean ± 95% CI | Δ vs baseline | p (paired bs) | p (paired ar) |"
        in proc.stdout
    )
    assert "| Baseline: bad.txt |" in proc.stdout


@pytest.mark.parametrize(
    "case", ["missing", "empty", "line_count", "no_ref", "missing_ref", "one_file", "bad_flag"]
)
def test_bad_inputs_give_one_line_errors(corpus, tmp_path, case):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    short = tmp_path / "short.txt"
    short.write_text("\n".join(corpus["good"].read_text().splitlines()[:-3]) + "\n")
    ref = ["--ref", corpus["ref"]]
    args, named = {
        "missing": ([corpus["bad"], tmp_path / "nope.txt", *ref], "nope.txt"),
        "empty": ([corpus["bad"], empty, *ref], "empty.txt"),
        "line_count": ([corpus["bad"], short, *ref], "short.txt"),
        "no_ref": ([corpus["bad"], corpus["good"]], "--ref"),
        "missing_ref": (
            [corpus["bad"], corpus["good"], "--ref", tmp_path / "noref.txt"],
            "noref.txt",
        ),
        "one_file": ([corpus["bad"], *ref], "BASELINE_HYP"),
        "bad_flag": ([corpus["bad"], corpus["good"], *ref, "--bogus"], "--bogus"),
    }[case]
    proc = run(["bash", SIG, *args], check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1, proc.stderr
    assert named in err[0]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


TINY_NMT = """NAME={name}
ARCH=transformer
DATA=/nonexistent/overridden-by-data-flag
TRAIN_ARGS=(--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32
  --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64
  --encoder-attention-heads 2 --decoder-attention-heads 2
  --optimizer adam --lr 0.005 --lr-scheduler inverse_sqrt --warmup-updates 10
  --max-tokens 2048 --max-update {updates} --validate-interval-updates 10
  --no-epoch-checkpoints --seed 1 --num-workers 0)
"""


@pytest.mark.slow
def test_compare_nmt_end_to_end(demo_bin, tmp_path):
    cfgs = []
    for name, updates in (("tiny-a", 10), ("tiny-b", 40)):
        cfg = tmp_path / f"{name}.sh"
        cfg.write_text(TINY_NMT.format(name=name, updates=updates))
        cfgs.append(cfg)
    out = tmp_path / "out"
    run(
        ["bash", ROOT / "scripts" / "compare-nmt.sh", *cfgs, "--data", demo_bin, "--out", out]
        + ["--resamples", "200", "--trials", "500", "--moses"],
        env={"OMP_NUM_THREADS": "1"},
    )
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    res = json.loads((out / "significance.json").read_text())
    assert res["baseline"] == "tiny-a"
    assert [s["name"] for s in res["systems"]] == ["tiny-a", "tiny-b"]
    # the demo pair is not De-En: the paper's beam 4, lenpen 0.6
    assert "--beam 4 --lenpen 0.6" in report
    assert "| tiny-b | `transformer` |" in report
    b = rows(res, "BLEU")["tiny-b"]
    assert f"| tiny-b | {b['score']:.2f} |" in report
    assert "Moses bootstrap-hypothesis-difference-significance.pl" in report
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in ("tiny-a", "tiny-b"):
        assert (out / name / "generate-test.txt").stat().st_size > 0
    # every sentence of the test set scored (100 in the demo_bin fixture)
    n_h = sum(1 for ln in (out / "tiny-a" / "generate-test.txt").open() if ln.startswith("H-"))
    assert res["sentences"] == n_h == 100


def test_compare_nmt_bad_config(tmp_path):
    cfg = tmp_path / "bad.sh"
    cfg.write_text("NAME=x\nARCH=transformer\nDATA=/nonexistent/dir\n")
    proc = run(["bash", ROOT / "scripts" / "compare-nmt.sh", cfg], check=False)
    assert proc.returncode == 2
    assert "/nonexistent/dir" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_nmt_configs_parse():
    """The shipped configs source cleanly and carry the settings compare-nmt.sh needs."""
    for cfg in sorted((ROOT / "configs" / "nmt").glob("multi30k-small-*.sh")):
        proc = run(
            [
                "bash",
                "-c",
                'set -euo pipefail; source "$1"; echo "$NAME|$ARCH|$SRC|$TGT|${#TRAIN_ARGS[@]}"',
                "x",
                cfg,
            ]
        )
        name, arch, src, tgt, n_args = proc.stdout.strip().split("|")
        assert name == cfg.stem and (src, tgt) == ("de", "en") and int(n_args) > 10
        assert arch in ("transformer", "compositional_transformer", "graph_transformer")
    base = (ROOT / "configs" / "nmt" / "multi30k-small-baseline.sh").read_text()
    assert "ARCH=transformer\n" in base


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
