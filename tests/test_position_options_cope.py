"""CoPE as an option (--decoder-rel-pos cope): parsing and one-line errors for the roles it
does not apply to, the built decoder self-attention against a re-statement of
the paper's equations, incremental decoding with a beam reorder, padding invariance, state-dict
keys, the explicit path, and one run through fairseq-train and fairseq-generate."""

import math

import pytest
import torch
from attention_testing import causal_mask, padding_mask, randomize
from fairseq.modules import MultiheadAttention
from model_testing import (
    TINY,
    assert_decodes_incrementally_with_beam_reordering,
    assert_lm_decodes_incrementally,
    assert_padding_invariant,
    build,
    tiny_model,
)

from fairseq_plugins.modules.contextual_positions import ContextualPositions
from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention
from plugin_tools.errors import PluginConfigError

COPE = ["--arch", "variant_transformer", "--decoder-rel-pos", "cope", "--cope-max-pos", "5"]


def test_cope_builds_in_decoder_self_attention_only():
    model, _ = build(COPE + TINY)
    for layer in model.decoder.layers:
        attention = layer.self_attn
        assert isinstance(attention, SDPAMultiheadAttention)
        assert attention.relative_positions is None  # CoPE is not a bias from positions
        assert isinstance(attention.contextual_positions, ContextualPositions)
        assert attention.contextual_positions.embeddings.shape == (5, 8)  # max_pos x d_h
        assert type(layer.encoder_attn) is MultiheadAttention
    assert type(model.encoder.layers[0].self_attn) is MultiheadAttention
    assert model.encoder.embed_positions is not None and model.decoder.embed_positions is None
    keys = [k for k in model.state_dict() if "contextual_positions" in k]
    assert keys == [f"decoder.layers.{i}.self_attn.contextual_positions.embeddings" for i in (0, 1)]
    kept, _ = build(COPE + TINY + ["--rel-pos-keep-absolute"])
    assert kept.decoder.embed_positions is not None
    shared, _ = build(COPE + TINY + ["--share-decoder-layers"])
    tables = [layer.self_attn.contextual_positions.embeddings for layer in shared.decoder.layers]
    assert tables[0] is tables[1]
    lm, _ = build(["--arch", "variant_transformer_lm", "--decoder-rel-pos", "cope"], lm=True)
    assert lm.decoder.layers[0].self_attn.contextual_positions.max_pos == 16  # the default


@pytest.mark.parametrize(
    "args,message",
    [
        (["--rel-pos", "cope"], "--rel-pos cope: CoPE applies to decoder self-attention only "),
        (["--encoder-rel-pos", "cope"], "--encoder-rel-pos cope: CoPE applies to decoder self-"),
        (["--decoder-rel-pos", "cope", "--cope-max-pos", "0"], r"--cope-max-pos must be >= 1 \("),
        # compositional decoder self-attention has CoPE per search: test_cope_compositional.py
    ],
)
def test_cope_elsewhere_is_a_one_line_error_naming_the_flag(args, message):
    with pytest.raises(PluginConfigError, match="^" + message) as error:
        build(["--arch", "variant_transformer"] + args)
    assert "\n" not in str(error.value)


def cope_reference(m, x, key_padding_mask, attn_mask):
    """Decoder self-attention with CoPE, from the paper's equations, per sentence and head:
    s_ij = q_i . k_j / sqrt(d_h) + masks, g_ij = sigmoid(s_ij) (0 where masked),
    p_ij = min(sum_{t >= j} g_it, max_pos - 1), s_ij += q_i . ((1 - w) e[floor p] + w e[ceil p]),
    softmax over j, times v."""
    T, B, _ = x.shape
    H, dh = m.num_heads, m.head_dim
    table = m.contextual_positions.embeddings
    top = m.contextual_positions.max_pos - 1
    q, k, v = (proj(x).view(T, B, H, dh) for proj in (m.q_proj, m.k_proj, m.v_proj))
    out = torch.zeros(T, B, H, dh, dtype=x.dtype)
    for b in range(B):
        masked = (attn_mask == float("-inf")) | key_padding_mask[b].unsqueeze(0)
        for h in range(H):
            s = q[:, b, h] @ k[:, b, h].T / math.sqrt(dh)
            s = s.masked_fill(masked, float("-inf"))
            gates = torch.sigmoid(s)
            total = torch.zeros_like(s)
            for i in range(T):
                for j in range(T):
                    p = min(float(gates[i, j:].sum()), top)
                    low, w = math.floor(p), p - math.floor(p)
                    e = (1 - w) * table[low] + w * table[math.ceil(p)]
                    total[i, j] = s[i, j] + q[i, b, h] @ e
            out[:, b, h] = torch.softmax(total, -1) @ v[:, b, h]
    return m.out_proj(out.reshape(T, B, H * dh))


@pytest.mark.parametrize("need_weights", [False, True])
def test_built_cope_attention_matches_the_papers_equations(need_weights):
    model = tiny_model(COPE).double()
    attention = model.decoder.layers[1].self_attn
    x = torch.randn(9, 2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    kpm, mask = padding_mask([9, 6], 9), causal_mask(9).double()
    out, _ = attention(x, x, x, key_padding_mask=kpm, attn_mask=mask, need_weights=need_weights)
    torch.testing.assert_close(out, cope_reference(attention, x, kpm, mask))
    # positions beyond the table clamp to its last row: gates of ~1 count past max_pos = 5
    assert float(attention.contextual_positions.positions(torch.full((9, 9), 30.0)).max()) == 4


def test_cope_model_decodes_incrementally_with_beam_reordering_and_ignores_padding():
    model = tiny_model(COPE).double()
    assert_decodes_incrementally_with_beam_reordering(model)
    assert_padding_invariant(model)
    carried = tiny_model(COPE + ["--realformer", "--share-decoder-layers"]).double()
    assert_decodes_incrementally_with_beam_reordering(carried)
    lm = tiny_model(["--arch", "variant_transformer_lm", "--decoder-rel-pos", "cope"], lm=True)
    assert_lm_decodes_incrementally(lm.double(), 7)


# CoPE in compositional decoder self-attention (tests/test_cope_compositional.py): per search
COMPOSITIONAL_COPE = COPE + ["--decoder-attention-type", "compositional", "--num-searches", "2"]


@pytest.mark.parametrize("options", [COPE, COMPOSITIONAL_COPE], ids=["multihead", "compositional"])
def test_cope_forces_the_explicit_path_and_its_table_gets_gradients(monkeypatch, options):
    import fairseq_plugins.modules.attend as attend

    calls = []
    fused = attend.fused_attention
    monkeypatch.setattr(attend, "fused_attention", lambda *a: calls.append(1) or fused(*a))
    model = randomize(build(options + TINY)[0], std=0.2).train()
    src, prev = torch.randint(4, 20, (2, 7)), torch.randint(4, 20, (2, 6))
    out, _ = model(src, torch.tensor([7, 7]), prev)
    out.square().mean().backward()
    assert calls == []  # CoPE needs the head / search logits: never the fused call (CUDA neither)
    for layer in model.decoder.layers:
        grad = layer.self_attn.contextual_positions.embeddings.grad
        assert grad is not None and grad.abs().sum() > 0


@pytest.mark.slow
@pytest.mark.parametrize("attention_type", ["multihead", "compositional"])
def test_cope_trains_and_generates_through_fairseqs_clis(demo_bin, tmp_path, attention_type):
    from position_options_testing import train_and_generate

    options = ["--decoder-rel-pos", "cope", "--cope-max-pos", "8"]
    options += ["--decoder-attention-type", attention_type]
    checkpoint = train_and_generate(demo_bin, tmp_path / "ckpt", options)
    table = checkpoint["model"]["decoder.layers.0.self_attn.contextual_positions.embeddings"]
    # head width, or search width (searches default to the heads)
    assert table.shape == (8, 16) and table.abs().sum() > 0  # trained away from its zero start
    if attention_type == "compositional":
        assert "decoder.layers.0.self_attn.retrieval_query_proj.weight" in checkpoint["model"]
