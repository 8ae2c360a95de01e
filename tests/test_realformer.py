"""RealFormer residual attention (--realformer, docs/official-code.md A1): a re-statement of
the official arithmetic in float64, incremental decoding == full forward (the notebook has no
incremental decoder), padding invariance, three independent carries, fairseq's CLI tools."""

import math

import pytest
import torch
from attention_testing import causal_mask, padding_mask, randomize
from conftest import train_then_generate
from model_testing import (
    REALFORMER_VARIANTS,
    TINY,
    assert_lm_decodes_incrementally,
    batch,
    build,
    full_log_probs,
    tiny_model,
)

from fairseq_plugins.modules.compositional_attention import CompositionalAttention
from fairseq_plugins.modules.relative_positions import build_relative_positions
from fairseq_plugins.modules.residual_attention import share_residual_logits
from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention

D, H, RADIUS = 16, 4, 2


def label(i, j):
    return RADIUS + max(-RADIUS, min(RADIUS, i - j))


def official_logits(m, x, mask):
    """One layer's Z without the carry, as the notebook's scaled_dot_product_relative_attention
    (A1.3 steps 1-5): (Q K^T + Q.r[id] + b[id]) / sqrt(d_k) + mask, per head, loops over i, j."""
    B, T, dh = x.size(1), x.size(0), m.head_dim
    q = (x @ m.q_proj.weight.T + m.q_proj.bias).view(T, B, m.num_heads, dh)
    k = (x @ m.k_proj.weight.T + m.k_proj.bias).view(T, B, m.num_heads, dh)
    rel = m.relative_positions
    z = torch.zeros(B, m.num_heads, T, T, dtype=x.dtype)
    for b in range(B):
        for h in range(m.num_heads):
            for i in range(T):
                for j in range(T):
                    s = q[i, b, h] @ k[j, b, h]
                    if rel.embeddings is not None:
                        s = s + q[i, b, h] @ rel.embeddings[label(i, j)]
                    if rel.bias is not None:
                        s = s + rel.bias[label(i, j), h if rel.bias.size(1) > 1 else 0]
                    z[b, h, i, j] = s / math.sqrt(dh)
    return z + mask


def official_multihead(m, x, z):
    """softmax(Z) V, heads concatenated, out_proj."""
    B, T = x.size(1), x.size(0)
    v = (x @ m.v_proj.weight.T + m.v_proj.bias).view(T, B, m.num_heads, m.head_dim)
    out = torch.einsum("bhij,jbhd->ibhd", torch.softmax(z, -1), v).reshape(T, B, -1)
    return out @ m.out_proj.weight.T + m.out_proj.bias


def official_compositional(m, x, z):
    """Compositional attention with search logits Z: A_i = softmax(Z_i), O_ij = A_i V_j, dot value
    scores softmax_j(q_i . (O_ij W_rk + b) / sqrt(d_s)), concat, out_proj."""
    B, T, R, dv, ds = x.size(1), x.size(0), m.num_retrievals, m.value_dim, m.retrieval_qk_dim
    v = (x @ m.v_proj.weight.T + m.v_proj.bias).view(T, B, R, dv)
    pairs = torch.einsum("bsij,jbrd->bsird", torch.softmax(z, -1), v)  # (B, S, T, R, d_v)
    rq = (x @ m.retrieval_query_proj.weight.T + m.retrieval_query_proj.bias).view(T, B, -1, ds)
    keys = pairs @ m.retrieval_key_proj.weight.T + m.retrieval_key_proj.bias
    scores = torch.softmax(torch.einsum("ibsd,bsird->bsir", rq, keys) / math.sqrt(ds), -1)
    mixed = (scores.unsqueeze(-1) * pairs).sum(3)  # (B, S, T, d_v)
    out = mixed.permute(2, 0, 1, 3).reshape(T, B, -1)
    return out @ m.out_proj.weight.T + m.out_proj.bias


def stack(kind, layers=3, mode="eb"):
    modules = []
    for _ in range(layers):
        rel = build_relative_positions(mode, RADIUS, D // H, H, False)
        if kind == "multihead":
            m = SDPAMultiheadAttention(D, H, self_attention=True, relative_positions=rel)
        else:
            m = CompositionalAttention(
                D, H, 2, 4, self_attention=True, relative_positions=rel, search_dim=D
            )
        modules.append(randomize(m, std=0.4, seed=len(modules)).double().eval())
    return modules, share_residual_logits(modules)


def run_stack(modules, carry, x, **kwargs):
    carry.reset()
    for m in modules:
        x = m(x, x, x, **kwargs)[0]
    carry.reset()
    return x


@pytest.mark.parametrize("kind", ["multihead", "compositional"])
@pytest.mark.parametrize("mode", ["e", "b", "eb"])
def test_stack_matches_the_official_arithmetic(kind, mode):
    torch.manual_seed(0)
    modules, carry = stack(kind, mode=mode)
    x = torch.randn(6, 3, D, dtype=torch.float64)
    kpm = padding_mask([6, 4, 5], 6)
    attn_mask = causal_mask(6).double()
    mask = torch.zeros(3, 1, 6, 6, dtype=torch.float64).masked_fill(
        kpm.view(3, 1, 1, 6), float("-inf")
    )
    mask = mask + attn_mask
    expected, carried = x, None
    layer = official_multihead if kind == "multihead" else official_compositional
    for m in modules:
        z = official_logits(m, expected, mask)
        z = z if carried is None else z + carried  # A1.3 step 6
        expected, carried = layer(m, expected, z), z
    for need_weights in (False, True):
        out = run_stack(
            modules, carry, x, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=need_weights
        )
        torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    # the carry matters: without it the stack computes something else
    for m in modules:
        m.residual_logits = None
    plain = run_stack(modules, carry, x, key_padding_mask=kpm, attn_mask=attn_mask)
    assert not torch.allclose(plain, expected, atol=1e-4)


def test_stack_gradients_are_exact():
    torch.manual_seed(1)
    modules, carry = stack("compositional", layers=2)
    x = torch.randn(4, 2, D, dtype=torch.float64, requires_grad=True)
    rel_params = [p for m in modules for p in m.relative_positions.parameters()]

    def out(x, *_):
        return run_stack(modules, carry, x, attn_mask=causal_mask(4).double())

    assert torch.autograd.gradcheck(out, (x, *rel_params), fast_mode=True)


# -- whole models --------------------------------------------------------------------------------
def realformer_model(name):
    return tiny_model(REALFORMER_VARIANTS[name])


def test_three_independent_carries_and_none_for_the_copy_attention():
    model = realformer_model("multihead-rel2-eb-copy-shared")
    enc_carries = {id(layer.self_attn.residual_logits) for layer in model.encoder.layers}
    self_carries = {id(layer.self_attn.residual_logits) for layer in model.decoder.layers}
    cross_carries = {id(layer.encoder_attn.residual_logits) for layer in model.decoder.layers}
    assert all(len(c) == 1 for c in (enc_carries, self_carries, cross_carries))
    assert len(enc_carries | self_carries | cross_carries) == 3
    copy_modules = list(model.decoder.copy_generator.modules())
    assert not any(getattr(m, "residual_logits", None) is not None for m in copy_modules)
    # carries live for one forward only; the model output differs from the same weights without
    src, lengths, tgt = batch()
    with torch.no_grad():
        with_carry = full_log_probs(model, src, lengths, tgt)
        assert all(c.logits is None for c in model.encoder.carries + model.decoder.carries)
        for layer in list(model.encoder.layers) + list(model.decoder.layers):
            for attn in (layer.self_attn, getattr(layer, "encoder_attn", None)):
                if attn is not None:
                    attn.residual_logits = None
        assert not torch.allclose(full_log_probs(model, src, lengths, tgt), with_carry, atol=1e-4)


def test_language_model_with_realformer_decodes_incrementally():
    torch.manual_seed(0)
    small = ["--decoder-layers", "3", "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim"]
    small += ["64", "--decoder-attention-heads", "4", "--retrieval-qk-dim", "8", "--realformer"]
    small += ["--rel-pos", "eb", "--rel-pos-radius", "2"]
    model, _ = build(["--arch", "compositional_transformer_lm"] + small, lm=True)
    assert_lm_decodes_incrementally(randomize(model, std=0.2).eval(), 7)


def test_realformer_refuses_graph_encoder_layers():
    with pytest.raises(ValueError, match="--realformer is not available with --graph-encoder"):
        build(["--arch", "graph_transformer", "--realformer"] + TINY)


TRAIN = ["--optimizer", "adam", "--lr", "5e-4", "--max-tokens", "400", "--max-update", "2"]
TRAIN += ["--no-progress-bar", "--log-interval", "1", "--no-epoch-checkpoints", "--cpu"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        ["--arch", "compgen_rel2_eb_c", "--realformer", "--share-decoder-layers"],
        ["--arch", "compgen_comp_rel2_eb_cs", "--realformer", "--retrieval-qk-dim", "8"],
    ],
    ids=["rel2-eb-c", "compositional-rel2-eb-cs"],
)
def test_realformer_trains_and_generates(demo_bin, tmp_path, extra):
    _, hyps = train_then_generate(
        demo_bin,
        tmp_path / "ckpt",
        extra + TRAIN,
        ["--beam", "3", "--batch-size", "50", "--max-len-b", "6", "--cpu"],
        updates=2,
    )
    assert len(hyps) == 100


def test_realformer_refuses_attention_types_without_logits():
    """An attention that is not the plugin's biased attention (e.g. an encoder-only type with no
    softmax logits) cannot carry: a one-line error naming the flag."""
    with pytest.raises(ValueError, match="--realformer needs multihead or compositional"):
        share_residual_logits([torch.nn.Linear(2, 2)])
