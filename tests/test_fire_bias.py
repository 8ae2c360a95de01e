"""FIRE (modules/fire_bias.py) against a plain re-statement of Li et al. (ICLR 2024), in float64.
No installable implementation was found (x-transformers 2.31.10 has none; PyPI lists no FIRE
package), so the paper's equations, written out element by element, are the reference."""

import math

import pytest
import torch

from fairseq_plugins.modules.fire_bias import DistinctPairs, FireBias

HEADS = 3


def fire(hidden=8, threshold=512.0, c=0.1, seed=0):
    """A FireBias in float64 with random MLP weights and the given c and L."""
    module = FireBias(HEADS, mlp_hidden=hidden, init_c=0.1, init_threshold=512.0).double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.mlp.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
        module.c.fill_(c)
        module.threshold_scale.fill_(threshold / 512.0)
    return module


def mlp_reference(weights, x):
    """f_theta(x): Linear(1, hidden), ReLU, Linear(hidden, heads), unit by unit."""
    w1, b1, w2, b2 = weights
    hidden = [max(0.0, w[0] * x + b) for w, b in zip(w1, b1)]
    return [b + sum(wu * hu for wu, hu in zip(w, hidden)) for w, b in zip(w2, b2)]


def fire_reference(module, query_positions, key_positions):
    """b_h(i, j) = f(psi(i - j) / psi(max(L, i))), psi(x) = log(c x + 1), for every i, j;
    j > i (our extension) with the sign of i - j."""
    c, L = float(module.c), abs(float(module.threshold_scale)) * 512.0
    psi = lambda x: math.log(c * x + 1)  # noqa: E731
    weights = [p.tolist() for p in (module.mlp[0].weight, module.mlp[0].bias)]
    weights += [p.tolist() for p in (module.mlp[2].weight, module.mlp[2].bias)]
    out = torch.empty(HEADS, len(query_positions), len(key_positions), dtype=torch.float64)
    for a, i in enumerate(query_positions):
        for b, j in enumerate(key_positions):
            x = math.copysign(psi(abs(i - j)), i - j) / (psi(max(L, i)) + module.eps)
            out[:, a, b] = torch.tensor(mlp_reference(weights, x), dtype=torch.float64)
    return out


@pytest.mark.parametrize("threshold", [512.0, 6.0])  # L above every position, and L < i
@pytest.mark.parametrize("c", [0.1, 2.5])
def test_fire_matches_the_papers_equations(threshold, c):
    module = fire(threshold=threshold, c=c)
    keys = torch.arange(14)
    q = torch.zeros(1, HEADS, 14, 4, dtype=torch.float64)
    bias = module(q, module.labels(keys, keys))
    assert bias.shape == (1, HEADS, 14, 14) and bias.dtype == torch.float64
    torch.testing.assert_close(bias[0], fire_reference(module, range(14), range(14)))


def test_fire_progressive_interpolation_depends_on_the_query_position_beyond_L():
    # L above every position: the bias depends on i - j only (as any relative bias) ...
    module = fire(threshold=512.0)
    bias = module(torch.zeros(1, HEADS, 1, 1), module.labels(torch.arange(30), torch.arange(30)))
    for d in range(5):
        diagonal = bias[0].diagonal(-d, dim1=-2, dim2=-1)
        torch.testing.assert_close(diagonal, diagonal[:, :1].expand_as(diagonal))
    # ... beyond L, the normaliser psi(i) shrinks the input for later queries
    module = fire(threshold=4.0)
    labels = module.labels(torch.arange(30), torch.arange(30))
    assert labels[10, 5] > labels[20, 15] > labels[29, 24] > 0
    # keys after the query (our extension): the same magnitude as before it, the other sign
    assert labels[9, 12] == -labels[9, 6] < 0 and labels.diagonal().abs().max() == 0


class LabelsThenBias(torch.nn.Module):
    """labels then bias in one forward, so that functional_call swaps c and L in both."""

    def __init__(self, module):
        super().__init__()
        self.fire = module

    def forward(self, q, query_positions, key_positions):
        return self.fire(q, self.fire.labels(query_positions, key_positions))


def test_fire_gradcheck_in_every_parameter():
    wrapper = LabelsThenBias(fire(hidden=4, threshold=5.0, c=0.7))
    names = [name for name, _ in wrapper.named_parameters()]
    assert {"fire.c", "fire.threshold_scale"} <= set(names)
    keys = torch.arange(6)
    q = torch.zeros(1, HEADS, 6, 2, dtype=torch.float64)

    def bias_of(*params):
        return torch.func.functional_call(wrapper, dict(zip(names, params)), (q, keys, keys))

    params = tuple(p.detach().clone().requires_grad_() for p in wrapper.parameters())
    assert torch.autograd.gradcheck(bias_of, params)


def test_fire_left_padding_changes_nothing_when_positions_start_at_the_first_real_token():
    """Encoder self-attention of a sentence of 6 tokens, alone and left-padded to 10: counted
    from the first real token, its bias is the same; counted from the first column, it is not
    (the normaliser psi(max(L, i)) sees the query's absolute position once i > L)."""
    module = fire(threshold=3.0, c=1.3)
    q = torch.zeros(1, HEADS, 1, 1, dtype=torch.float64)
    alone = module(q, module.labels(torch.arange(6), torch.arange(6)))[0]
    padding = torch.tensor([True] * 4 + [False] * 6)
    from_first_real = (~padding).long().cumsum(0) - 1  # -1 at the padding, 0 .. 5 after
    padded = module(q, module.labels(from_first_real, from_first_real))[0]
    torch.testing.assert_close(padded[:, 4:, 4:], alone, rtol=0, atol=0)
    by_column = module(q, module.labels(torch.arange(10), torch.arange(10)))[0]
    assert not torch.allclose(by_column[:, 4:, 4:], alone)
    # per-sentence positions (B, T): row b of the bias uses sentence b's positions
    batch = torch.stack([torch.arange(10), from_first_real])
    per_sentence = module(q, module.labels(batch, batch))
    assert per_sentence.shape == (2, HEADS, 10, 10)
    torch.testing.assert_close(per_sentence[1], padded, rtol=0, atol=0)


def per_entry_bias(module, query_positions, key_positions):
    """The MLP on every (b, i, j) of a (B, Tq, Tk) table of normalised distances: the path
    ``DistinctPairs`` replaces."""
    queries, keys = torch.broadcast_tensors(
        query_positions.unsqueeze(-1), key_positions.unsqueeze(-2)
    )
    labels = module.normalised_distance(queries, keys)
    labels = labels if labels.dim() == 3 else labels.unsqueeze(0)  # (Tq,) and (Tk,): one table
    return module.mlp(labels.unsqueeze(-1)).permute(0, 3, 1, 2)


def assert_bias_and_gradients_equal(module, labels, expected):
    q = torch.zeros(1, HEADS, 1, 1, dtype=torch.float64)
    bias = module(q, labels)
    assert bias.shape == expected.shape
    torch.testing.assert_close(bias, expected, rtol=1e-12, atol=1e-12)
    upstream = torch.randn(bias.shape, dtype=torch.float64)
    grads = torch.autograd.grad((bias * upstream).sum(), list(module.parameters()))
    expected_grads = torch.autograd.grad((expected * upstream).sum(), list(module.parameters()))
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", ["left-padded", "rel2-cross", "randomized-float"])
def test_fire_per_sentence_positions_run_the_mlp_once_per_distinct_pair(layout):
    """Per-sentence positions: the bias and every gradient equal the MLP applied to each entry
    of the (B, Tq, Tk) table, and sentences with the same padding share their pairs."""
    module = fire(hidden=5, threshold=4.0, c=0.8)
    padding = torch.tensor([0, 0, 3, 3, 3, 1])  # leading padding of six sentences of length 9
    if layout == "left-padded":
        queries = keys = torch.arange(9) - padding.unsqueeze(1)  # (6, 9), -3 .. 8
    elif layout == "rel2-cross":
        queries, keys = torch.arange(2, 5).unsqueeze(0), torch.arange(9) - padding.unsqueeze(1)
    else:
        queries = keys = torch.rand(6, 9, dtype=torch.float64).mul(50).sort(dim=1).values
    labels = module.labels(queries, keys)
    pairs = torch.stack(torch.broadcast_tensors(queries.unsqueeze(-1), keys.unsqueeze(-2)), -1)
    distinct = {tuple(pair) for pair in pairs.reshape(-1, 2).tolist()}
    assert len(distinct) < 6 * 9 * 9 or layout == "randomized-float"
    assert labels.values.shape == (len(distinct),)
    assert_bias_and_gradients_equal(module, labels, per_entry_bias(module, queries, keys))


@pytest.mark.parametrize("layout", ["one-table", "left-padded", "rel2-cross", "decoder-step"])
def test_fire_below_L_runs_the_mlp_once_per_distance(layout):
    """Every query below L: psi(max(L, i)) = psi(L), so the MLP runs once per distance i - j,
    and the bias and every gradient (c and L included) equal the MLP on each entry; a query at
    L or beyond brings the per-pair path back."""
    module = fire(hidden=5, threshold=20.0, c=0.8)
    padding = torch.tensor([0, 0, 3, 3, 3, 1])
    sentences = torch.arange(9) - padding.unsqueeze(1)  # (6, 9), -3 .. 8
    queries, keys = {
        "one-table": (torch.arange(9), torch.arange(9)),
        "left-padded": (sentences, sentences),
        "rel2-cross": (torch.arange(2, 5).unsqueeze(0), sentences),
        "decoder-step": (torch.tensor([8]), torch.arange(9)),
    }[layout]
    labels = module.labels(queries, keys)
    distance = queries.unsqueeze(-1) - keys.unsqueeze(-2)
    assert labels.values.shape == (int(distance.max() - distance.min()) + 1,)
    assert_bias_and_gradients_equal(module, labels, per_entry_bias(module, queries, keys))
    with torch.no_grad():
        module.threshold_scale.fill_(int(queries.max()) / 512.0)  # L = the last query position
    labels = module.labels(queries, keys)  # the per-pair paths: a table, or one row per pair
    pairs = torch.stack(torch.broadcast_tensors(queries.unsqueeze(-1), keys.unsqueeze(-2)), -1)
    if queries.dim() == 1:
        assert not isinstance(labels, DistinctPairs) and labels.shape == distance.shape
    else:
        assert labels.values.numel() == len({tuple(p) for p in pairs.reshape(-1, 2).tolist()})
    assert_bias_and_gradients_equal(module, labels, per_entry_bias(module, queries, keys))


def test_fire_incremental_step_equals_the_last_row_of_the_full_pass():
    module = fire(threshold=4.0, c=0.9)
    q = torch.zeros(1, HEADS, 1, 1, dtype=torch.float64)
    keys = torch.arange(9)
    full = module(q, module.labels(keys, keys))
    step = module(q, module.labels(keys[-1:], keys))  # one query, the cached keys
    assert step.shape == (1, HEADS, 1, 9)
    torch.testing.assert_close(step, full[:, :, -1:], rtol=0, atol=0)
    # rel2 cross-attention positions: decoder steps (1, Tq) against encoder tokens (B, Tk)
    cross = module(q, module.labels(torch.arange(3, 5).unsqueeze(0), torch.stack([keys, keys - 2])))
    assert cross.shape == (2, HEADS, 2, 9)
    torch.testing.assert_close(cross[1, :, :, 2:], fire_reference(module, [3, 4], range(7)))


def test_fire_defaults_are_the_papers_and_bad_sizes_name_their_flag():
    module = FireBias(8)
    assert module.mlp[0].out_features == 32 and module.mlp[2].out_features == 8
    assert float(module.c) == pytest.approx(0.1) and float(module.threshold()) == 512.0
    assert sorted(name for name, _ in module.named_parameters()) == [
        "c",
        "mlp.0.bias",
        "mlp.0.weight",
        "mlp.2.bias",
        "mlp.2.weight",
        "threshold_scale",
    ]
    with pytest.raises(ValueError, match="--fire-mlp-hidden must be >= 1 \\(got 0\\)"):
        FireBias(4, mlp_hidden=0)
    with pytest.raises(ValueError, match="--encoder/decoder-attention-heads must be >= 1"):
        FireBias(0)
    with pytest.raises(ValueError, match="c > 0"):
        FireBias(4, init_c=0.0)


def test_fire_in_bfloat16_keeps_its_distances_in_float32():
    module = fire(threshold=40.0, c=0.5)
    keys = torch.arange(900, 1000)  # late positions: bfloat16 cannot tell 999 from 998
    expected = module(torch.zeros(1, 1, 1, 1, dtype=torch.float64), module.labels(keys, keys))
    half = module.to(torch.bfloat16)
    labels = half.labels(keys, keys)
    assert labels.dtype == torch.float32 and labels[99, 98] > 0
    bias = half(torch.zeros(1, 1, 1, 1, dtype=torch.bfloat16), labels)
    assert bias.dtype == torch.bfloat16
    torch.testing.assert_close(bias.double(), expected, rtol=0.05, atol=0.05)


def test_fire_duck_types_the_scheme_interface_of_our_attention():
    """Passed as an attention's position module (the hook of ALiBi and T5): the fused call and
    the explicit path agree, decoding step by step equals the full pass, and CPU training
    reaches every FIRE parameter. (In self-attention the attention counts positions from the
    first column: left padding needs the per-sentence positions of the padding test above.)"""
    from attention_testing import causal_mask, decode_step_by_step, randomize

    from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention

    module = FireBias(4, mlp_hidden=8, init_threshold=3.0)
    attention = randomize(
        SDPAMultiheadAttention(16, 4, self_attention=True, relative_positions=module)
    )
    with torch.no_grad():  # L = 3 and c = 0.5: positions 0 .. 9 on both sides of L
        module.threshold_scale.fill_(1.0)
        module.c.fill_(0.5)
    attention = attention.double().eval()
    x = torch.randn(10, 2, 16, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    mask = causal_mask(10).double()
    fused, _ = attention(x, x, x, attn_mask=mask, need_weights=False)
    explicit, _ = attention(x, x, x, attn_mask=mask, need_weights=True)
    torch.testing.assert_close(fused, explicit)
    torch.testing.assert_close(decode_step_by_step(attention, x), fused)
    attention.train()
    attention.dropout_module.p = 0.0
    out, _ = attention(x, x, x, attn_mask=mask, need_weights=False)
    grads = torch.autograd.grad(out.square().sum(), list(module.parameters()))
    assert all(g.abs().sum() > 0 for g in grads)
