"""scripts/param-counts.py against parameter counts written out by hand.

The LM study archives ``--json`` (OUT/params.json) and its report reads it, so the JSON and the
table must carry the same counts, and both must be the model's true count.
"""

import json
import sys

import pytest
from conftest import ROOT, run

SPEC = "transformer_lm --decoder-embed-dim 8 --decoder-ffn-embed-dim 16 --decoder-attention-heads 2"
SHARED = " --share-decoder-input-output-embed"


def expected(vocab, layers, d=8, ffn=16, io=512):
    """fairseq's transformer_lm: input and output dims default to 512, so a model of width d
    projects the (shared) 512-wide embedding in and out; no final LayerNorm (post-norm)."""
    attention = 4 * (d * d + d)
    layer = attention + 2 * (2 * d) + (d * ffn + ffn) + (ffn * d + d)
    return vocab * io + io * d + d * io + layers * layer


def counts(*args):
    cmd = [sys.executable, str(ROOT / "scripts/param-counts.py"), "--lm"]
    return run(cmd + ["--src-vocab", "10", "--tgt-vocab", "10", *args]).stdout


def test_json_and_table_give_the_hand_counted_parameters():
    specs = [f"{SPEC} --decoder-layers {n}{SHARED}" for n in (1, 2)]
    rows = json.loads(counts("--json", *specs))
    assert [r["arch_and_flags"] for r in rows] == specs
    assert [r["parameters"] for r in rows] == [expected(10, 1), expected(10, 2)]
    assert [r["encoder"] for r in rows] == [0, 0]
    table = counts(*specs)
    assert f"| {expected(10, 2):,} | 0 | {expected(10, 2) / expected(10, 1):.3f}x |" in table


@pytest.mark.parametrize(
    "spec",
    [
        f"{SPEC} --decoder-layers 1 --rel-pos rel-e",  # a stock arch has no --rel-pos
        "compositional_transformer_lm --decoder-layers 1 --rel-pos nonsense",
    ],
)
def test_a_bad_option_is_one_line_naming_it(spec):
    proc = run(
        [sys.executable, str(ROOT / "scripts/param-counts.py"), "--lm", "--json", spec],
        check=False,
    )
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1 and "--rel-pos" in proc.stderr
    assert proc.stderr.startswith(f"param-counts: error: {spec.split()[0]}: ")
