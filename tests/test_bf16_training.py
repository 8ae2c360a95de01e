"""fairseq-train --bf16 --cpu: a few updates of each model family (finite losses; the checkpoint's
config says bf16 and no TPU). fairseq 0.12 alone cannot: --bf16 implies --tpu there
(fairseq_plugins/compat/bf16_without_tpu.py). The bf16 arithmetic of every custom path against
float32 is tests/test_dtypes.py's."""

import math
import re

import pytest
import torch
from conftest import fairseq_preprocess_text, fairseq_train

from fairseq_plugins.compat.bf16_without_tpu import _tpu_requested

UPDATES = 3
TINY = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "32"]
TINY += ["--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64"]
TINY += ["--decoder-ffn-embed-dim", "64", "--encoder-attention-heads", "4"]
TINY += ["--decoder-attention-heads", "4"]
RECIPE = ["--bf16", "--cpu", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1000"]
RECIPE += ["--max-update", str(UPDATES), "--disable-validation", "--no-epoch-checkpoints"]
RECIPE += ["--log-format", "simple", "--log-interval", "1", "--seed", "1"]
TRANSLATION = {
    "stock": ["--arch", "transformer"],
    "compositional": ["--arch", "variant_transformer", "--attention-type", "compositional"],
    "rel2-eb-copy": ["--arch", "compgen_rel2_eb_c"],
    "graph": ["--arch", "graph_transformer", "--graph-half-dim", "--graph-fusion", "self-gate"],
}


def trained_in_bf16(proc, checkpoint):
    """The run reached UPDATES updates with finite losses, as a bf16 run without a TPU (fairseq
    saves float32 weights either way)."""
    log = proc.stdout + proc.stderr
    assert re.search(rf"num_updates {UPDATES}\b", log)
    losses = [float(x) for x in re.findall(r"\| loss ([-0-9.a-z]+) \|", log)]
    assert losses and all(math.isfinite(x) for x in losses), losses
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    assert state["cfg"]["common"]["bf16"] and not state["cfg"]["common"]["tpu"]


@pytest.mark.slow
@pytest.mark.parametrize("family", list(TRANSLATION))
def test_translation_families_train_in_bf16_on_cpu(family, demo_bin, tmp_path):
    proc = fairseq_train(
        demo_bin, tmp_path / "ckpt", TRANSLATION[family] + TINY + RECIPE + ["--task", "translation"]
    )
    trained_in_bf16(proc, tmp_path / "ckpt" / "checkpoint_last.pt")


@pytest.mark.slow
def test_language_model_trains_in_bf16_on_cpu(demo_raw, tmp_path):
    lm_bin = tmp_path / "lm"
    fairseq_preprocess_text(demo_raw / "train.tgt", demo_raw / "valid.tgt", lm_bin)
    args = ["--task", "language_modeling", "--arch", "compositional_transformer_lm"]
    args += ["--decoder-layers", "2", "--decoder-embed-dim", "32", "--rel-pos", "eb"]
    args += ["--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "4"]
    args += ["--tokens-per-sample", "32", "--retrieval-qk-dim", "8"]
    proc = fairseq_train(lm_bin, tmp_path / "ckpt", args + RECIPE)
    trained_in_bf16(proc, tmp_path / "ckpt" / "checkpoint_last.pt")


def test_an_explicit_tpu_request_is_kept():
    assert _tpu_requested(["data", "--bf16", "--tpu"]) and _tpu_requested(["--tpu=true"])
    assert not _tpu_requested(["data", "--bf16", "--tpus"])


@pytest.mark.slow
def test_tagging_model_trains_in_bf16_on_cpu(tiny_tags, tmp_path):
    args = ["--task", "cogs_tagging", "--criterion", "cogs_tagging", "--arch", "cogs_tagging_tuned"]
    args += ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--batch-size", "32"]
    proc = fairseq_train(tiny_tags, tmp_path / "ckpt", args + RECIPE)
    trained_in_bf16(proc, tmp_path / "ckpt" / "checkpoint_last.pt")
