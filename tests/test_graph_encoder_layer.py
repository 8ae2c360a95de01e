"""Graph-Transformer encoder layer against a re-statement of docs/method.md §3."""

import math

import pytest
import torch
import torch.nn.functional as F
from attention_testing import graph_layer, padding_mask
from fairseq.modules import MultiheadAttention

D, H = 32, 4
FUSIONS = ["sum", "weight-gate", "self-gate"]


def make_layer(fusion="sum", half=False, shared=False, pre_norm=False, **options):
    """A layer of width D, ffn 64; compositional attention (when asked) with S = R = heads."""
    options = dict(num_searches=None, num_retrievals=None) | options
    return graph_layer(fusion, half, shared, pre_norm, dim=D, ffn=64, **options)


def attention(m, q_in, kv_in, kpm):
    """Plain multi-head attention with the module's projections (any inner width)."""
    Tq, B, _ = q_in.shape
    inner = m.q_proj.out_features
    dh = inner // H
    q = m.q_proj(q_in).view(Tq, B, H, dh).permute(1, 2, 0, 3)
    k = m.k_proj(kv_in).view(-1, B, H, dh).permute(1, 2, 0, 3)
    v = m.v_proj(kv_in).view(-1, B, H, dh).permute(1, 2, 0, 3)
    logits = q @ k.transpose(-1, -2) / math.sqrt(dh)
    logits = logits.masked_fill(kpm.view(B, 1, 1, -1), float("-inf"))
    out = (torch.softmax(logits, -1) @ v).permute(2, 0, 1, 3).reshape(Tq, B, inner)
    return m.out_proj(out)


def reference(layer, P, I, kpm, fusion):
    pre = layer.normalize_before
    X = P + I
    p, i = (layer.self_attn_layer_norm(P), layer.self_attn_layer_norm(I)) if pre else (P, I)
    Z = [
        attention(layer.self_attn, i, i, kpm),
        attention(layer.mid_attn_incr_prev, i, p, kpm),
        attention(layer.mid_attn_prev_incr, p, i, kpm),
        layer.low_proj(p),
    ]
    if fusion == "sum":
        Fz = Z[0] + Z[1] + Z[2] + Z[3]
    elif fusion == "weight-gate":
        g = torch.softmax(layer.fusion.gate(torch.cat(Z, -1)), -1)
        Fz = sum(g[..., k : k + 1] * Z[k] for k in range(4))
    else:
        g = layer.fusion
        rows = []
        for a in range(4):
            w = torch.softmax(
                torch.stack([(g.q_proj(Z[a]) * g.k_proj(Z[b])).sum(-1) for b in range(4)], -1)
                / math.sqrt(D),
                -1,
            )
            rows.append(sum(w[..., b : b + 1] * g.v_proj(Z[b]) for b in range(4)))
        Fz = sum(rows) / 4
    x = X + Fz
    if not pre:
        x = layer.self_attn_layer_norm(x)
    residual = x
    h = layer.final_layer_norm(x) if pre else x
    x = residual + layer.fc2(F.relu(layer.fc1(h)))
    return x if pre else layer.final_layer_norm(x)


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize("half,pre_norm", [(False, False), (True, False), (False, True)])
def test_layer_matches_reference(fusion, half, pre_norm):
    torch.manual_seed(0)
    layer = make_layer(fusion, half=half, pre_norm=pre_norm)
    P, I = torch.randn(6, 3, D), torch.randn(6, 3, D)
    kpm = padding_mask([6, 4, 2], 6, left=True)
    out = layer(P, I, kpm)
    torch.testing.assert_close(out, reference(layer, P, I, kpm, fusion), atol=1e-5, rtol=1e-5)


def test_zero_previous_sum_fusion_reduces_to_self_attention_on_increment():
    """P = 0, no biases: M1 and L vanish, M2 has a zero query (uniform over I), H is plain
    self-attention on I: checks that the four parts are wired as specified."""
    torch.manual_seed(1)
    layer = make_layer("sum")
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.endswith("bias") and ("attn" in name or "low_proj" in name):
                p.zero_()
    stock = MultiheadAttention(D, H, self_attention=True).eval()
    stock.load_state_dict(layer.self_attn.state_dict())
    I = torch.randn(5, 2, D)
    kpm = padding_mask([5, 3], 5)
    high, mid_ip, mid_pi, low = layer.parts(torch.zeros_like(I), I, kpm)
    torch.testing.assert_close(high, stock(I, I, I, key_padding_mask=kpm, need_weights=False)[0])
    torch.testing.assert_close(mid_ip, torch.zeros_like(I))
    torch.testing.assert_close(low, torch.zeros_like(I))
    m2 = layer.mid_attn_prev_incr
    keep = (~kpm).float().T.unsqueeze(-1)  # (T, B, 1)
    mean_v = (m2.v_proj(I) * keep).sum(0) / keep.sum(0)
    torch.testing.assert_close(mid_pi, m2.out_proj(mean_v).expand_as(I), atol=1e-5, rtol=1e-5)


def test_weight_gate_is_a_distribution_and_self_gate_is_the_mean_of_the_mix():
    torch.manual_seed(2)
    parts = [torch.randn(4, 2, D) for _ in range(4)]
    wg = make_layer("weight-gate").fusion
    g = wg.weights(parts)
    assert g.shape == (4, 2, 4) and (g >= 0).all()
    torch.testing.assert_close(g.sum(-1), torch.ones(4, 2))
    sg = make_layer("self-gate").fusion
    mix = sg.mix(parts)
    assert mix.shape == (4, 2, 4, D)
    torch.testing.assert_close(sg(parts), mix.mean(dim=-2))


@pytest.mark.parametrize("fusion", FUSIONS)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"graph_half": True},
        {"shared": True},
        {"attention_type": "compositional"},
        {"rel_pos": "eb"},
    ],
)
def test_gradients_reach_every_part_and_padding_is_invariant(fusion, options):
    torch.manual_seed(3)
    opts = dict(options)
    half = opts.pop("graph_half", False)
    shared = opts.pop("shared", False)
    layer = make_layer(fusion, half=half, shared=shared, **opts).train()
    P, I = torch.randn(5, 2, D), torch.randn(5, 2, D)
    kpm = padding_mask([5, 3], 5, left=True)
    layer(P, I, kpm).pow(2).mean().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    layer.eval()
    alone = layer(P[2:, 1:2], I[2:, 1:2], None)
    batched = layer(P, I, kpm)
    torch.testing.assert_close(batched[2:, 1:2], alone, atol=1e-5, rtol=1e-5)


def test_half_dimension_and_shared_qkv_parameter_counts():
    d, h2 = D, D // 2
    full = make_layer("weight-gate")
    half = make_layer("weight-gate", half=True)
    attn_full = 4 * (d * d + d)
    attn_half = 3 * (d * h2 + h2) + (h2 * d + d)
    common = sum(
        p.numel()
        for n, p in full.named_parameters()
        if n.split(".")[0] in ("fc1", "fc2", "self_attn_layer_norm", "final_layer_norm", "fusion")
    )
    assert sum(p.numel() for p in full.parameters()) == common + 3 * attn_full + (d * d + d)
    assert sum(p.numel() for p in half.parameters()) == common + 3 * attn_half + (d * h2 + h2) + (
        h2 * d + d
    )
    shared = make_layer("weight-gate", shared=True)
    qkv = 3 * (d * d + d)
    assert (
        sum(p.numel() for p in shared.parameters())
        == sum(p.numel() for p in full.parameters()) - 2 * qkv
    )
