"""Compositional attention against an independent re-statement of docs/method.md §1."""

import math

import pytest
import torch
import torch.nn.functional as F
from attention_testing import (
    causal_mask,
    decode_step_by_step,
    padding_mask,
)
from compositional_reference import (
    D,
    inject_noise,
    inject_search_noise,
    known_noise,
    make,
    reference,
)
from fairseq.modules import MultiheadAttention

from fairseq_plugins.modules.compositional_attention import CompositionalAttention
from fairseq_plugins.modules.relative_positions import build_relative_positions

CONFIGS = [
    dict(num_searches=4, num_retrievals=4, scoring="dot"),
    dict(num_searches=2, num_retrievals=4, scoring="dot", retrieval_qk_dim=8),
    dict(num_searches=4, num_retrievals=2, scoring="mlp"),  # default: hidden layer of width d_s
    dict(num_searches=4, num_retrievals=2, scoring="mlp", mlp_hidden=8, attn_dim=16),
]
# The official options: learned keys, retrieval query from the search query, linear MLP.
OPTION_CONFIGS = [
    dict(num_searches=4, num_retrievals=2, scoring="learned-key"),
    dict(num_searches=2, num_retrievals=4, scoring="learned-key", query_from_search=True),
    dict(num_searches=4, num_retrievals=2, scoring="dot", query_from_search=True),
    dict(num_searches=4, num_retrievals=4, scoring="mlp", query_from_search=True, attn_dim=16),
    dict(num_searches=4, num_retrievals=2, scoring="mlp", mlp_hidden=0),
    # the learned-key network (official _func module without --qk-rule), the mlp scorer of
    # older checkpoints (query / sqrt(d_s))
    dict(num_searches=4, num_retrievals=2, scoring="learned-key-mlp"),
    dict(num_searches=2, num_retrievals=4, scoring="learned-key-mlp", query_from_search=True),
    dict(num_searches=4, num_retrievals=2, scoring="learned-key-mlp", mlp_hidden=0),
    dict(num_searches=4, num_retrievals=2, scoring="mlp", legacy_mlp_query_scaling=True),
]
CONFIGS += OPTION_CONFIGS


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


@pytest.mark.parametrize("config", CONFIGS[:3] + OPTION_CONFIGS)
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


def assert_self_attention_padding_invariant(m):
    """A sentence of 4 positions attends alike alone and right-padded in a batch of 7; returns
    it."""
    sentence = torch.randn(4, 1, D)
    alone, _ = m(sentence, sentence, sentence, need_weights=False)
    batch = torch.randn(7, 3, D)
    batch[:4, 1:2] = sentence
    kpm = padding_mask([7, 4, 6], 7)
    out, _ = m(batch, batch, batch, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(out[:4, 1:2], alone, atol=1e-5, rtol=1e-5)
    return sentence


def test_padding_invariance():
    torch.manual_seed(4)
    assert_self_attention_padding_invariant(make(num_searches=4, num_retrievals=2))


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


# -- the official options ----------------------------------------------------------
SCORINGS = ["dot", "mlp", "learned-key", "learned-key-mlp"]


def make_gumbel(scoring, temperature=0.5, cross=False, **kwargs):
    kwargs = dict(num_searches=4, num_retrievals=2, scoring=scoring) | kwargs
    m = make(cross=cross, gumbel=True, gumbel_temperature=temperature, **kwargs)
    return inject_noise(m)


@pytest.mark.parametrize("scoring", SCORINGS)
@pytest.mark.parametrize("query_from_search", [False, True])
def test_gumbel_training_matches_reference_with_the_same_noise(scoring, query_from_search):
    torch.manual_seed(7)
    m = make_gumbel(scoring, query_from_search=query_from_search).train()
    x = torch.randn(6, 3, D)
    kpm = padding_mask([6, 4, 2], 6)
    noise = known_noise(3, 4, 6, 2)
    ref = reference(m, x, x, key_padding_mask=kpm, noise=noise)
    for need_weights in (False, True):
        out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    out, _ = m(x, x, x, attn_mask=causal_mask(6), need_weights=False)
    ref = reference(m, x, x, attn_mask=causal_mask(6), noise=noise)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    # the noise matters: without it (evaluation) the output is another one
    assert not torch.allclose(out, reference(m.eval(), x, x, attn_mask=causal_mask(6)), atol=1e-4)

    c = make_gumbel(scoring, cross=True, query_from_search=query_from_search).train()
    enc = torch.randn(7, 3, D)
    kpm = padding_mask([7, 3, 5], 7, left=True)
    out, _ = c(x, enc, enc, key_padding_mask=kpm, static_kv=True, need_weights=False)
    torch.testing.assert_close(
        out, reference(c, x, enc, key_padding_mask=kpm, noise=noise), atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("scoring", ["dot", "mlp"])
def test_gumbel_search_matches_reference_with_the_same_noise(scoring):
    """gumbel_search: Gumbel-softmax on the search logits too (after mask and bias), with padding
    and a causal mask, self- and cross-attention; plain softmaxes at evaluation."""
    torch.manual_seed(9)
    m = inject_search_noise(make_gumbel(scoring, gumbel_search=True)).train()
    x = torch.randn(6, 3, D)
    kpm = padding_mask([6, 4, 2], 6)
    noise, search_noise = known_noise(3, 4, 6, 2), known_noise(3, 4, 6, 6)
    ref = reference(m, x, x, key_padding_mask=kpm, noise=noise, search_noise=search_noise)
    for need_weights in (False, True):
        out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    without = reference(m, x, x, key_padding_mask=kpm, noise=noise, search_noise=0 * search_noise)
    assert not torch.allclose(ref, without, atol=1e-4)  # the search noise matters
    out, _ = m(x, x, x, attn_mask=causal_mask(6), need_weights=False)
    ref = reference(m, x, x, attn_mask=causal_mask(6), noise=noise, search_noise=search_noise)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    m.eval()
    out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(out, reference(m, x, x, key_padding_mask=kpm), atol=1e-5, rtol=1e-5)

    c = inject_search_noise(make_gumbel(scoring, cross=True, gumbel_search=True)).train()
    enc = torch.randn(7, 3, D)
    kpm = padding_mask([7, 3, 5], 7, left=True)
    out, _ = c(x, enc, enc, key_padding_mask=kpm, static_kv=True, need_weights=False)
    ref = reference(
        c, x, enc, key_padding_mask=kpm, noise=noise, search_noise=known_noise(3, 4, 6, 7)
    )
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_gumbel_search_incremental_decoding_equals_full_forward():
    """Training with known noise on both softmaxes: cached steps = the full forward."""
    torch.manual_seed(12)
    m = make_gumbel("dot", gumbel_search=True).train()
    x = torch.randn(6, 3, D)
    inject_search_noise(inject_noise(m))
    full, _ = m(x, x, x, attn_mask=causal_mask(6), need_weights=False)
    inject_search_noise(inject_noise(m, offset=[0]), offset=[0])
    torch.testing.assert_close(decode_step_by_step(m, x), full, atol=1e-5, rtol=1e-5)


def test_gumbel_search_padding_invariance():
    """A sentence padded on the right (noise by query position and key index) gives the output
    it gives alone, in training with known noise on both softmaxes."""
    torch.manual_seed(13)
    m = inject_search_noise(inject_noise(make_gumbel("dot", gumbel_search=True))).train()
    x = torch.randn(6, 2, D)
    kpm = padding_mask([6, 4], 6)
    out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    alone, _ = m(x[:4, 1:], x[:4, 1:], x[:4, 1:], need_weights=False)
    torch.testing.assert_close(out[:4, 1:], alone, atol=1e-5, rtol=1e-5)


def test_gumbel_search_needs_gumbel():
    with pytest.raises(ValueError, match="^--retrieval-gumbel-search needs --retrieval-gumbel"):
        make(num_searches=4, num_retrievals=2, gumbel_search=True)


@pytest.mark.parametrize("scoring", SCORINGS)
def test_gumbel_is_plain_softmax_at_evaluation(scoring):
    torch.manual_seed(8)
    m = make(num_searches=4, num_retrievals=2, scoring=scoring, gumbel=True).eval()
    plain = make(num_searches=4, num_retrievals=2, scoring=scoring)
    plain.load_state_dict(m.state_dict())
    x = torch.randn(5, 2, D)
    out, _ = m(x, x, x, need_weights=False)
    torch.testing.assert_close(out, plain(x, x, x, need_weights=False)[0], atol=0, rtol=0)
    torch.testing.assert_close(out, reference(m, x, x), atol=1e-5, rtol=1e-5)


def test_gumbel_sampler_draws_standard_gumbel_noise_and_varies_in_training():
    torch.manual_seed(9)
    m = make(num_searches=4, num_retrievals=2, gumbel=True).train()
    noise = m.sample_gumbel(torch.zeros(50, 4, 100, 5, dtype=torch.float16))
    assert noise.dtype == torch.float32 and noise.shape == (50, 4, 100, 5)
    # Gumbel(0, 1): mean = Euler's gamma, variance = pi^2 / 6
    assert abs(noise.mean().item() - 0.5772) < 0.02
    assert abs(noise.var().item() - math.pi**2 / 6) < 0.05
    x = torch.randn(5, 2, D)
    m.keep_value_scores = True
    first, _ = m(x, x, x, need_weights=False)
    scores = m.last_value_scores
    second, _ = m(x, x, x, need_weights=False)
    assert not torch.allclose(first, second)
    torch.testing.assert_close(scores.sum(-1), torch.ones(2, 4, 5))


def test_gumbel_temperature_sharpens_the_value_scores():
    torch.manual_seed(10)
    x = torch.randn(5, 2, D)
    maxima = []
    for temperature in (4.0, 1.0, 0.05):
        m = make_gumbel("dot", temperature=temperature).train()
        m.keep_value_scores = True
        m(x, x, x, need_weights=False)
        maxima.append(m.last_value_scores.max(-1).values.mean().item())
    assert maxima[0] < maxima[1] < maxima[2] and maxima[2] > 0.95


@pytest.mark.parametrize("scoring", SCORINGS)
def test_gumbel_incremental_decoding_equals_full_forward(scoring):
    """Evaluation (what generation runs): plain softmax, cached steps = full forward. Training with
    known noise: the same, step by step (noise by position), with relative positions."""
    torch.manual_seed(11)
    rel = build_relative_positions("eb", 3, D // 4, 4)
    m = make_gumbel(scoring, query_from_search=True, relative_positions=rel)
    x = torch.randn(6, 3, D)
    for training in (False, True):
        m.train(training)
        inject_noise(m)
        full, _ = m(x, x, x, attn_mask=causal_mask(6), need_weights=False)
        inject_noise(m, offset=[0])
        torch.testing.assert_close(decode_step_by_step(m, x), full, atol=1e-5, rtol=1e-5)

    c = make_gumbel(scoring, cross=True).eval()
    enc = torch.randn(5, 3, D)
    kpm = padding_mask([5, 2, 4], 5, left=True)
    full, _ = c(x, enc, enc, key_padding_mask=kpm, need_weights=False)
    steps = decode_step_by_step(c, x, enc, kpm)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "config",
    OPTION_CONFIGS
    + [dict(num_searches=4, num_retrievals=2, scoring=s, gumbel=True) for s in SCORINGS],
)
def test_options_padding_invariance(config):
    """Right-padded queries/keys (self) and left-padded sources (cross); in training with known
    Gumbel noise where the config has it (noise depends on the position, not the batch row)."""
    torch.manual_seed(12)
    m = inject_noise(make(**config)).train(config.get("gumbel", False))
    sentence = assert_self_attention_padding_invariant(m)

    c = inject_noise(make(cross=True, **config)).train(config.get("gumbel", False))
    y = torch.randn(3, 2, D)
    cross_alone, _ = c(y[:, :1], sentence, sentence, need_weights=False)
    src = torch.randn(7, 2, D)
    src[3:, :1] = sentence
    kpm = padding_mask([4, 7], 7, left=True)
    cross, _ = c(y, src, src, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(cross[:, :1], cross_alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "config",
    OPTION_CONFIGS
    + [dict(num_searches=4, num_retrievals=2, scoring=s, gumbel=True) for s in SCORINGS],
)
def test_options_gradients_are_exact_and_reach_every_parameter(config):
    """Numerical gradients (float64, known Gumbel noise in training) of the output with respect to
    the queries, keys and the retrieval parameters; every parameter gets a finite gradient."""
    torch.manual_seed(13)
    m = inject_noise(make(**(config | {"retrieval_qk_dim": 4}))).double().train()
    x = torch.randn(3, 2, D, dtype=torch.float64, requires_grad=True)
    enc = torch.randn(4, 2, D, dtype=torch.float64, requires_grad=True)
    kpm = padding_mask([4, 3], 4)
    params = [p for n, p in m.named_parameters() if n.startswith("retrieval")]

    def out(x, enc, *_):
        return m(x, enc, enc, key_padding_mask=kpm, need_weights=False)[0]

    assert torch.autograd.gradcheck(out, (x, enc, *params), fast_mode=True)
    m.float().zero_grad()
    xf = torch.randn(5, 2, D)
    m(xf, xf, xf, need_weights=False)[0].pow(2).sum().backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    if config["scoring"] == "learned-key":
        assert m.retrieval_keys.grad.abs().sum() > 0


@pytest.mark.parametrize("S,R,ds,attn_dim", [(8, 8, 32, 64), (4, 2, 16, 32), (2, 4, 8, 64)])
@pytest.mark.parametrize("scoring", SCORINGS + ["mlp-linear", "learned-key-mlp-linear"])
@pytest.mark.parametrize("query_from_search", [False, True])
def test_option_parameter_counts_match_formula(S, R, ds, attn_dim, scoring, query_from_search):
    linear = scoring.endswith("-linear")
    d = 64
    dh, dv = d // S, attn_dim // R
    m = CompositionalAttention(
        d,
        S,
        R,
        retrieval_qk_dim=ds,
        attn_dim=attn_dim,
        scoring=scoring.removesuffix("-linear"),
        mlp_hidden=0 if linear else None,
        query_from_search=query_from_search,
        gumbel=True,  # no parameters
        self_attention=True,
    )
    weights = 2 * d * d + d * attn_dim + S * dv * d
    biases = 2 * d + attn_dim + d
    # retrieval query: Linear(d, S d_s), or Linear(d_h, d_s) shared by the searches
    weights += dh * ds if query_from_search else d * S * ds
    biases += ds if query_from_search else S * ds
    if scoring == "dot":  # retrieval key Linear(d_v, d_s)
        weights, biases = weights + dv * ds, biases + ds
    elif scoring == "learned-key":  # R keys of width d_s
        weights += R * ds
    elif scoring == "mlp":  # Linear(d_v + d_s, d_s), ReLU, Linear(d_s, 1)
        weights, biases = weights + (dv + ds) * ds + ds, biases + ds + 1
    elif scoring == "mlp-linear":  # linear scorer Linear(d_v + d_s, 1)
        weights, biases = weights + dv + ds, biases + 1
    elif scoring == "learned-key-mlp":  # R keys; Linear(2 d_s, d_s), ReLU, Linear(d_s, 1)
        weights, biases = weights + R * ds + 2 * ds * ds + ds, biases + ds + 1
    else:  # R keys; Linear(2 d_s, 1)
        weights, biases = weights + R * ds + 2 * ds, biases + 1
    assert sum(p.numel() for p in m.parameters()) == weights + biases
    assert sum(p.numel() for p in m.parameters() if p.dim() == 2) == weights


# Initialisation against the official formulas: tests/test_official_parity.py


def test_mlp_scorer_defaults_to_a_hidden_layer_of_width_ds_and_zero_stays_linear():
    m = CompositionalAttention(D, 4, 2, 8, scoring="mlp")
    assert isinstance(m.retrieval_scorer, torch.nn.Sequential)
    assert m.retrieval_scorer[0].out_features == 8
    linear = CompositionalAttention(D, 4, 2, 8, scoring="mlp", mlp_hidden=0)
    assert isinstance(linear.retrieval_scorer, torch.nn.Linear)


def test_linear_mlp_scorer_ignores_the_query():
    """Why the default MLP has a hidden layer: without one, the query's term is the same for every
    retrieval and cancels in the softmax over retrievals."""
    torch.manual_seed(15)
    m = make(num_searches=4, num_retrievals=2, scoring="mlp", mlp_hidden=0)
    m.keep_value_scores = True
    x = torch.randn(5, 2, D)
    m(x, x, x, need_weights=False)
    before = m.last_value_scores
    with torch.no_grad():
        m.retrieval_query_proj.weight.normal_()
    m(x, x, x, need_weights=False)
    torch.testing.assert_close(m.last_value_scores, before)


@pytest.mark.parametrize(
    "kwargs,flag",
    [
        (dict(gumbel=True, gumbel_temperature=0.0), "--retrieval-gumbel-temperature"),
        (dict(gumbel=True, gumbel_temperature=-1.0), "--retrieval-gumbel-temperature"),
        (dict(gumbel_temperature=float("nan")), "--retrieval-gumbel-temperature"),
        (dict(scoring="mlp", mlp_hidden=-1), "--retrieval-mlp-hidden"),
        (dict(scoring="learned", retrieval_qk_dim=8), "--retrieval-scoring"),
    ],
)
def test_impossible_option_values_name_the_flag(kwargs, flag):
    with pytest.raises(ValueError, match=flag):
        CompositionalAttention(D, 4, 2, **kwargs)
