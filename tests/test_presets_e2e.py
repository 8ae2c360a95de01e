"""Every preset family trains a few updates through fairseq-train and decodes with
fairseq-generate's beam search from the checkpoint; the LM preset is scored by fairseq-eval-lm."""

import re

import pytest
from conftest import (
    fairseq_preprocess_text,
    fairseq_tool,
    fairseq_train,
    train_then_generate,
)

TRAIN = ["--optimizer", "adam", "--lr", "5e-4", "--max-tokens", "400", "--max-update", "2"]
TRAIN += ["--no-progress-bar", "--log-interval", "1", "--no-epoch-checkpoints", "--cpu"]

# The presets' structure (attention type, layer kinds, sharing, positions) with CI-sized shapes.
SMALL = ["--encoder-embed-dim", "64", "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128"]
SMALL += ["--decoder-ffn-embed-dim", "128", "--encoder-layers", "3", "--decoder-layers", "2"]

PRESETS = [
    ("compositional_transformer_iwslt_de_en", [], 4),
    (
        "compositional_transformer_wmt_en_de",
        ["--retrieval-scoring", "mlp", "--share-decoder-layers"],
        4,
    ),
    ("graph_transformer_iwslt_de_en", ["--graph-fusion", "sum"], 5),
    ("graph_transformer_iwslt_de_en", ["--graph-fusion", "weight-gate", "--graph-half-dim"], 5),
    ("graph_transformer_wmt_en_de", ["--graph-fusion", "self-gate", "--graph-shared-qkv"], 5),
    ("compgen_rel2_eb_c", [], 4),
    ("compgen_rel2_eb_c", ["--seq2seq-init", "official"], 4),  # the notebook's Keras init
    ("compgen_small_4s", ["--attention-type", "compositional", "--rel-pos", "e"], 4),
    (  # the official options (Gumbel noise in training, plain softmax in decoding)
        "compositional_transformer_iwslt_de_en",
        ["--retrieval-scoring", "learned-key", "--retrieval-query-from-search", "--rel-pos", "e"]
        + ["--retrieval-gumbel", "--retrieval-gumbel-temperature", "0.5"],
        4,
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "arch,extra,beam", PRESETS, ids=lambda v: v if isinstance(v, str) else None
)
def test_preset_trains_and_generates(demo_bin, tmp_path, arch, extra, beam):
    gen, hyps = train_then_generate(
        demo_bin,
        tmp_path / "ckpt",
        ["--arch", arch] + TRAIN + SMALL + extra,
        ["--beam", str(beam), "--batch-size", "50", "--max-len-b", "6", "--cpu"],
        updates=2,
    )
    assert len(hyps) == 100  # every test sentence decoded
    assert f"Generate test with beam={beam}" in gen.stdout


@pytest.mark.slow
def test_compositional_lm_preset_trains_and_eval_lm_scores_it(wikitext2_data, tmp_path):
    text = (wikitext2_data / "valid.txt").read_text().splitlines()
    (tmp_path / "train.txt").write_text("\n".join(text[:400]) + "\n")
    (tmp_path / "valid.txt").write_text("\n".join(text[400:500]) + "\n")
    fairseq_preprocess_text(tmp_path / "train.txt", tmp_path / "valid.txt", tmp_path / "bin")
    save = tmp_path / "ckpt"
    small = ["--decoder-layers", "2", "--decoder-embed-dim", "64", "--decoder-ffn-embed-dim", "128"]
    small += ["--num-searches", "4", "--num-retrievals", "4", "--retrieval-qk-dim", "16"]
    fairseq_train(
        tmp_path / "bin",
        save,
        ["--task", "language_modeling", "--arch", "compositional_transformer_lm"]
        + ["--tokens-per-sample", "64"]
        + TRAIN
        + small,
    )
    ev = fairseq_tool(
        "fairseq-eval-lm",
        tmp_path / "bin",
        ["--path", save / "checkpoint_last.pt", "--gen-subset", "valid"]
        + ["--tokens-per-sample", "64", "--context-window", "32", "--cpu"],
    )
    m = re.search(r"Loss \(base 2\): [\d.]+, Perplexity: ([\d.]+)", ev.stdout + ev.stderr)
    assert m and 1 < float(m.group(1)) < 1e6
