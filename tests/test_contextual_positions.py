"""CoPE (modules/contextual_positions.py) against a plain re-statement of Golovneva et al. (2024)
and against x-transformers' ``CoPE`` (requirements-test.txt) on the same weights, in float64."""

import math

import pytest
import torch

from fairseq_plugins.modules.contextual_positions import ContextualPositions
from fairseq_plugins.modules.numerics import mask_value

B, H, D = 2, 3, 4


def inputs(tq, tk, seed=0, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, tq, D, generator=gen, dtype=torch.float64) * scale
    k = torch.randn(B, H, tk, D, generator=gen, dtype=torch.float64) * scale
    return q, k


def cope(max_pos, seed=1):
    module = ContextualPositions(D, max_pos).double()
    with torch.no_grad():  # the paper starts at zero: random, so that the term matters
        module.embeddings.normal_(generator=torch.Generator().manual_seed(seed))
    return module


def causal(tq, tk):
    """Additive causal mask (Tq, Tk): the queries are the last Tq of the Tk positions."""
    future = torch.ones(tq, tk, dtype=torch.bool).triu(tk - tq + 1)
    return torch.zeros(tq, tk, dtype=torch.float64).masked_fill(future, mask_value(torch.float64))


def cope_reference(module, q, k, scaling):
    """For every sentence, head, query i and key j <= i: g_it = sigmoid(q_i . k_t * scaling),
    p_ij = min(sum_{t=j}^{i} g_it, max_pos - 1), e(p) interpolated between floor and ceil,
    term q_i . e(p). Queries are the last Tq of the Tk positions; keys j > i get nan."""
    tq, tk = q.size(2), k.size(2)
    out = torch.full((q.size(0), q.size(1), tq, tk), math.nan, dtype=torch.float64)
    e, qs, ks = module.embeddings.tolist(), q.tolist(), k.tolist()
    dot = lambda x, y: sum(u * v for u, v in zip(x, y))  # noqa: E731
    for b in range(q.size(0)):
        for h in range(q.size(1)):
            for a in range(tq):
                i, query = tk - tq + a, qs[b][h][a]
                gates = [1 / (1 + math.exp(-dot(query, ks[b][h][t]) * scaling)) for t in range(tk)]
                for j in range(i + 1):
                    p = min(sum(gates[j : i + 1]), module.max_pos - 1)
                    lo, hi = math.floor(p), math.ceil(p)
                    embedding = [(1 - (p - lo)) * x + (p - lo) * y for x, y in zip(e[lo], e[hi])]
                    out[b, h, a, j] = dot(query, embedding)
    return out


def causal_term(module, q, k, scaling):
    mask = causal(q.size(2), k.size(2))
    return module(q, torch.matmul(q, k.transpose(-1, -2)) * scaling, mask)


@pytest.mark.parametrize("max_pos", [3, 16])  # positions clamped, and not
def test_cope_matches_the_papers_equations(max_pos):
    module = cope(max_pos)
    q, k = inputs(7, 7, scale=2.0)
    term = causal_term(module, q, k, D**-0.5)
    assert term.shape == (B, H, 7, 7) and term.dtype == torch.float64
    reference = cope_reference(module, q, k, D**-0.5)
    lower = ~reference.isnan()
    torch.testing.assert_close(term[lower], reference[lower])
    # keys after the query: p = 0 (every gate from j on is masked), so q_i . e[0]
    first = (q @ module.embeddings[0]).unsqueeze(-1).expand(B, H, 7, 7)
    upper = torch.ones(7, 7, dtype=torch.bool).triu(1)
    torch.testing.assert_close(term[..., upper], first[..., upper])


def test_cope_counts_tokens_when_every_gate_is_open():
    """Gates of 1 (large logits): p_ij = i - j + 1, the plain relative position, clamped."""
    module = cope(5)
    logits = torch.full((1, 1, 6, 6), 50.0, dtype=torch.float64)
    p = module.positions(logits, causal(6, 6))
    expected = (torch.arange(6).unsqueeze(1) - torch.arange(6) + 1).clamp(0, 4).double()
    torch.testing.assert_close(p[0, 0].tril(), expected.tril())


@pytest.mark.parametrize("tq", [7, 3])  # a full pass, and the last queries over a longer cache
def test_cope_equals_x_transformers(tq):
    xt = pytest.importorskip("x_transformers.x_transformers")
    module = cope(6)
    theirs = xt.CoPE(dim=D, heads=H, max_pos=6).double()
    with torch.no_grad():
        theirs.pos_emb.copy_(module.embeddings)
    q, k = inputs(tq, 7, scale=1.5)
    logits = torch.matmul(q, k.transpose(-1, -2)) * D**-0.5
    # x-transformers' Attend: the causal mask fills the logits with -max before CoPE
    future = torch.ones(tq, 7, dtype=torch.bool).triu(7 - tq + 1)
    masked = logits.masked_fill(future, -torch.finfo(torch.float64).max)
    expected = theirs(q, masked)
    torch.testing.assert_close(module(q, logits, causal(tq, 7)), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(module(q, masked), expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(module(q, logits, future), expected, rtol=1e-12, atol=1e-12)


def test_cope_gradcheck_in_queries_keys_and_embeddings():
    module = cope(4)
    q, k = inputs(5, 5, seed=3)
    mask = causal(5, 5)

    def logits_with_cope(q, k, embeddings):
        logits = torch.matmul(q, k.transpose(-1, -2)) * D**-0.5
        values = {"embeddings": embeddings}
        return logits + torch.func.functional_call(module, values, (q, logits, mask))

    args = (q[:1].requires_grad_(), k[:1].requires_grad_(), module.embeddings.detach().clone())
    assert torch.autograd.gradcheck(logits_with_cope, (args[0], args[1], args[2].requires_grad_()))
    # the gates pass gradient into the keys (not only the embeddings' term into q)
    q1, k1, e1 = (a.detach().requires_grad_() for a in args)
    (grad_k,) = torch.autograd.grad(
        module(q1, torch.matmul(q1, k1.transpose(-1, -2)) * D**-0.5, mask).sum(), [k1]
    )
    assert grad_k.abs().sum() > 0


def test_cope_left_padding_changes_nothing_for_the_real_tokens():
    """A decoder self-attention over 5 real tokens, alone and left-padded to 8: the padding keys
    are masked (key padding mask), so their gates are 0 and count nothing."""
    module = cope(6)
    q, k = inputs(5, 5, seed=4)
    alone = causal_term(module, q, k, D**-0.5)
    gen = torch.Generator().manual_seed(5)
    pad_q = torch.cat([torch.randn(B, H, 3, D, generator=gen, dtype=torch.float64), q], 2)
    pad_k = torch.cat([torch.randn(B, H, 3, D, generator=gen, dtype=torch.float64), k], 2)
    padding = torch.zeros(1, 1, 1, 8, dtype=torch.float64)
    padding[..., :3] = mask_value(torch.float64)
    mask = causal(8, 8) + padding
    logits = torch.matmul(pad_q, pad_k.transpose(-1, -2)) * D**-0.5
    padded = module(pad_q, logits, mask)
    torch.testing.assert_close(padded[:, :, 3:, 3:], alone, rtol=0, atol=0)
    # right padding (keys after the last real token) is kept out by the causal mask alone
    right = module(pad_q.flip(2), logits.flip(2).flip(3), causal(8, 8))
    torch.testing.assert_close(
        right[:, :, :5, :5], causal_term(module, q.flip(2), k.flip(2), D**-0.5)
    )


def test_cope_incremental_step_equals_the_last_row_of_the_full_pass():
    """Decoding: the newest query alone over the cached keys, with no causal mask (fairseq
    passes none at an incremental step: every cached key is j <= i)."""
    module = cope(5)
    q, k = inputs(9, 9, seed=6)
    full = causal_term(module, q, k, D**-0.5)
    last = q[:, :, -1:]
    step = module(last, torch.matmul(last, k.transpose(-1, -2)) * D**-0.5)
    torch.testing.assert_close(step, full[:, :, -1:], rtol=0, atol=0)


def test_cope_bad_sizes_name_their_flag():
    with pytest.raises(ValueError, match="--cope-max-pos must be >= 1 \\(got 0\\)"):
        ContextualPositions(D, 0)
    module = ContextualPositions(D, 4)
    assert module.embeddings.abs().sum() == 0  # the paper's start
    q = torch.zeros(1, H, 2, D + 1)
    with pytest.raises(ValueError, match="heads of width 4, got queries of width 5"):
        module(q, torch.zeros(1, H, 2, 2))
    with pytest.raises(ValueError, match="logits .* do not match queries"):
        module(torch.zeros(1, H, 2, D), torch.zeros(1, H, 3, 2))


def test_cope_in_bfloat16_counts_in_float32():
    """300 open gates: a bfloat16 sum would stop at 256; the count runs on in float32."""
    module = cope(400).to(torch.bfloat16)
    logits = torch.full((1, 1, 1, 300), 30.0, dtype=torch.bfloat16)
    positions = module.positions(logits)
    assert positions.dtype == torch.float32
    assert positions[0, 0, 0].tolist() == [float(300 - j) for j in range(300)]
    q = torch.ones(1, 1, 1, D, dtype=torch.bfloat16)
    assert module(q, logits).dtype == torch.bfloat16
