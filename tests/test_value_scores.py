"""scripts/value-scores.py averages the value scores of a trained checkpoint and writes heatmaps."""

import json
import sys

import pytest
from conftest import ROOT, fairseq_train, run


def trained(demo_bin, save, arch_args, updates):
    """SAVE/checkpoint_last.pt after UPDATES updates of the model of ARCH_ARGS on the demo data."""
    recipe = ["--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "500", "--cpu"]
    fairseq_train(demo_bin, save, arch_args + recipe + ["--max-update", str(updates)])
    return save / "checkpoint_last.pt"


@pytest.mark.slow
def test_value_scores_heatmaps_from_a_checkpoint(demo_bin, tmp_path):
    compositional = ["--arch", "compgen_small_2", "--attention-type", "compositional"]
    checkpoint = trained(demo_bin, tmp_path / "ckpt", compositional + ["--num-retrievals", "2"], 2)
    out = tmp_path / "plots"
    run(
        [sys.executable, ROOT / "scripts/value-scores.py", checkpoint, demo_bin]
        + ["--out", out, "--max-batches", "2"]
    )
    scores = json.loads((out / "value-scores.json").read_text())
    assert len(scores) == 2 * 1 + 2 * 2  # encoder self; decoder self + cross, 2 layers each
    for matrix in scores.values():
        assert len(matrix) == 4 and all(len(row) == 2 for row in matrix)  # S x R
        for row in matrix:
            assert abs(sum(row) - 1.0) < 1e-4  # a distribution over retrievals per search
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == [
        f"value-scores-{side}.layers.{i}.png" for side in ("decoder", "encoder") for i in (0, 1)
    ]
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_value_scores_refuses_a_model_without_compositional_attention(demo_bin, tmp_path):
    checkpoint = trained(demo_bin, tmp_path / "ckpt", ["--arch", "compgen_abs"], 1)
    proc = run(
        [sys.executable, ROOT / "scripts/value-scores.py", checkpoint, demo_bin],
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("value-scores: error:")
    assert "no compositional attention" in proc.stderr
