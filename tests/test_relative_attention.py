"""Relative-position attention (rel-e, rel-b, rel-eb, rel2) against a re-statement of docs/method.md
§2, incremental decoding, clipping, and coincidence with fairseq's MultiheadAttention."""

import math

import pytest
import torch
from attention_testing import (
    assert_padding_invariant,
    causal_mask,
    decode_step_by_step,
    multihead_reference,
    padding_mask,
    randomize,
)
from fairseq.modules import MultiheadAttention

from fairseq_plugins.modules import attend
from fairseq_plugins.modules.compositional_attention import CompositionalAttention
from fairseq_plugins.modules.relative_positions import (
    RelativePositionBias,
    build_relative_positions,
)
from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention

D, H = 32, 4
MODES = ["e", "b", "eb"]


def reference(m, query, key, q_pos, k_pos, key_padding_mask=None, attn_mask=None):
    """logits = (q.k + q.E[label] + b[label]) / sqrt(d_h), label = k + clip(i - j, -k, k)."""
    rel = m.relative_positions

    def logit(q, k, b, h, i, j):
        label = rel.radius + max(-rel.radius, min(rel.radius, q_pos[b][i] - k_pos[b][j]))
        s = q @ k
        if rel.embeddings is not None:
            s = s + q @ rel.embeddings[label]
        if rel.bias is not None:
            s = s + rel.bias[label, h if rel.bias.size(1) > 1 else 0]
        return s / math.sqrt(m.head_dim)

    return multihead_reference(m, query, key, logit, key_padding_mask, attn_mask)


def make(mode, cross=False, radius=3, per_head=False):
    m = SDPAMultiheadAttention(
        D,
        H,
        self_attention=not cross,
        encoder_decoder_attention=cross,
        relative_positions=build_relative_positions(mode, radius, D // H, H, per_head),
    )
    return randomize(m).eval()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("per_head", [False, True])
def test_self_attention_matches_reference(mode, per_head):
    torch.manual_seed(0)
    m = make(mode, per_head=per_head)
    x = torch.randn(9, 2, D)  # longer than the radius: labels clip
    kpm = padding_mask([9, 6], 9)
    pos = [list(range(9))] * 2
    out, _ = m(x, x, x, key_padding_mask=kpm, attn_mask=causal_mask(9), need_weights=False)
    ref = reference(m, x, x, pos, pos, key_padding_mask=kpm, attn_mask=causal_mask(9))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_rel2_cross_attention_matches_reference_counting_from_first_real_token(mode):
    torch.manual_seed(1)
    m = make(mode, cross=True)
    x = torch.randn(5, 2, D)
    enc = torch.randn(8, 2, D)
    kpm = padding_mask([8, 5], 8, left=True)  # fairseq pads sources on the left
    q_pos = [list(range(5))] * 2
    k_pos = [list(range(8)), [j - 3 for j in range(8)]]
    out, _ = m(x, enc, enc, key_padding_mask=kpm, static_kv=True, need_weights=False)
    ref = reference(m, x, enc, q_pos, k_pos, key_padding_mask=kpm)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_labels_clip_at_radius():
    rel = RelativePositionBias("eb", 2, 4, 1)
    labels = rel.labels(torch.arange(6), torch.arange(6))
    assert labels.min() == 0 and labels.max() == 4
    assert labels[5, 0] == 4 and labels[0, 5] == 0 and labels[3, 3] == 2 and labels[3, 2] == 3
    with pytest.raises(ValueError, match="--rel-pos-radius"):
        RelativePositionBias("e", 0, 4, 1)
    with pytest.raises(ValueError, match="--rel-pos"):
        RelativePositionBias("x", 2, 4, 1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("compositional", [False, True])
def test_incremental_decoding_equals_full_forward(mode, compositional):
    torch.manual_seed(2)
    if compositional:

        def build(cross):
            m = CompositionalAttention(
                D,
                4,
                2,
                8,
                self_attention=not cross,
                encoder_decoder_attention=cross,
                relative_positions=build_relative_positions(mode, 3, D // 4, 4),
            )
            return randomize(m).eval()
    else:

        def build(cross):
            return make(mode, cross=cross)

    m = build(False)
    x = torch.randn(8, 3, D)
    full, _ = m(x, x, x, attn_mask=causal_mask(8), need_weights=False)
    torch.testing.assert_close(decode_step_by_step(m, x), full, atol=1e-5, rtol=1e-5)
    order = torch.tensor([1, 1, 0])
    x2 = x.index_select(1, order)
    full2, _ = m(x2, x2, x2, attn_mask=causal_mask(8), need_weights=False)
    steps = decode_step_by_step(m, x, reorder=(4, order))
    torch.testing.assert_close(steps[4:], full2[4:], atol=1e-5, rtol=1e-5)

    c = build(True)  # rel2: the query's decoder step must advance with the cache
    enc = torch.randn(6, 3, D)
    kpm = padding_mask([6, 4, 2], 6, left=True)
    full, _ = c(x, enc, enc, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(decode_step_by_step(c, x, enc, kpm), full, atol=1e-5, rtol=1e-5)
    # Beam search reorders within the beams of one sentence, which share the encoder output.
    beam_enc = enc[:, :1].expand(6, 3, D)
    beam_kpm = kpm[1:2].expand(3, 6)
    steps = decode_step_by_step(c, x, beam_enc, beam_kpm, reorder=(4, order))
    full2, _ = c(x2, beam_enc, beam_enc, key_padding_mask=beam_kpm, need_weights=False)
    torch.testing.assert_close(steps[4:], full2[4:], atol=1e-5, rtol=1e-5)


def test_without_relative_positions_equals_fairseq_multihead_attention():
    torch.manual_seed(3)
    ours = randomize(SDPAMultiheadAttention(D, H, self_attention=True)).eval()
    stock = MultiheadAttention(D, H, self_attention=True).eval()
    stock.load_state_dict(ours.state_dict())
    x = torch.randn(6, 3, D)
    kpm = padding_mask([6, 3, 5], 6)
    a, _ = ours(x, x, x, key_padding_mask=kpm, attn_mask=causal_mask(6), need_weights=False)
    b, _ = stock(x, x, x, key_padding_mask=kpm, attn_mask=causal_mask(6), need_weights=False)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    a, wa = ours(x, x, x, key_padding_mask=kpm, need_weights=True)
    b, wb = stock(x, x, x, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(wa, wb, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_padding_invariance_left_and_right(mode):
    torch.manual_seed(4)
    assert_padding_invariant(make(mode), make(mode, cross=True), D)


@pytest.mark.parametrize("mode", ["none", "eb"])
def test_weights_are_returned_only_when_asked(mode):
    """fairseq (e.g. eval-lm's scorer) indexes whatever weights come back: like its own
    MultiheadAttention, return none unless need_weights, whichever internal path ran."""
    rel = build_relative_positions(mode, 16, D // H, H)
    m = SDPAMultiheadAttention(D, H, self_attention=True, relative_positions=rel).train()
    c = CompositionalAttention(D, 4, 4, 8, self_attention=True).train()
    for module in (m, c):
        for length in (3, 300):  # small and large problems take different paths
            x = torch.randn(length, 2, D)
            assert module(x, x, x, attn_mask=causal_mask(length), need_weights=False)[1] is None
            assert module(x, x, x, need_weights=True)[1].shape == (2, length, length)


@pytest.mark.parametrize("offset", [0, 2])
@pytest.mark.parametrize("future_masked", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 7, 7), (1, 1, 1, 7)])  # (B, H, Tq or 1, 2k+1)
def test_shifted_band_bias_gradcheck_and_equals_gathered_bias_under_softmax(
    offset, future_masked, shape
):
    """The diagonal in-place bias (training path of self-attention): float64 gradcheck of its
    hand-written backward, and softmax(logits + bias) and its gradients equal to those of the
    gathered bias (label k + clip(i + offset - j, -k, k), radius k = 3; the function takes the
    per-label scores in reverse label order)."""
    from fairseq_plugins.modules.band_kernels import ShiftedBandBias

    torch.manual_seed(0)
    radius, tgt_len = 3, 7
    src_len = tgt_len + offset
    rel = RelativePositionBias("b", radius, 4, 1)
    keys = torch.arange(src_len)
    labels = rel.labels(keys[offset:], keys)  # (Tq, Tk)
    logits = torch.randn(2, 3, tgt_len, src_len, dtype=torch.float64, requires_grad=True)
    scores = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    if future_masked:  # as the explicit path sees it: masked logits before the bias
        future = torch.ones(tgt_len, src_len, dtype=torch.bool).triu(offset + radius)
        base = logits.masked_fill(future, torch.finfo(torch.float64).min / 4)
    else:
        base = logits

    def shifted(x, s):
        return ShiftedBandBias.apply(x.clone(), s, offset, radius, future_masked)

    assert torch.autograd.gradcheck(shifted, (logits, scores))
    full = scores.flip(-1).expand(2, 3, tgt_len, 2 * radius + 1)  # takes reversed labels
    gathered = base + torch.gather(full, -1, labels.expand(2, 3, tgt_len, src_len))
    probs_new, probs_ref = torch.softmax(shifted(base, scores), -1), torch.softmax(gathered, -1)
    torch.testing.assert_close(probs_new, probs_ref)
    grad = torch.randn_like(probs_ref)
    new = torch.autograd.grad(probs_new, (logits, scores), grad, retain_graph=True)
    ref = torch.autograd.grad(probs_ref, (logits, scores), grad)
    for a, b in zip(new, ref):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("mode", MODES)
def test_training_path_gradients_equal_gathered_bias(mode, monkeypatch):
    """Self-attention in training (diagonal bias) against the same module with the gathered
    bias, causal and padded: outputs and every parameter gradient."""
    torch.manual_seed(3)
    m = make(mode, radius=2).train().double()
    x = torch.randn(9, 2, D, dtype=torch.float64)
    masks = (
        dict(attn_mask=causal_mask(9).double()),
        dict(key_padding_mask=padding_mask([9, 6], 9)),
    )
    for kwargs in masks:
        out = m(x, x, x, need_weights=False, **kwargs)[0]
        grads = torch.autograd.grad(out.square().sum(), list(m.parameters()))
        with monkeypatch.context() as patch:  # the gathered bias instead of the diagonal one
            patch.setattr(
                attend,
                "add_relative_bias",
                lambda logits, q, rel, labels, *_: logits.add_(rel(q, labels, m.scaling)),
            )
            ref = m(x, x, x, need_weights=False, **kwargs)[0]
        ref_grads = torch.autograd.grad(ref.square().sum(), list(m.parameters()))
        torch.testing.assert_close(out, ref)
        for a, b in zip(grads, ref_grads):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("length,radius", [(11, 2), (40, 3), (7, 3), (3, 3)])
@pytest.mark.parametrize("score_shape", ["eb", "b"])
def test_band_split_attention_gradcheck_and_equals_softmax_reference(length, radius, score_shape):
    """The long-causal-row path (band explicitly, far past through the flash kernel, merged by
    log-sum-exp): float64 gradcheck of its hand-written backward against the plain statement
    softmax(q k^T s + gathered bias + causal mask) v, for q/k/v and the per-label scores."""
    from fairseq_plugins.modules.band_kernels import BandSplitAttention, causal_band_mask

    torch.manual_seed(4)
    B_, H_, dh, s = 2, 3, 4, 0.4
    q, k, v = (torch.randn(B_, H_, length, dh, dtype=torch.float64) for _ in range(3))
    shape = (B_, H_, length, 2 * radius + 1) if score_shape == "eb" else (1, H_, 1, 2 * radius + 1)
    scores = torch.randn(*shape, dtype=torch.float64)
    for t in (q, k, v, scores):
        t.requires_grad_(True)
    causal = torch.zeros(1, 1, length, length, dtype=torch.float64)
    causal.masked_fill_(torch.ones(length, length, dtype=torch.bool).triu(1), -1e300)
    band_mask = causal_band_mask(causal, radius)
    labels = RelativePositionBias("b", radius, dh, 1).labels(
        torch.arange(length), torch.arange(length)
    )

    def split(q, k, v, scores):
        return BandSplitAttention.apply(q, k, v, scores, band_mask, radius, s)

    def plain(q, k, v, scores):  # scores hold the labels in reverse order (as label_scores)
        full = scores.flip(-1).expand(B_, H_, length, 2 * radius + 1)
        bias = torch.gather(full, -1, labels.expand(B_, H_, length, length))
        return torch.softmax(q @ k.transpose(-1, -2) * s + bias + causal, -1) @ v

    inputs = (q, k, v, scores)
    torch.testing.assert_close(split(*inputs), plain(*inputs))
    grad = torch.randn(B_, H_, length, dh, dtype=torch.float64)
    new = torch.autograd.grad(split(*inputs), inputs, grad)
    ref = torch.autograd.grad(plain(*inputs), inputs, grad)
    for a, b in zip(new, ref):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(split, inputs)


@pytest.mark.parametrize("mode", MODES)
def test_long_causal_training_takes_the_band_split_path_and_equals_the_explicit_path(
    mode, monkeypatch
):
    """A causal self-attention in training with rows >= 4 radii runs attend_band_split; its
    outputs and every parameter gradient equal the explicit path's (float64). Padding, attention
    dropout and need_weights keep the explicit path."""
    calls = []
    split = attend.attend_band_split
    monkeypatch.setattr(attend, "attend_band_split", lambda *a: calls.append(1) or split(*a))
    torch.manual_seed(5)
    m = make(mode, radius=3).train().double()
    length = 20
    x = torch.randn(length, 2, D, dtype=torch.float64)
    mask = causal_mask(length).double()

    def run():
        out = m(x, x, x, attn_mask=mask, need_weights=False)[0]
        return out, torch.autograd.grad(out.square().sum(), list(m.parameters()))

    out, grads = run()
    assert calls == [1]
    with monkeypatch.context() as patch:  # the explicit path
        patch.setattr(attend, "band_split_mask", lambda *_: None)
        ref, ref_grads = run()
    torch.testing.assert_close(out, ref)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b)
    m(x, x, x, attn_mask=mask, key_padding_mask=padding_mask([20, 15], 20), need_weights=False)
    m(x, x, x, attn_mask=mask, need_weights=True)
    m.dropout_module.p = 0.1
    m(x, x, x, attn_mask=mask, need_weights=False)
    assert calls == [1]
