"""Second copy decoder (official COPY_DECODER2, docs/official-code.md O3): the copy
distribution is mapped V -> V (full, or low rank through r) and soft-maxed before the mix."""

import math

import pytest
import torch
from attention_testing import randomize
from model_testing import TINY, batch, build, full_log_probs

from fairseq_plugins.modules.copy_generator import CopyGenerator


def restated(gen, logits, features, enc, pad, src, layers):
    """p = (1 - w) softmax(logits) + w softmax(Dense_V(..Dense(c))), c = attention on one-hot
    source tokens; written out without the module's code paths."""
    B, T, V = logits.shape
    q = features @ gen.copy_query.weight.T + gen.copy_query.bias
    scores = torch.einsum("btc,sbc->bts", q, enc) / math.sqrt(enc.size(-1))
    if pad is not None:
        scores = scores.masked_fill(pad.unsqueeze(1), float("-inf"))
    attn = torch.softmax(scores, -1)
    c = torch.zeros(B, T, V, dtype=logits.dtype)
    for b in range(B):
        for s in range(src.size(1)):
            c[b, :, src[b, s]] += attn[b, :, s]
    for weight, bias in layers:
        c = c @ weight.T + bias
    c = torch.softmax(c, -1)
    w = torch.sigmoid(features @ gen.gate.weight.T + gen.gate.bias)
    return (1 - w) * torch.softmax(logits, -1) + w * c


@pytest.mark.parametrize("kind", ["full", "low-rank"])
def test_projected_copy_distribution_matches_a_restatement(kind):
    torch.manual_seed(0)
    B, T, S, V, d = 2, 3, 5, 11, 8
    gen = randomize(CopyGenerator(d, d, kind, V, rank=4), std=0.5).double()
    if kind == "full":
        assert isinstance(gen.copy_projection, torch.nn.Linear)
        layers = [(gen.copy_projection.weight, gen.copy_projection.bias)]
    else:
        first, second = gen.copy_projection
        assert (first.in_features, first.out_features, second.out_features) == (V, 4, V)
        layers = [(first.weight, first.bias), (second.weight, second.bias)]
    features = torch.randn(B, T, d, dtype=torch.double)
    enc = torch.randn(S, B, d, dtype=torch.double)
    logits = torch.randn(B, T, V, dtype=torch.double)
    src = torch.tensor([[1, 1, 4, 7, 4], [3, 5, 6, 8, 9]])
    pad = src.eq(1)
    with torch.no_grad():
        got = gen(logits, features, enc, pad, src).exp()
        expected = restated(gen, logits, features, enc, pad, src, layers)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(got.sum(-1), torch.ones(B, T, dtype=torch.double))


def test_none_adds_no_parameters():
    plain = CopyGenerator(8, 8)
    assert plain.copy_projection is None
    assert set(plain.state_dict()) == {
        "copy_query.weight",
        "copy_query.bias",
        "gate.weight",
        "gate.bias",
    }


def projection_model(extra):
    torch.manual_seed(0)
    model, args = build(["--arch", "compgen_rel2_eb_c"] + TINY + extra)
    return randomize(model, std=0.2).eval(), args


@pytest.mark.parametrize(
    "extra,rank",
    [
        (["--copy-projection", "low-rank"], 32),  # default rank: the decoder dim
        (["--copy-projection", "low-rank", "--copy-projection-dim", "5"], 5),
        (["--copy-projection", "full"], None),
    ],
)
def test_incremental_decoding_equals_full_forward(extra, rank):
    model, _ = projection_model(extra)
    proj = model.decoder.copy_generator.copy_projection
    V = len(model.decoder.dictionary)
    if rank is None:
        assert proj.weight.shape == (V, V)
    else:
        assert proj[0].weight.shape == (rank, V) and proj[1].weight.shape == (V, rank)
    src, lengths, tgt = batch()
    with torch.no_grad():
        full = full_log_probs(model, src, lengths, tgt)
        enc = model.encoder(src, lengths)
        state, steps = {}, []
        for t in range(tgt.size(1)):
            out = model.decoder(tgt[:, : t + 1], enc, incremental_state=state)
            steps.append(model.get_normalized_probs(out, log_probs=True)[:, -1:])
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(full.exp().sum(-1), torch.ones(full.shape[:2]), atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--arch", "compgen_rel2_eb", "--copy-projection", "full"], "needs --copy-decoder"),
        (["--arch", "compgen_rel2_eb_c", "--copy-projection-dim", "4"], "needs --copy-projection"),
        (
            ["--arch", "compgen_rel2_eb_c", "--copy-projection", "low-rank"]
            + ["--copy-projection-dim", "0"],
            ">= 1",
        ),
    ],
)
def test_bad_projection_options_name_the_flag(extra, message):
    from plugin_tools.errors import PluginConfigError

    with pytest.raises(PluginConfigError, match=message):
        build(extra + TINY)


@pytest.mark.slow
def test_trains_and_beam_searches_through_fairseq(demo_bin, tmp_path):
    from conftest import train_then_generate

    save = tmp_path / "ckpt"
    _, hyps = train_then_generate(
        demo_bin,
        save,
        ["--arch", "compgen_rel2_eb_c", "--copy-projection", "low-rank"]
        + ["--copy-projection-dim", "16"]
        + ["--optimizer", "adam", "--lr", "5e-4", "--max-tokens", "400", "--max-update", "3"]
        + ["--no-progress-bar", "--log-interval", "1", "--no-epoch-checkpoints", "--cpu"],
        ["--beam", "4", "--batch-size", "50", "--max-len-b", "6", "--cpu"],
        updates=3,
    )
    assert len(hyps) == 100
    # the checkpoint holds the projection
    state = torch.load(save / "checkpoint_last.pt", weights_only=True)["model"]
    assert state["decoder.copy_generator.copy_projection.0.weight"].shape[0] == 16
