"""Compositional attention against an independent re-statement of METHOD.md section 1."""

import math

import pytest
import torch
import torch.nn.functional as F
from attention_testing import (
    causal_mask,
    decode_step_by_step,
    padding_mask,
    randomize,
)
from fairseq.modules import MultiheadAttention

from fairseq_plugins.modules.compositional_attention import CompositionalAttention

D = 32


def reference(m, query, key, key_padding_mask=None, attn_mask=None):
    """The six equations with explicit loops over searches i and retrievals j."""
    S, R, dh, dv, ds = (
        m.num_searches,
        m.num_retrievals,
        m.head_dim,
        m.value_dim,
        m.retrieval_qk_dim,
    )
    X, Xk = query.transpose(0, 1), key.transpose(0, 1)  # (B, T, d)

    def part(linear, x, lo, hi):
        return x @ linear.weight[lo:hi].T + linear.bias[lo:hi]

    mask = torch.zeros(X.size(0), X.size(1), Xk.size(1))
    if attn_mask is not None:
        mask = mask + attn_mask
    if key_padding_mask is not None:
        mask = mask.masked_fill(key_padding_mask.unsqueeze(1), float("-inf"))
    heads = []
    for i in range(S):
        Qi = part(m.q_proj, X, i * dh, (i + 1) * dh)
        Ki = part(m.k_proj, Xk, i * dh, (i + 1) * dh)
        Ai = torch.softmax(Qi @ Ki.transpose(1, 2) / math.sqrt(dh) + mask, dim=-1)
        qi = part(m.retrieval_query_proj, X, i * ds, (i + 1) * ds) / math.sqrt(ds)
        O, scores = [], []
        for j in range(R):
            Oij = Ai @ part(m.v_proj, Xk, j * dv, (j + 1) * dv)
            if m.scoring == "dot":
                kij = m.retrieval_key_proj(Oij)
                scores.append((qi * kij).sum(-1))
            else:
                scores.append(m.retrieval_scorer(torch.cat([Oij, qi], dim=-1)).squeeze(-1))
            O.append(Oij)
        c = torch.softmax(torch.stack(scores, dim=-1), dim=-1)
        heads.append(sum(c[..., j : j + 1] * O[j] for j in range(R)))
    return m.out_proj(torch.cat(heads, dim=-1)).transpose(0, 1)


CONFIGS = [
    dict(num_searches=4, num_retrievals=4, scoring="dot"),
    dict(num_searches=2, num_retrievals=4, scoring="dot", retrieval_qk_dim=8),
    dict(num_searches=4, num_retrievals=2, scoring="mlp"),
    dict(num_searches=4, num_retrievals=2, scoring="mlp", mlp_hidden=8, attn_dim=16),
]


def make(cross=False, **kwargs):
    kwargs.setdefault("retrieval_qk_dim", 16)
    m = CompositionalAttention(
        D, self_attention=not cross, encoder_decoder_attention=cross, **kwargs
    )
    return randomize(m).eval()


@pytest.mark.parametrize("config", CONFIGS)
def test_self_attention_matches_reference_with_padding(config):
    torch.manual_seed(0)
    m = make(**config)
    x = torch.randn(6, 3, D)
    kpm = padding_mask([6, 4, 2], 6)
    out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    ref = reference(m, x, x, key_padding_mask=kpm)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    # the explicit (need_weights) path computes the same thing
    out_w, weights = m(x, x, x, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(out_w, ref, atol=1e-5, rtol=1e-5)
    assert weights.shape == (3, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 6))


@pytest.mark.parametrize("config", CONFIGS)
def test_causal_and_cross_attention_match_reference(config):
    torch.manual_seed(1)
    m = make(**config)
    x = torch.randn(5, 2, D)
    out, _ = m(x, x, x, attn_mask=causal_mask(5), need_weights=False)
    torch.testing.assert_close(
        out, reference(m, x, x, attn_mask=causal_mask(5)), atol=1e-5, rtol=1e-5
    )

    c = make(cross=True, **config)
    enc = torch.randn(7, 2, D)
    kpm = padding_mask([7, 3], 7, left=True)
    out, _ = c(x, enc, enc, key_padding_mask=kpm, static_kv=True, need_weights=False)
    torch.testing.assert_close(
        out, reference(c, x, enc, key_padding_mask=kpm), atol=1e-5, rtol=1e-5
    )


def test_identity_value_scores_equal_fairseq_multihead_attention():
    """S = R = h, d_v = d_h, value scores forced to the identity: stock multi-head attention."""
    torch.manual_seed(2)
    heads = 4
    m = make(num_searches=heads, num_retrievals=heads)
    mha = MultiheadAttention(D, heads, self_attention=True).eval()
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        getattr(mha, name).load_state_dict(getattr(m, name).state_dict())

    def identity_scores(pairs, query):
        eye = torch.eye(heads).view(1, heads, 1, heads)
        return eye.expand(pairs.size(0), heads, pairs.size(2), heads)

    m.value_scores_override = identity_scores
    x = torch.randn(6, 3, D)
    kpm = padding_mask([6, 5, 3], 6)
    ours, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    stock, _ = mha(x, x, x, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(ours, stock, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("config", CONFIGS[:3])
def test_incremental_decoding_equals_full_forward_and_survives_reordering(config):
    torch.manual_seed(3)
    m = make(**config)
    x = torch.randn(6, 4, D)
    full, _ = m(x, x, x, attn_mask=causal_mask(6), need_weights=False)
    steps = decode_step_by_step(m, x)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)

    order = torch.tensor([2, 2, 0, 1])  # beam search: duplicate one hypothesis, drop another
    reordered = decode_step_by_step(m, x, reorder=(3, order))
    x2 = x.index_select(1, order)
    full2, _ = m(x2, x2, x2, attn_mask=causal_mask(6), need_weights=False)
    torch.testing.assert_close(reordered[3:], full2[3:], atol=1e-5, rtol=1e-5)

    c = make(cross=True, **config)
    enc = torch.randn(5, 4, D)
    kpm = padding_mask([5, 2, 4, 5], 5, left=True)
    full, _ = c(x, enc, enc, key_padding_mask=kpm, need_weights=False)
    steps = decode_step_by_step(c, x, enc, kpm)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


def test_padding_invariance():
    torch.manual_seed(4)
    m = make(num_searches=4, num_retrievals=2)
    sentence = torch.randn(4, 1, D)
    alone, _ = m(sentence, sentence, sentence, need_weights=False)
    batch = torch.randn(7, 3, D)
    batch[:4, 1:2] = sentence
    kpm = padding_mask([7, 4, 6], 7)
    out, _ = m(batch, batch, batch, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(out[:4, 1:2], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("S,R,ds,attn_dim", [(8, 8, 32, 64), (4, 2, 16, 32), (2, 4, 8, 64)])
def test_parameter_count_matches_formula(S, R, ds, attn_dim):
    d = 64
    m = CompositionalAttention(d, S, R, retrieval_qk_dim=ds, attn_dim=attn_dim, self_attention=True)
    dv = attn_dim // R
    weights = 2 * d * d + d * attn_dim + d * S * ds + dv * ds + S * dv * d
    biases = 2 * d + attn_dim + S * ds + ds + d
    assert sum(p.numel() for p in m.parameters()) == weights + biases
    assert sum(p.numel() for p in m.parameters() if p.dim() == 2) == weights


@pytest.mark.parametrize(
    "kwargs,flag",
    [
        (dict(num_searches=3, num_retrievals=4), "--num-searches"),
        (dict(num_searches=4, num_retrievals=0), "--num-retrievals"),
        (dict(num_searches=0, num_retrievals=4), "--num-searches"),
        (dict(num_searches=4, num_retrievals=3), "--compositional-attn-dim"),
        (dict(num_searches=4, num_retrievals=4, scoring="cosine"), "--retrieval-scoring"),
    ],
)
def test_impossible_settings_name_the_flag(kwargs, flag):
    with pytest.raises(ValueError, match=flag):
        CompositionalAttention(D, **kwargs)


def test_value_scores_hook_and_single_fused_call(monkeypatch):
    m = make(num_searches=4, num_retrievals=2)
    calls = []
    real = F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counting)
    m.keep_value_scores = True
    x = torch.randn(5, 3, D)
    m(x, x, x, need_weights=False)
    assert len(calls) == 1
    scores = m.last_value_scores
    assert scores.shape == (3, 4, 5, 2)  # (B, S, T, R)
    torch.testing.assert_close(scores.sum(-1), torch.ones(3, 4, 5))


def test_gradients_reach_every_parameter():
    for config in CONFIGS:
        m = make(**config).train()
        x = torch.randn(5, 2, D)
        m(x, x, x, need_weights=False)[0].pow(2).sum().backward()
        for name, p in m.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_dot_retrieval_mix_backward_is_exact():
    """The hand-written backward of the fused dot-product value-score mix, against autograd's
    numerical gradients in float64 (pairs, folded query and shift)."""
    from fairseq_plugins.modules.compositional_attention import _DotRetrievalMix

    torch.manual_seed(5)
    n, r, dv = 6, 3, 4
    pairs = torch.randn(n, r, dv, dtype=torch.float64, requires_grad=True)
    folded = torch.randn(n, dv, dtype=torch.float64, requires_grad=True)
    shift = torch.randn(n, dtype=torch.float64, requires_grad=True)

    def mixed_only(p, f, s):
        return _DotRetrievalMix.apply(p, f, s)[0]

    assert torch.autograd.gradcheck(mixed_only, (pairs, folded, shift))
    assert torch.autograd.gradcheck(lambda p, f: mixed_only(p, f, None), (pairs, folded))


def test_weighted_retrieval_mix_backward_is_exact_and_equals_the_pairs_path():
    """The mix from the search weights (short keys, never builds the pairs): float64 gradcheck
    of its hand-written backward, and output, value scores and gradients equal to building the
    pairs O_j = A V_j and mixing them (_DotRetrievalMix)."""
    from fairseq_plugins.modules.compositional_attention import (
        _DotRetrievalMix,
        _WeightedRetrievalMix,
    )

    torch.manual_seed(6)
    bsz, rows, src_len, r, dv = 2, 5, 3, 3, 4
    weights = torch.softmax(torch.randn(bsz, rows, src_len, dtype=torch.float64), -1)
    weights.requires_grad_()
    values = torch.randn(bsz, src_len * r, dv, dtype=torch.float64, requires_grad=True)
    folded = torch.randn(bsz, rows, dv, dtype=torch.float64, requires_grad=True)
    shift = torch.randn(bsz, rows, dtype=torch.float64, requires_grad=True)

    def fused(a, v, f, s):
        return _WeightedRetrievalMix.apply(a, v, f, s, r)

    assert torch.autograd.gradcheck(lambda *x: fused(*x)[0], (weights, values, folded, shift))
    assert torch.autograd.gradcheck(
        lambda a, v, f: fused(a, v, f, None)[0], (weights, values, folded)
    )

    def via_pairs(a, v, f, s):
        pairs = torch.bmm(a, v.reshape(bsz, src_len, r * dv)).reshape(-1, r, dv)
        mixed, scores = _DotRetrievalMix.apply(pairs, f.reshape(-1, dv), s.reshape(-1))
        return mixed.view(bsz, rows, dv), scores.view(bsz, rows, r)

    inputs = (weights, values, folded, shift)
    (out, scores), (ref, ref_scores) = fused(*inputs), via_pairs(*inputs)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(scores, ref_scores)
    grad = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad(out, inputs, grad), torch.autograd.grad(ref, inputs, grad)):
        torch.testing.assert_close(a, b)


def test_short_keys_take_the_weighted_mix_and_match_the_pairs_path():
    """A module whose keys are no longer than d_v mixes from the search weights; output and
    parameter gradients equal those of the pairs path (combine), padded, in training."""
    from fairseq_plugins.modules.compositional_attention import _WeightedRetrievalMix

    torch.manual_seed(7)
    m = CompositionalAttention(D, 2, 2, retrieval_qk_dim=4, self_attention=True).double().train()
    x = torch.randn(5, 2, D, dtype=torch.float64)
    kpm = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    assert 5 <= m.value_dim
    calls = []
    mix = _WeightedRetrievalMix.apply
    _WeightedRetrievalMix.apply = lambda *a: calls.append(1) or mix(*a)
    try:  # need_weights: the explicit path (a problem this small otherwise takes SDPA)
        out = m(x, x, x, key_padding_mask=kpm, need_weights=True)[0]
    finally:
        _WeightedRetrievalMix.apply = mix
    assert calls
    grads = torch.autograd.grad(out.square().sum(), list(m.parameters()))
    m.weigh_and_combine = lambda w, v, q: m.combine(m.apply_weights(w, v), q)
    ref = m(x, x, x, key_padding_mask=kpm, need_weights=True)[0]
    ref_grads = torch.autograd.grad(ref.square().sum(), list(m.parameters()))
    torch.testing.assert_close(out, ref)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b)


def test_float64_module_stays_float64():
    """Value scores and the output are computed in the input dtype when it is float64 (float32
    at least, never below the input), so float64 reference checks are exact."""
    torch.manual_seed(6)
    for scoring in ("dot", "mlp"):
        m = make(num_searches=4, num_retrievals=2, scoring=scoring).double()
        m.keep_value_scores = True
        x = torch.randn(5, 2, D, dtype=torch.float64)
        out, _ = m(x, x, x, need_weights=False)
        assert out.dtype == m.last_value_scores.dtype == torch.float64
        torch.testing.assert_close(out, reference(m, x, x), atol=1e-12, rtol=1e-12)
