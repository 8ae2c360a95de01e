"""FIRE as an option (--rel-pos fire, per role and with --rel-pos-cross): parsing and errors, the
built model's attentions against a re-statement of the paper's bias on the positions each role
sees, incremental decoding with a beam reorder, padding invariance, state-dict keys, and one run
through fairseq-train and fairseq-generate."""

import math

import pytest
import torch
from attention_testing import causal_mask, multihead_reference, padding_mask, randomize
from fairseq.modules import MultiheadAttention
from model_testing import (
    TINY,
    assert_decodes_incrementally_with_beam_reordering,
    assert_padding_invariant,
    build,
    tiny_model,
)

from fairseq_plugins.modules.fire_bias import FireBias
from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention
from plugin_tools.errors import PluginConfigError

FIRE = ["--arch", "variant_transformer", "--rel-pos", "fire", "--rel-pos-cross"]


def small_threshold(model, threshold=3.0):
    """Every FIRE module's L set below the test's positions, so that the query's own position
    (the progressive interpolation) matters, and MLPs large enough for their bias to show."""
    with torch.no_grad():
        for seed, module in enumerate(m for m in model.modules() if isinstance(m, FireBias)):
            randomize(module.mlp, std=1.0, seed=seed)
            module.c.fill_(1.0)
            module.threshold_scale.fill_(threshold / module.init_threshold)
    return model


def fire_model(extra=(), dtype=torch.float32):
    model = tiny_model(FIRE + list(extra))
    return small_threshold(model.to(dtype))


def test_fire_options_parse_per_role_and_bad_values_name_their_flag():
    model, _ = build(FIRE + ["--fire-mlp-hidden", "5", "--fire-threshold", "24"] + TINY)
    for attention in (
        model.encoder.layers[0].self_attn,
        model.decoder.layers[0].self_attn,
        model.decoder.layers[0].encoder_attn,
    ):
        assert isinstance(attention, SDPAMultiheadAttention)
        assert isinstance(attention.relative_positions, FireBias)
        assert attention.relative_positions.mlp[0].out_features == 5
        assert attention.relative_positions.threshold().item() == 24
    default, _ = build(FIRE + TINY)
    assert default.encoder.layers[0].self_attn.relative_positions.threshold().item() == 512
    assert model.encoder.embed_positions is None and model.decoder.embed_positions is None
    mixed, _ = build(["--arch", "compgen_small_2", "--decoder-rel-pos", "fire"])
    assert type(mixed.encoder.layers[0].self_attn) is MultiheadAttention  # fairseq's own
    assert isinstance(mixed.decoder.layers[0].self_attn.relative_positions, FireBias)
    assert type(mixed.decoder.layers[0].encoder_attn) is MultiheadAttention
    assert mixed.encoder.embed_positions is not None and mixed.decoder.embed_positions is None
    with pytest.raises(PluginConfigError, match=r"^--fire-mlp-hidden must be >= 1 \(got 0\)$"):
        build(FIRE + ["--fire-mlp-hidden", "0"])
    with pytest.raises(PluginConfigError, match=r"^--fire-threshold must be > 0 \(got 0.0\)$"):
        build(FIRE + ["--fire-threshold", "0"])
    with pytest.raises(PluginConfigError, match="^--encoder-rel-pos fire is not available with"):
        build(["--arch", "variant_transformer", "--encoder-attention-type", "geometric"] + FIRE[2:])
    with pytest.raises(PluginConfigError, match="^--rel-pos-cross needs --rel-pos e, b, eb, al"):
        build(["--arch", "variant_transformer", "--rel-pos-cross"])


def test_fire_state_dict_keys_and_layer_sharing_ties_the_mlps():
    model, _ = build(FIRE + TINY)
    prefix = "encoder.layers.0.self_attn.relative_positions."
    keys = [k[len(prefix) :] for k in model.state_dict() if k.startswith(prefix)]
    assert keys == ["c", "threshold_scale", "mlp.0.weight", "mlp.0.bias"] + [
        "mlp.2.weight",
        "mlp.2.bias",
    ]
    cross = "decoder.layers.1.encoder_attn.relative_positions.mlp.2.bias"
    assert model.state_dict()[cross].shape == (4,)
    shared, _ = build(FIRE + TINY + ["--share-decoder-layers"])
    mlps = [layer.self_attn.relative_positions.mlp[0].weight for layer in shared.decoder.layers]
    assert mlps[0] is mlps[1]


def fire_bias_reference(rel, head, i, j):
    """b_h(i, j) = f(sign(i - j) psi(|i - j|) / (psi(max(L, i)) + eps)), psi(x) = log(|c x| + 1),
    f: Linear(1, hidden), ReLU, Linear(hidden, H), unit by unit."""
    c, threshold = float(rel.c), abs(float(rel.threshold_scale)) * rel.init_threshold
    psi = lambda x: math.log(abs(c * x) + 1)  # noqa: E731
    x = math.copysign(psi(abs(i - j)), i - j) / (psi(max(threshold, i)) + rel.eps)
    w1, b1 = rel.mlp[0].weight[:, 0].tolist(), rel.mlp[0].bias.tolist()
    hidden = [max(0.0, w * x + b) for w, b in zip(w1, b1)]
    w2, b2 = rel.mlp[2].weight[head].tolist(), float(rel.mlp[2].bias[head])
    return b2 + sum(w * u for w, u in zip(w2, hidden))


def fire_attention_reference(m, query, key, q_pos, k_pos, key_padding_mask=None, attn_mask=None):
    rel = m.relative_positions

    def logit(q, k, b, h, i, j):
        return q @ k / math.sqrt(m.head_dim) + fire_bias_reference(rel, h, q_pos[b][i], k_pos[b][j])

    return multihead_reference(m, query, key, logit, key_padding_mask, attn_mask)


def first_real_token_positions(mask):
    """Column t of sentence b is position t - (its leading padding)."""
    return [[t - int(row.long().cumprod(0).sum()) for t in range(len(row))] for row in mask]


@pytest.mark.parametrize("need_weights", [False, True])  # the fused call and the explicit path
def test_built_fire_attentions_match_the_paper_on_each_roles_positions(need_weights):
    model = fire_model(dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    # encoder self-attention, left-padded: positions from each sentence's first real token
    enc_attn = model.encoder.layers[0].self_attn
    x = torch.randn(9, 2, 32, dtype=torch.float64, generator=g)
    kpm = padding_mask([9, 5], 9, left=True)
    out, _ = enc_attn(x, x, x, key_padding_mask=kpm, need_weights=need_weights)
    pos = first_real_token_positions(kpm)
    ref = fire_attention_reference(enc_attn, x, x, pos, pos, key_padding_mask=kpm)
    torch.testing.assert_close(out, ref)
    # decoder self-attention: causal, right-padded targets, columns 0..T-1
    dec_attn = model.decoder.layers[1].self_attn
    y = torch.randn(8, 2, 32, dtype=torch.float64, generator=g)
    tpm, mask = padding_mask([8, 6], 8), causal_mask(8).double()
    out, _ = dec_attn(y, y, y, key_padding_mask=tpm, attn_mask=mask, need_weights=need_weights)
    cols = [list(range(8))] * 2
    ref = fire_attention_reference(dec_attn, y, y, cols, cols, key_padding_mask=tpm, attn_mask=mask)
    torch.testing.assert_close(out, ref)
    # rel2 cross-attention: decoder step against encoder token from the first real token
    cross = model.decoder.layers[0].encoder_attn
    out, _ = cross(y, x, x, key_padding_mask=kpm, static_kv=True, need_weights=need_weights)
    ref = fire_attention_reference(cross, y, x, cols, pos, key_padding_mask=kpm)
    torch.testing.assert_close(out, ref)


def test_fire_positions_are_one_table_unless_a_sentence_is_left_padded():
    """Per-sentence positions (the MLP on each distinct pair, fire_bias.DistinctPairs) only where
    some sentence starts later; right padding or none: the (T, T) table every sentence shares (the
    reference test above checks both against the paper's equations)."""
    attn = fire_model(dtype=torch.float64).encoder.layers[0].self_attn
    right = attn._relative_positions(None, padding_mask([9, 5], 9), 9, 9, "cpu")
    assert [p.shape for p in right] == [(9,), (9,)]
    left = attn._relative_positions(None, padding_mask([9, 5], 9, left=True), 9, 9, "cpu")
    assert [p.shape for p in left] == [(2, 9), (2, 9)] and left[1][1].tolist()[4:] == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_fire_model_decodes_incrementally_with_beam_reordering_and_ignores_padding():
    model = fire_model(dtype=torch.float64)
    assert_decodes_incrementally_with_beam_reordering(model)
    assert_padding_invariant(model)
    shared = fire_model(["--share-encoder-layers", "--share-decoder-layers", "--realformer"])
    assert_decodes_incrementally_with_beam_reordering(shared.double())
    assert_padding_invariant(shared.double())


def test_fire_trains_on_the_explicit_path_on_cpu_and_its_mlp_gets_gradients(monkeypatch):
    """In CPU training the MLP needs a gradient (attend.relative_bias_needs_grad looks at the
    scheme's parameters): no fused call, and every parameter of the MLP, c and L are reached."""
    import fairseq_plugins.modules.attend as attend

    model = fire_model().train()
    calls = []
    fused = attend.fused_attention
    monkeypatch.setattr(attend, "fused_attention", lambda *a: calls.append(1) or fused(*a))
    src = torch.randint(4, 20, (2, 9))
    src[1, :3] = 1
    prev = torch.randint(4, 20, (2, 6))
    out, _ = model(src, src.ne(1).sum(1), prev)
    out.float().square().mean().backward()
    assert calls == []
    rel = model.encoder.layers[0].self_attn.relative_positions
    for name, p in rel.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.slow
def test_fire_trains_and_generates_through_fairseqs_clis(demo_bin, tmp_path):
    from position_options_testing import train_and_generate

    options = ["--rel-pos", "fire", "--rel-pos-cross", "--fire-mlp-hidden", "8"]
    checkpoint = train_and_generate(demo_bin, tmp_path / "ckpt", options)
    assert "encoder.layers.0.self_attn.relative_positions.mlp.2.bias" in checkpoint["model"]
    assert checkpoint["cfg"]["model"].fire_mlp_hidden == 8
