"""ALiBi, T5 bias and RoPE (modules/position_schemes.py) against plain re-statements of the papers'
equations and, where installed (requirements-test.txt), against the established implementations
(x-transformers, rotary-embedding-torch) in float64 on the same weights."""

import math

import pytest
import torch

from fairseq_plugins.modules.position_schemes import (
    AlibiBias,
    RotaryPositions,
    T5RelativeBias,
    alibi_slopes,
    build_position_scheme,
    t5_bucket,
)


# -- ALiBi ---------------------------------------------------------------------------------------
def test_alibi_slopes_are_the_papers_geometric_sequence():
    # Press et al. 2022, section 3: 8 heads -> 1/2^1 .. 1/2^8; 16 heads -> 1/2^0.5 .. 1/2^8
    assert alibi_slopes(8) == [2.0**-h for h in range(1, 9)]
    torch.testing.assert_close(
        torch.tensor(alibi_slopes(16)), torch.tensor([2.0 ** (-h / 2) for h in range(1, 17)])
    )
    # not a power of two: the 4-head slopes, then every other 8-head slope
    assert alibi_slopes(6) == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]


def alibi_reference(slopes, q_pos, k_pos):
    """bias[h][i][j] = -m_h * |i - j|, element by element."""
    return torch.tensor(
        [[[-m * abs(i - j) for j in k_pos] for i in q_pos] for m in slopes], dtype=torch.float64
    )


def test_alibi_bias_matches_reference_in_self_and_incremental_positions():
    heads = 6
    module = AlibiBias(heads)
    q = torch.zeros(1, heads, 3, 8, dtype=torch.float64)
    keys = torch.arange(7)
    bias = module(q, module.labels(keys[4:], keys))  # the last 3 of 7 positions: a decoding step
    assert bias.shape == (1, heads, 3, 7) and bias.dtype == torch.float64
    torch.testing.assert_close(bias[0], alibi_reference(alibi_slopes(heads), range(4, 7), range(7)))


def test_alibi_equals_x_transformers():
    xt = pytest.importorskip("x_transformers.x_transformers")
    for heads in (1, 3, 4, 6, 8, 12):
        theirs = xt.AlibiPositionalBias(heads=heads).double()
        assert alibi_slopes(heads) == pytest.approx(theirs.slopes.flatten().tolist(), rel=1e-6)
        # x-transformers keeps its slopes in float32: compare in float64 with its slopes
        module = AlibiBias(heads)
        module.slopes = theirs.slopes.flatten().double()
        keys = torch.arange(9)
        q = torch.zeros(1, heads, 4, 2, dtype=torch.float64)
        ours = module(q, module.labels(keys[5:], keys))[0]
        torch.testing.assert_close(ours, theirs(4, 9).double(), rtol=0, atol=0)


# -- T5 bias --------------------------------------------------------------------------------------
def t5_bucket_reference(relative, bidirectional, num_buckets, max_distance):
    """Raffel et al. 2020 (mesh TF's _relative_position_bucket), one Python int at a time.
    relative = key position - query position."""
    bucket, n = 0, -relative
    if bidirectional:
        num_buckets //= 2
        if n < 0:
            bucket += num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    exact = num_buckets // 2
    if n < exact:
        return bucket + n
    # float32 arithmetic, as every T5 implementation
    ratio = torch.tensor(n / exact, dtype=torch.float32).log() / math.log(max_distance / exact)
    large = exact + int((ratio * (num_buckets - exact)).item())
    return bucket + min(large, num_buckets - 1)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("buckets,max_distance", [(32, 128), (8, 20)])
def test_t5_buckets_match_reference_far_beyond_max_distance(bidirectional, buckets, max_distance):
    relative = torch.arange(-1000, 1001)
    ours = t5_bucket(relative, bidirectional, buckets, max_distance)
    expected = [
        t5_bucket_reference(r, bidirectional, buckets, max_distance) for r in range(-1000, 1001)
    ]
    assert ours.tolist() == expected
    assert ours.min() >= 0 and ours.max() == buckets - 1  # every distance has a bucket


def test_t5_paper_defaults_bucket_layout():
    # 32 buckets bidirectional: 16 per direction, distances 0..7 exact, then 8 log-spaced buckets
    # (distance 8 * 16^(m/8) starts bucket 8 + m), the last from 8 * 16^(7/8) = 90.5 on
    b = t5_bucket(torch.tensor([0, -1, -7, -8, -64, -90, -91, -5000, 1, 5000]), True, 32, 128)
    assert b.tolist() == [0, 1, 7, 8, 14, 14, 15, 15, 17, 31]


@pytest.mark.parametrize("causal", [False, True])
def test_t5_bias_equals_x_transformers(causal):
    xt = pytest.importorskip("x_transformers.x_transformers")
    heads = 4
    theirs = xt.RelativePositionBias(scale=1.0, causal=causal, heads=heads).double()
    with torch.no_grad():
        theirs.relative_attention_bias.weight.normal_()
    ours = T5RelativeBias(heads, bidirectional=not causal).double()
    with torch.no_grad():
        ours.bias.copy_(theirs.relative_attention_bias.weight)
    keys = torch.arange(300)  # beyond max_distance 128
    q = torch.zeros(1, heads, 5, 2, dtype=torch.float64)
    bias = ours(q, ours.labels(keys[-5:], keys))[0]
    torch.testing.assert_close(bias, theirs(5, 300), rtol=0, atol=0)


def test_t5_bias_gradient_reaches_the_table():
    ours = T5RelativeBias(2, num_buckets=8, max_distance=16).double()
    keys = torch.arange(6)
    labels = ours.labels(keys, keys)
    q = torch.zeros(1, 2, 6, 2, dtype=torch.float64)
    torch.autograd.gradcheck(
        lambda table: table[labels].permute(2, 0, 1), (ours.bias.detach().requires_grad_(),)
    )
    ours(q, labels).sum().backward()
    counts = torch.bincount(labels.flatten(), minlength=8).double()
    torch.testing.assert_close(ours.bias.grad, counts.unsqueeze(1).expand(8, 2))


# -- RoPE -----------------------------------------------------------------------------------------
def rope_reference(x, positions, base):
    """Su et al. 2021 eq. 34: each pair (x_2c, x_2c+1) times the 2x2 rotation by p * base^(-2c/d)."""
    out = torch.empty_like(x)
    d = x.size(-1)
    for t, p in enumerate(positions):
        for c in range(d // 2):
            angle = p * base ** (-2 * c / d)
            rot = torch.tensor(
                [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]],
                dtype=x.dtype,
            )
            out[..., t, 2 * c : 2 * c + 2] = x[..., t, 2 * c : 2 * c + 2] @ rot.t()
    return out


def test_rope_matches_reference_and_is_relative():
    torch.manual_seed(0)
    rope = RotaryPositions(8, base=100.0)
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    positions = torch.arange(10, 15)
    torch.testing.assert_close(
        rope.rotate(x, positions), rope_reference(x, positions.tolist(), 100.0)
    )
    # R(i) q . R(j) k depends on i - j only: shift every position by 1000
    q, k = (
        torch.randn(1, 1, 4, 8, dtype=torch.float64),
        torch.randn(1, 1, 6, 8, dtype=torch.float64),
    )
    qp, kp = torch.arange(2, 6), torch.arange(6)
    logits = rope.rotate(q, qp) @ rope.rotate(k, kp).transpose(-1, -2)
    shifted = rope.rotate(q, qp + 1000) @ rope.rotate(k, kp + 1000).transpose(-1, -2)
    torch.testing.assert_close(logits, shifted, rtol=1e-10, atol=1e-10)
    # per-sentence positions (rel2 keys): row b rotated by positions[b]
    per_sentence = torch.stack([positions, positions + 3])
    rotated = rope.rotate(x, per_sentence)
    torch.testing.assert_close(rotated[1], rope.rotate(x[1:], positions + 3)[0])


def test_rope_equals_rotary_embedding_torch():
    ret = pytest.importorskip("rotary_embedding_torch")
    d = 16
    torch.manual_seed(1)
    x = torch.randn(2, 4, 7, d, dtype=torch.float64)
    ours = RotaryPositions(d)
    # the same frequencies in float64 (their default computes them in float32)
    freqs = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    theirs = ret.RotaryEmbedding(d, custom_freqs=freqs).double()
    torch.testing.assert_close(
        ours.rotate(x, torch.arange(3, 10)),
        theirs.rotate_queries_or_keys(x, offset=3),
        rtol=1e-12,
        atol=1e-12,
    )
    theirs32 = ret.RotaryEmbedding(d)  # their defaults, float32
    torch.testing.assert_close(
        ours.rotate(x.float(), torch.arange(7)), theirs32.rotate_queries_or_keys(x.float())
    )


def test_bad_scheme_options_name_their_flag():
    with pytest.raises(ValueError, match="--rel-pos rope needs an even head width"):
        RotaryPositions(7)
    with pytest.raises(ValueError, match="--t5-num-buckets"):
        T5RelativeBias(4, num_buckets=2)
    with pytest.raises(ValueError, match="--t5-max-distance"):
        T5RelativeBias(4, num_buckets=32, max_distance=8)
    with pytest.raises(ValueError, match="--rel-pos: unknown value"):
        build_position_scheme("sinusoid", 8, 4, causal=False)
    assert build_position_scheme("nope", 8, 4, causal=True) is None
    assert build_position_scheme("t5", 8, 4, causal=True).bidirectional is False
