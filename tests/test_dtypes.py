"""Every custom attention path, autograd function and fused mix in float16 and bfloat16, against
float32, on CPU: the module's weights and inputs converted to the dtype (what fairseq's --fp16 /
--bf16 do to a model), forward and backward.

Tolerance: 8 machine epsilons of the dtype (fp16: 7.8e-3, bf16: 6.25e-2), elementwise on
``atol + rtol * |reference|`` for outputs, relative to the largest gradient for gradients (some
gradients are zero in exact arithmetic, e.g. a key bias under softmax, and only rounding noise in
any dtype). Measured here: outputs within 1.5e-3 (fp16) and 1e-2 (bf16) of their scale, and a
dtype bug (a mask or table left in float32, a NaN from a non-finite mask) is orders larger. Each
test also checks that the custom path it names actually ran (a spy on the autograd function).
"""

import pytest
import torch
from attention_testing import (
    FUSIONS,
    KDIM,
    KINDS,
    D,
    assert_close_to_float32,
    assert_grads_close,
    attention_matches_float32,
    causal_mask,
    copy_case,
    graph_forward_backward,
    graph_layer,
    in_dtype,
    inputs,
    make_attention,
    padding_mask,
    randomize,
)
from model_testing import MODELS, TINY, batch, build

from fairseq_plugins.modules import band_kernels, compositional_attention
from fairseq_plugins.modules.copy_generator import COPY_PROJECTIONS, CopyGenerator
from fairseq_plugins.modules.parent_heads import AttentionParentHead

HALF = [torch.float16, torch.bfloat16]
HALF_IDS = ["fp16", "bf16"]


def spy(monkeypatch, function):
    """Count the calls of the autograd Function ``function`` (its ``apply``)."""
    calls = []
    original = function.apply

    def counting(*args):
        calls.append(args[0].dtype)
        return original(*args)

    monkeypatch.setattr(function, "apply", counting)
    return calls


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "explicit"])
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("kind", KINDS)
def test_attention_in_half_matches_float32(kind, cross, need_weights, dtype):
    """Every attention kind, fused SDPA path and explicit path (weights asked for), padded."""
    m = make_attention(kind, cross, radius=2)
    x, kv = inputs(6, 5 if cross else 6, 3, cross)
    tk = kv.size(0)
    kpm = padding_mask([tk, tk - 2, tk - 1], tk, left=True)
    attention_matches_float32(m, dtype, x, kv if cross else None, kpm, None, need_weights)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("kind", ["rel-e", "rel-b", "rel-eb", "comp-rel-eb"])
def test_long_causal_relative_attention_in_half_matches_float32(kind, dtype, monkeypatch):
    """Training a causal self-attention over rows >= 4 radii: float32 takes the band-split path
    (BandSplitAttention, multi-head) or the in-place band bias (ShiftedBandBias); the half
    dtypes, which the CPU flash kernel split does not take, the in-place band bias. Both agree."""
    band_split = spy(monkeypatch, band_kernels.BandSplitAttention)
    band_bias = spy(monkeypatch, band_kernels.ShiftedBandBias)
    m = make_attention(kind, False, radius=2).train()
    x, _ = inputs(16, 16, 2, False)
    attention_matches_float32(m, dtype, x, None, None, causal_mask(16))
    if kind.startswith("rel-"):
        assert band_split == [torch.float32]
    assert dtype in band_bias


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize(
    "function, need_weights",
    [("_DotRetrievalMix", False), ("_WeightedRetrievalMix", True)],
)
def test_retrieval_mixes_in_half_match_float32(function, need_weights, dtype, monkeypatch):
    """Both fused dot-product retrieval mixes: _DotRetrievalMix (fused attention, then the
    pairs) and _WeightedRetrievalMix (explicit path, short keys: 2 Tk <= d_v, one retrieval)."""
    calls = spy(monkeypatch, getattr(compositional_attention, function))
    m = make_attention("comp-dot", True, retrievals=1)
    x, kv = inputs(6, 5, 3, True)
    kpm = padding_mask([5, 3, 4], 5, left=True)
    attention_matches_float32(m, dtype, x, kv, kpm, None, need_weights)
    assert dtype in calls


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("attention_type", ["multihead", "compositional"])
@pytest.mark.parametrize("fusion", FUSIONS)
def test_graph_layer_in_half_matches_float32(fusion, attention_type, dtype):
    for half_dim, shared, pre_norm in [(False, False, False), (True, True, True)]:
        layer = graph_layer(fusion, half_dim, shared, pre_norm, attention_type)
        gen = torch.Generator().manual_seed(0)
        prev, incr = torch.randn(5, 3, D, generator=gen), torch.randn(5, 3, D, generator=gen)
        kpm = padding_mask([5, 3, 4], 5, left=True)
        ref, ref_grads = graph_forward_backward(layer, prev, incr, kpm)
        out, grads = graph_forward_backward(
            in_dtype(layer, dtype), prev.to(dtype), incr.to(dtype), kpm
        )
        assert_close_to_float32(out, ref, dtype, "graph layer")
        assert_grads_close(grads, ref_grads, dtype)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("projection", COPY_PROJECTIONS)
def test_copy_decoder_in_half_matches_float32(projection, dtype):
    """The mixture comes out in float32 (a distribution) whatever the weights' dtype; with the
    second copy decoder the V -> V projection runs in the weights' dtype."""
    gen = randomize(CopyGenerator(D, KDIM, projection, 11, 4), std=0.3)
    src = torch.tensor([[1, 1, 3, 2], [1, 4, 5, 2], [7, 8, 9, 2]])
    pad = src.eq(1)
    case = copy_case(src)
    leaves = [t.clone().requires_grad_(True) for t in case]
    ref = gen(*leaves, pad, src)
    ref.exp().mul(torch.arange(11)).sum().backward()
    half_leaves = [t.to(dtype).requires_grad_(True) for t in case]
    log_p = in_dtype(gen, dtype)(*half_leaves, pad, src)
    assert log_p.dtype == torch.float32
    log_p.exp().mul(torch.arange(11)).sum().backward()
    assert_close_to_float32(log_p.exp(), ref.exp(), dtype, "copy mixture")
    assert_grads_close([t.grad for t in half_leaves], [t.grad for t in leaves], dtype)


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("rel_pos", ["none", "eb"])
def test_attention_parent_head_in_half_matches_float32(rel_pos, dtype):
    head = randomize(AttentionParentHead(D, rel_pos, 2), std=0.3)
    features = torch.randn(2, 6, D, generator=torch.Generator().manual_seed(0))
    pad = padding_mask([6, 4], 6)
    ref = torch.log_softmax(head(features, pad), -1)
    logits = in_dtype(head, dtype)(features.to(dtype), pad)
    assert logits.dtype == torch.float32  # parent logits in at least float32
    assert_close_to_float32(torch.log_softmax(logits, -1)[~pad], ref[~pad], dtype, "parents")


@pytest.mark.parametrize("dtype", HALF, ids=HALF_IDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_model_in_half_matches_float32_and_decodes_incrementally(name, dtype):
    """Whole tiny models converted to the dtype: probabilities as in float32, and incremental
    decoding in the dtype equal to its own full pass."""
    torch.manual_seed(0)
    model, _ = build(MODELS[name] + TINY)
    model = randomize(model, std=0.2).eval()
    src, lengths, tgt = batch()
    with torch.no_grad():
        ref = model.get_normalized_probs(model(src, lengths, tgt), log_probs=False)
        half = in_dtype(model, dtype)
        full = half.get_normalized_probs(half(src, lengths, tgt), log_probs=False)
        assert_close_to_float32(full, ref, dtype, "probabilities")
        enc = half.encoder(src, lengths)
        state, steps = {}, []
        for t in range(tgt.size(1)):
            out = half.decoder(tgt[:, : t + 1], enc, incremental_state=state)
            steps.append(half.get_normalized_probs(out, log_probs=False)[:, -1:])
    assert_close_to_float32(torch.cat(steps, 1), full.float(), dtype, "incremental")
