"""CoPE in compositional decoder self-attention (--decoder-attention-type compositional
--decoder-rel-pos cope): the built attention against a float64 re-statement of docs/method.md §1
and §5.7 (every search gates, counts and interpolates on its own logits), incremental decoding
with a beam reorder, padding, an exact gradient, and the refusals that remain."""

import math

import pytest
import torch
from attention_testing import causal_mask, padding_mask, randomize
from compositional_reference import known_noise_sampler
from model_testing import (
    assert_decodes_incrementally_with_beam_reordering,
    assert_lm_decodes_incrementally,
    assert_padding_invariant,
    build,
    tiny_model,
)

import fairseq_plugins.variant_config as variant_config
from fairseq_plugins.modules.compositional_attention import CompositionalAttention
from fairseq_plugins.modules.contextual_positions import ContextualPositions
from plugin_tools.errors import PluginConfigError

# d = 32 and 4 heads (TINY), 2 searches: the search width d/S = 16, not the head width 8.
COPE = ["--arch", "variant_transformer", "--decoder-attention-type", "compositional"]
COPE += ["--decoder-rel-pos", "cope", "--cope-max-pos", "5", "--num-searches", "2"]
COPE += ["--retrieval-qk-dim", "8"]


def interpolated(table, p):
    """(1 - w) e[floor p] + w e[ceil p], w = p - floor p, for one float p."""
    low = math.floor(p)
    return (1 - (p - low)) * table[low] + (p - low) * table[math.ceil(p)]


def cope_compositional_reference(m, x, key_padding_mask, attn_mask, search_noise=None, noise=None):
    """Compositional self-attention with CoPE, per sentence b and search i, from the equations:
    s = Q_i K_i^T / sqrt(d_h) + masks, g = sigmoid(s) (0 where masked),
    p_tj = min(sum_{u >= j} g_tu, max_pos - 1), s_tj += Q_i[t] . e(p_tj), A_i = softmax(s)
    (with --retrieval-gumbel-search in training: softmax((s + G) / tau)), then the retrievals
    O_ij = A_i V_j, c_ij = softmax_j(q_i . (O_ij W_rk + b)) (dot) or MLP([O_ij ; q_i]),
    out = concat_i(sum_j c_ij O_ij) W_o. Returns the output (T, B, d) and A (B, S, T, T)."""
    T, B, _ = x.shape
    S, R, dh, dv, ds = m.num_searches, m.num_retrievals, m.head_dim, m.value_dim, m.retrieval_qk_dim
    table, top = m.contextual_positions.embeddings, m.contextual_positions.max_pos - 1
    training_noise = m.gumbel and m.training

    def rows(linear, xb, lo, hi):  # the rows lo..hi of a Linear: one search's / retrieval's part
        return xb @ linear.weight[lo:hi].T + linear.bias[lo:hi]

    outputs, searches = [], torch.zeros(B, S, T, T, dtype=x.dtype)
    for b in range(B):
        xb = x[:, b]
        masked = (attn_mask == float("-inf")) | key_padding_mask[b].unsqueeze(0)
        parts = []
        for i in range(S):
            Q, K = (
                rows(m.q_proj, xb, i * dh, (i + 1) * dh),
                rows(m.k_proj, xb, i * dh, (i + 1) * dh),
            )
            s = (Q @ K.T / math.sqrt(dh)).masked_fill(masked, float("-inf"))
            gates = torch.sigmoid(s)
            logits = s.clone()
            for t in range(T):
                for j in range(T):
                    p = min(float(gates[t, j:].sum()), top)
                    logits[t, j] = s[t, j] + Q[t] @ interpolated(table, p)
            if training_noise and m.gumbel_search:
                logits = (logits + search_noise[b, i]) / m.gumbel_temperature
            A = torch.softmax(logits, -1)
            searches[b, i] = A
            if m.query_from_search:
                q = m.retrieval_query_proj(Q / math.sqrt(dh))
            else:
                q = rows(m.retrieval_query_proj, xb, i * ds, (i + 1) * ds)
            if m.scoring == "dot":
                q = q / math.sqrt(ds)
            pairs = [A @ rows(m.v_proj, xb, j * dv, (j + 1) * dv) for j in range(R)]
            if m.scoring == "dot":
                scores = [(q * m.retrieval_key_proj(O)).sum(-1) for O in pairs]
            else:
                scores = [m.retrieval_scorer(torch.cat([O, q], -1)).squeeze(-1) for O in pairs]
            scores = torch.stack(scores, -1)
            if training_noise:
                scores = (scores + noise[b, i]) / m.gumbel_temperature
            c = torch.softmax(scores, -1)
            parts.append(sum(c[:, j : j + 1] * pairs[j] for j in range(R)))
        outputs.append(m.out_proj(torch.cat(parts, -1)))
    return torch.stack(outputs, 1), searches


# (options, target length, the value-score path the full forward takes)
CASES = {
    # d_v = 32 / 2 = 16 >= 2 Tk: scored and mixed from the search weights (pairs never built)
    "dot-weighted-mix": (["--num-retrievals", "2"], 7, "weighted-mix"),
    # d_v = 8 < 2 Tk: the pairs O_ij built, one fused scoring-and-mixing node
    "dot-pairs": (["--num-retrievals", "4"], 9, "dot-mix"),
    "mlp-query-from-search": (
        ["--num-retrievals", "2", "--retrieval-scoring", "mlp", "--retrieval-query-from-search"],
        9,
        "scores",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_built_attention_matches_the_equations(case, monkeypatch):
    options, length, path = CASES[case]
    model = tiny_model(COPE + options).double()
    attention = model.decoder.layers[1].self_attn
    assert isinstance(attention, CompositionalAttention)
    assert attention.relative_positions is None  # CoPE is not a bias from positions
    assert attention.contextual_positions.embeddings.shape == (5, 16)  # max_pos x d/S
    paths = []
    choose = attention.value_score_path
    monkeypatch.setattr(
        attention, "value_score_path", lambda *a: paths.append(choose(*a)) or paths[-1]
    )
    x = torch.randn(length, 2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    kpm, mask = padding_mask([length, length - 3], length), causal_mask(length).double()
    out, weights = attention(x, x, x, key_padding_mask=kpm, attn_mask=mask, need_head_weights=True)
    expected, searches = cope_compositional_reference(attention, x, kpm, mask)
    assert set(paths) == {path}  # (asked once more by combine when the pairs are built)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, searches.transpose(0, 1))  # (S, B, Tq, Tk)
    # the CoPE term matters: without it (a zero table) the output differs
    with torch.no_grad():
        attention.contextual_positions.embeddings.zero_()
    plain, _ = attention(x, x, x, key_padding_mask=kpm, attn_mask=mask, need_weights=False)
    assert (plain - out).abs().max() > 1e-3


def test_search_gumbel_noise_comes_after_the_cope_term():
    """In training with --retrieval-gumbel-search the search logits with their CoPE term get the
    noise: softmax((s + cope + G) / tau); the gates read the logits before the noise."""
    options = ["--num-retrievals", "2", "--retrieval-gumbel", "--retrieval-gumbel-search"]
    options += ["--retrieval-gumbel-temperature", "0.7"]
    model = tiny_model(COPE + options).double().train()
    attention = model.decoder.layers[0].self_attn
    attention.sample_gumbel = known_noise_sampler()
    attention.sample_search_gumbel = known_noise_sampler()
    x = torch.randn(6, 2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    kpm, mask = padding_mask([6, 4], 6), causal_mask(6).double()
    out, _ = attention(x, x, x, key_padding_mask=kpm, attn_mask=mask, need_weights=False)
    search_noise = known_noise_sampler()(torch.zeros(2, 2, 6, 6, dtype=torch.float64))
    noise = known_noise_sampler()(torch.zeros(2, 2, 6, 2, dtype=torch.float64))
    expected, _ = cope_compositional_reference(attention, x, kpm, mask, search_noise, noise)
    torch.testing.assert_close(out, expected)


VARIANTS = {
    "weighted-mix-full-pass": COPE + ["--num-retrievals", "2"],
    "query-from-search-mlp": COPE + ["--retrieval-scoring", "mlp", "--retrieval-query-from-search"],
    "realformer-shared": COPE + ["--num-retrievals", "2", "--realformer", "--share-decoder-layers"],
    "compositional-everywhere-rel2-eb-copy": COPE
    + ["--attention-type", "compositional", "--rel-pos", "eb", "--rel-pos-cross"]
    + ["--rel-pos-radius", "2", "--copy-decoder"],
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_model_decodes_incrementally_with_beam_reordering_and_ignores_padding(variant):
    model = tiny_model(VARIANTS[variant]).double()
    assert isinstance(model.decoder.layers[0].self_attn.contextual_positions, ContextualPositions)
    assert_decodes_incrementally_with_beam_reordering(model)
    assert_padding_invariant(model)


def test_language_model_decodes_incrementally():
    lm = tiny_model(
        ["--arch", "variant_transformer_lm", "--decoder-attention-type", "compositional"]
        + ["--decoder-rel-pos", "cope", "--num-searches", "2", "--num-retrievals", "2"],
        lm=True,
    )
    assert isinstance(lm.decoder.layers[0].self_attn, CompositionalAttention)
    assert_lm_decodes_incrementally(lm.double(), 7)


@pytest.mark.parametrize("left", [False, True])
def test_padded_keys_count_nothing(left):
    """A sentence padded in a batch (right, or left with queries over the padding) gives the same
    outputs on its real tokens as alone: padding has gate 0 and adds nothing to a position."""
    model = tiny_model(COPE + ["--num-retrievals", "2"]).double()
    attention = model.decoder.layers[0].self_attn
    x = torch.randn(8, 2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    kpm = padding_mask([8, 5], 8, left=left)
    out, _ = attention(x, x, x, key_padding_mask=kpm, attn_mask=causal_mask(8).double())
    real = slice(3, 8) if left else slice(0, 5)
    alone = x[real, 1:2]
    expected, _ = attention(alone, alone, alone, attn_mask=causal_mask(5).double())
    torch.testing.assert_close(out[real, 1:2], expected)


@pytest.mark.parametrize("attn_dim,max_pos", [(16, 6), (8, 3)])  # weighted mix / pairs; clamped
def test_gradients_are_exact(attn_dim, max_pos):
    """gradcheck in float64 through the inputs and the CoPE table (gates, positions and the
    interpolation), on both value-score paths; max_pos 3 clamps the counts of 4 keys."""
    table = ContextualPositions(4, max_pos)
    attention = CompositionalAttention(
        8, 2, 2, 4, attn_dim=attn_dim, self_attention=True, contextual_positions=table
    )
    attention = randomize(attention, std=0.5).double().eval()
    x = torch.randn(4, 2, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    kpm, mask = padding_mask([4, 3], 4), causal_mask(4).double()

    def output(x, embeddings):
        state = {"contextual_positions.embeddings": embeddings}
        args = (x, x, x)
        kwargs = dict(key_padding_mask=kpm, attn_mask=mask, need_weights=False)
        return torch.func.functional_call(attention, state, args, kwargs)[0]

    embeddings = attention.contextual_positions.embeddings.detach().clone()
    assert torch.autograd.gradcheck(output, (x.requires_grad_(), embeddings.requires_grad_()))


@pytest.mark.parametrize(
    "args,message",
    [
        (  # geometric attention (the Neural Data Router's, encoder only) has no CoPE
            ["--encoder-attention-type", "geometric", "--encoder-rel-pos", "cope"],
            "--encoder-rel-pos cope: CoPE applies to decoder self-attention only ",
        ),
        (
            ["--encoder-attention-type", "geometric", "--rel-pos", "cope"],
            "--rel-pos cope: CoPE applies to decoder self-attention only ",
        ),
        (
            ["--decoder-attention-type", "geometric", "--decoder-rel-pos", "cope"],
            "--decoder-attention-type: unknown value 'geometric'",
        ),
    ],
)
def test_the_remaining_refusals_are_one_line_errors_naming_the_flag(args, message):
    with pytest.raises(PluginConfigError, match="^" + message) as error:
        build(["--arch", "variant_transformer"] + args)
    assert "\n" not in str(error.value)


def test_a_decoder_attention_type_without_cope_is_refused(monkeypatch):
    """The check that keeps CoPE to the types that define it (today every decoder type does)."""
    monkeypatch.setattr(variant_config, "COPE_ATTENTION_TYPES", ("multihead",))
    with pytest.raises(PluginConfigError) as error:
        build(COPE)
    assert str(error.value) == (
        "--decoder-rel-pos cope needs decoder self-attention of type multihead "
        "(got --decoder-attention-type compositional)"
    )
