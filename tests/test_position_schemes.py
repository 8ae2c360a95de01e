"""ALiBi, T5 bias and RoPE (modules/position_schemes.py) against plain re-statements of the papers'
equations and, where installed (requirements-test.txt), against the established implementations
(x-transformers, rotary-embedding-torch) in float64 on the same weights."""

import math

import pytest
import torch
from attention_testing import multihead_reference

from fairseq_plugins.modules.position_schemes import (
    AlibiBias,
    RotaryPositions,
    T5RelativeBias,
    alibi_slopes,
    build_position_scheme,
    t5_bucket,
)
from fairseq_plugins.variant_config import PositionPlan


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
        build_position_scheme(PositionPlan("sinusoid"), 8, 4)
    assert build_position_scheme(PositionPlan("nope", causal=True), 8, 4) is None
    assert build_position_scheme(PositionPlan("t5", causal=True), 8, 4).bidirectional is False


# -- the schemes inside our attentions ------------------------------------------------------------
D, H = 32, 4
ATTENTION_SCHEMES = ["alibi", "t5", "rope"]
T5_SMALL = dict(t5_num_buckets=8, t5_max_distance=12)  # small: the log buckets show at T ~ 10


def scheme(mode, causal):
    return build_position_scheme(PositionPlan(mode, causal, **T5_SMALL), D // H, H)


def make_attention(mode, cross=False, causal=False, compositional=False, seed=0):
    from attention_testing import randomize

    from fairseq_plugins.modules.compositional_attention import CompositionalAttention
    from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention

    roles = dict(self_attention=not cross, encoder_decoder_attention=cross)
    rel = scheme(mode, causal)
    if compositional:
        m = CompositionalAttention(D, H, 2, 8, relative_positions=rel, **roles)
    else:
        m = SDPAMultiheadAttention(D, H, relative_positions=rel, **roles)
    randomize(m, seed=seed)
    if mode == "t5":  # a table that matters
        with torch.no_grad():
            m.relative_positions.bias.normal_(generator=torch.Generator().manual_seed(seed))
    return m.eval()


def scheme_bias_reference(mode, rel, head, i, j):
    """The additive logit of query position i and key position j, from the papers' equations."""
    if mode == "alibi":
        return -alibi_slopes(rel.slopes.numel())[head] * abs(i - j)
    bucket = t5_bucket_reference(j - i, rel.bidirectional, rel.num_buckets, rel.max_distance)
    return float(rel.bias[bucket, head])


def attention_reference(m, mode, query, key, q_pos, k_pos, key_padding_mask=None, attn_mask=None):
    """softmax((R(i) q_i . R(j) k_j) / sqrt(d_h) + bias(i, j) + masks) v per head, plain loops."""
    rel = m.relative_positions

    def rotated(qb, kb, b):
        qb = rope_reference(qb.transpose(0, 1), q_pos[b], rel.base).transpose(0, 1)
        kb = rope_reference(kb.transpose(0, 1), k_pos[b], rel.base).transpose(0, 1)
        return qb, kb

    def logit(q, k, b, h, i, j):
        s = q @ k / math.sqrt(m.head_dim)
        if mode != "rope":
            s = s + scheme_bias_reference(mode, rel, h, q_pos[b][i], k_pos[b][j])
        return s

    rotate = rotated if mode == "rope" else None
    return multihead_reference(m, query, key, logit, key_padding_mask, attn_mask, rotate)


@pytest.mark.parametrize("mode", ATTENTION_SCHEMES)
@pytest.mark.parametrize("need_weights", [False, True])  # the fused call and the explicit path
def test_attention_with_scheme_matches_reference(mode, need_weights):
    from attention_testing import causal_mask, padding_mask

    torch.manual_seed(0)
    # decoder self-attention: causal, T longer than the T5 exact buckets
    m = make_attention(mode, causal=True).double()
    x = torch.randn(11, 2, D, dtype=torch.float64)
    kpm = padding_mask([11, 7], 11)
    mask = causal_mask(11).double()
    out, _ = m(x, x, x, key_padding_mask=kpm, attn_mask=mask, need_weights=need_weights)
    pos = [list(range(11))] * 2
    ref = attention_reference(m, mode, x, x, pos, pos, key_padding_mask=kpm, attn_mask=mask)
    torch.testing.assert_close(out, ref)
    # rel2 cross-attention: encoder positions counted from the first real (left-padded) token
    c = make_attention(mode, cross=True, seed=1).double()
    y = torch.randn(5, 2, D, dtype=torch.float64)
    enc = torch.randn(9, 2, D, dtype=torch.float64)
    kpm = padding_mask([9, 6], 9, left=True)
    out, _ = c(y, enc, enc, key_padding_mask=kpm, static_kv=True, need_weights=need_weights)
    k_pos = [list(range(9)), [j - 3 for j in range(9)]]
    ref = attention_reference(c, mode, y, enc, [list(range(5))] * 2, k_pos, key_padding_mask=kpm)
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("mode", ATTENTION_SCHEMES)
@pytest.mark.parametrize("compositional", [False, True])
def test_scheme_incremental_decoding_equals_full_forward(mode, compositional):
    from attention_testing import causal_mask, decode_step_by_step, padding_mask

    torch.manual_seed(2)
    m = make_attention(mode, causal=True, compositional=compositional)
    x = torch.randn(12, 3, D)
    full, _ = m(x, x, x, attn_mask=causal_mask(12), need_weights=False)
    torch.testing.assert_close(decode_step_by_step(m, x), full, atol=1e-5, rtol=1e-5)
    order = torch.tensor([1, 1, 0])  # beam search reorders the cache mid-way
    x2 = x.index_select(1, order)
    full2, _ = m(x2, x2, x2, attn_mask=causal_mask(12), need_weights=False)
    steps = decode_step_by_step(m, x, reorder=(5, order))
    torch.testing.assert_close(steps[5:], full2[5:], atol=1e-5, rtol=1e-5)

    c = make_attention(mode, cross=True, compositional=compositional, seed=1)
    enc = torch.randn(7, 3, D)
    kpm = padding_mask([7, 5, 2], 7, left=True)
    full, _ = c(x, enc, enc, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(decode_step_by_step(c, x, enc, kpm), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ATTENTION_SCHEMES)
@pytest.mark.parametrize("compositional", [False, True])
def test_scheme_padding_invariance(mode, compositional):
    from attention_testing import assert_padding_invariant

    torch.manual_seed(4)
    m = make_attention(mode, compositional=compositional)  # encoder self-attention
    c = make_attention(mode, cross=True, compositional=compositional, seed=1)
    assert_padding_invariant(m, c, D, short=5, long=8)


@pytest.mark.parametrize("mode", ATTENTION_SCHEMES)
def test_scheme_training_gradients_gradcheck(mode):
    """Training (the T5 table needs a gradient: the explicit path on CPU): float64 gradcheck of
    the attention output in its input and, for T5, its table."""
    from attention_testing import causal_mask

    torch.manual_seed(5)
    m = make_attention(mode, causal=True).double().train()
    x = torch.randn(6, 1, D, dtype=torch.float64, requires_grad=True)
    mask = causal_mask(6).double()
    assert torch.autograd.gradcheck(lambda inp: m(inp, inp, inp, attn_mask=mask)[0], (x,))
    if mode == "t5":
        out = m(x, x, x, attn_mask=mask, need_weights=False)[0]
        (grad,) = torch.autograd.grad(out.square().sum(), [m.relative_positions.bias])
        assert grad.abs().sum() > 0


# -- the schemes in the models ---------------------------------------------------------------------
def test_nope_drops_absolute_positions_per_side_and_t5_tables_tie_under_sharing():
    from fairseq.modules import MultiheadAttention
    from model_testing import build

    lm, _ = build(["--arch", "variant_transformer_lm", "--rel-pos", "nope"], lm=True)
    assert lm.decoder.embed_positions is None  # Kazemnejad et al.: nothing at all
    assert all(type(layer.self_attn) is MultiheadAttention for layer in lm.decoder.layers)
    mixed, _ = build(["--arch", "compgen_small_2", "--decoder-rel-pos", "nope"])
    assert mixed.encoder.embed_positions is not None and mixed.decoder.embed_positions is None
    shared, _ = build(["--arch", "compgen_small_2s", "--rel-pos", "t5"])
    tables = [layer.self_attn.relative_positions.bias for layer in shared.decoder.layers]
    assert tables[0] is tables[1] and tables[0].shape == (32, 4)
    assert not shared.decoder.layers[0].self_attn.relative_positions.bidirectional
    assert shared.encoder.layers[0].self_attn.relative_positions.bidirectional
    assert shared.encoder.embed_positions is None and shared.decoder.embed_positions is None


@pytest.mark.parametrize(
    "arch,extra",
    [
        ("compgen_alibi_c", ["--rel-pos-cross"]),
        ("compgen_t5_c", ["--rel-pos-cross", "--t5-num-buckets", "8", "--t5-max-distance", "12"]),
        ("compgen_comp_rope_c", ["--rel-pos-cross"]),
        ("compgen_rel_eb_nope_c", []),
        ("compgen_ndr_c", []),
        ("compgen_fire2_c", []),  # FIRE in every attention (rel2 cross-attention too)
        ("compgen_rel_eb_cope_c", []),
    ],
)
def test_model_incremental_decoding_equals_full_forward(arch, extra):
    """The whole decoder (self, rel2 cross, copy decoder) step by step with fairseq's incremental
    state equals the teacher-forced forward, on a left-padded batch (float64)."""
    from attention_testing import randomize
    from model_testing import build

    model, _ = build(["--arch", arch, "--dropout", "0", *extra])
    model = randomize(model.double(), std=0.2).eval()
    generator = torch.Generator().manual_seed(3)
    src = torch.randint(4, 20, (2, 13), generator=generator)
    src[1, :4] = 1  # left padding
    src[:, -1] = 2
    prev = torch.randint(4, 20, (2, 14), generator=generator)
    prev[:, 0] = 2
    lengths = src.ne(1).sum(1)
    with torch.no_grad():
        encoder_out = model.encoder(src, lengths)
        full, _ = model.decoder(prev, encoder_out)
        state, steps = {}, []
        for t in range(prev.size(1)):
            step, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            steps.append(step)
    torch.testing.assert_close(torch.cat(steps, 1), full)


@pytest.mark.parametrize("mode,training", [("alibi", True), ("rope", True), ("t5", False)])
def test_schemes_run_inside_the_one_fused_call(mode, training, monkeypatch):
    """ALiBi (no parameters) and RoPE (rotated q, k) keep the single fused attention call in
    training too; the T5 bias does at inference, without gradients (in CPU training its table
    needs a gradient, which the fused kernel does not give: the explicit path, as rel-b)."""
    import torch.nn.functional as F
    from attention_testing import causal_mask

    import fairseq_plugins.modules.attend as attend

    calls = []
    fused = F.scaled_dot_product_attention
    monkeypatch.setattr(
        attend.F, "scaled_dot_product_attention", lambda *a, **k: calls.append(k) or fused(*a, **k)
    )
    m = make_attention(mode, causal=True).train(training)
    m.dropout_module.p = 0.0
    x = torch.randn(9, 2, D)
    with torch.set_grad_enabled(training):
        m(x, x, x, attn_mask=causal_mask(9), need_weights=False)
    assert len(calls) == 1
    bias = calls[0]["attn_mask"]
    assert bias is not None and bias.shape == (2, H, 9, 9)  # the mask, plus the scheme's bias


def test_position_presets_put_each_scheme_where_their_names_say():
    from model_testing import build

    def schemes(model):
        enc, dec = model.encoder.layers[0], model.decoder.layers[0]
        return (
            type(enc.self_attn.relative_positions).__name__,
            type(getattr(dec.self_attn, "relative_positions", None)).__name__,
            type(getattr(dec.self_attn, "contextual_positions", None)).__name__,
            type(getattr(dec.encoder_attn, "relative_positions", None)).__name__,
            model.encoder.embed_positions is None and model.decoder.embed_positions is None,
        )

    fire, _ = build(["--arch", "compgen_fire_c"])
    assert schemes(fire) == ("FireBias", "FireBias", "NoneType", "NoneType", True)
    fire2, _ = build(["--arch", "compgen_fire2_c"])
    assert schemes(fire2) == ("FireBias", "FireBias", "NoneType", "FireBias", True)
    alibi2, _ = build(["--arch", "compgen_alibi2_c"])
    assert schemes(alibi2) == ("AlibiBias", "AlibiBias", "NoneType", "AlibiBias", True)
    rand, args = build(["--arch", "compgen_fire_rand_c"])
    assert schemes(rand) == ("FireBias", "FireBias", "NoneType", "NoneType", True)
    assert args.random_positions_max_length == 256
    cope, _ = build(["--arch", "compgen_rel_eb_cope_c"])
    assert schemes(cope) == (
        "RelativePositionBias", "NoneType", "ContextualPositions", "NoneType", True
    )  # fmt: skip


@pytest.mark.parametrize("task", ["add", "addneg", "reverse", "dup"])
def test_digit_position_presets_are_rel2_eb_c_plus_one_factor(task):
    from fairseq.data import Dictionary
    from model_testing import build

    d = Dictionary()
    for symbol in [*"0123456789", "[SEP]", "#", "-"]:
        d.add_symbol(symbol)
    base, _ = build(["--arch", "compgen_rel2_eb_c"], dictionary=d)
    keys = set(base.state_dict())
    abacus, _ = build(["--arch", "compgen_rel2_eb_abacus_c"], dictionary=d)
    added = set(abacus.state_dict()) - keys
    assert added == {"encoder.abacus.table.weight", "decoder.abacus.table.weight"}
    assert set(abacus.state_dict()) >= keys
    coupled, args = build(["--arch", f"compgen_rel2_eb_coupled_{task}_c"], dictionary=d)
    assert args.position_coupling == task and args.rel_pos == "eb" and args.rel_pos_cross
    assert set(coupled.state_dict()) - keys == {
        "encoder.coupling.table.weight",
        "decoder.coupling.table.weight",
    }
