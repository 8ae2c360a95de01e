"""What the float64 comparison with the authors' code cannot see, against
docs/official-code.md: initialisation (A2.4, A3.3), the scorers' query scaling (A3.4), the
learned-key network (A2.2), Gumbel noise at evaluation (A3.5), and old checkpoints keeping the
query scaling they were trained with."""

import math

import pytest
import torch
from attention_testing import causal_mask, decode_step_by_step, padding_mask, randomize
from compositional_reference import D, inject_noise, known_noise, make, reference
from conftest import ROOT, train_then_generate

from fairseq_plugins.modules.compositional_attention import CompositionalAttention

# The official reference configuration of A2.4 / A3.3: E = A = 512, H = R = 8, d_s = 32
# (d_h = d_v = 64). Standard deviations as the tables print them (Xavier-uniform: std = gain *
# sqrt(2 / (fan_in + fan_out)); the official learned keys are a (1, 1, 1, R, d_s) tensor whose
# fans are both R d_s).
E, H, R, DS = 512, 8, 8, 32
OFFICIAL_STD = {
    # (scoring, q_compose): {parameter: std}
    ("dot", False): {"retrieval_query_proj": 0.0361, "retrieval_key_proj": 0.1021},
    ("dot", True): {"retrieval_query_proj": 0.1021, "retrieval_key_proj": 0.1021},
    ("mlp", False): {"retrieval_query_proj": 0.0510, "scorer1": 0.125, "scorer2": 0.2462},
    ("mlp", True): {"retrieval_query_proj": 0.1443, "scorer1": 0.125, "scorer2": 0.2462},
    ("learned-key", False): {"retrieval_query_proj": 0.0361, "retrieval_keys": 0.04419},
    ("learned-key", True): {"retrieval_query_proj": 0.1021, "retrieval_keys": 0.04419},
    ("learned-key-mlp", False): {
        "retrieval_query_proj": 0.0510,
        "retrieval_keys": 0.0625,
        "scorer1": 0.1443,
        "scorer2": 0.2462,
    },
    ("learned-key-mlp", True): {
        "retrieval_query_proj": 0.1443,
        "retrieval_keys": 0.0625,
        "scorer1": 0.1443,
        "scorer2": 0.2462,
    },
}
# Linear scorers (mlp_hidden=0): CA Linear(d_s + d_v, 1), CAF Linear(2 d_s, 1).
OFFICIAL_LINEAR_STD = {"mlp": 0.1436, "learned-key-mlp": 0.1754}
# Biases keep PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in)): bounds at the reference size.
OFFICIAL_BIAS_BOUND = {
    ("mlp", "scorer1"): 1 / math.sqrt(96),
    ("learned-key-mlp", "scorer1"): 1 / math.sqrt(64),
    ("mlp", "scorer2"): 1 / math.sqrt(32),
}


def official_size_module(scoring, query_from_search, mlp_hidden=None, seed=0):
    torch.manual_seed(seed)
    return CompositionalAttention(
        E,
        H,
        R,
        DS,
        scoring=scoring,
        mlp_hidden=mlp_hidden,
        query_from_search=query_from_search,
        self_attention=True,
    )


def named_retrieval_weights(m):
    weights = {"retrieval_query_proj": m.retrieval_query_proj.weight}
    if hasattr(m, "retrieval_key_proj"):
        weights["retrieval_key_proj"] = m.retrieval_key_proj.weight
    if hasattr(m, "retrieval_keys"):
        weights["retrieval_keys"] = m.retrieval_keys
    if isinstance(getattr(m, "retrieval_scorer", None), torch.nn.Sequential):
        weights["scorer1"] = m.retrieval_scorer[0].weight
        weights["scorer2"] = m.retrieval_scorer[2].weight
    elif hasattr(m, "retrieval_scorer"):
        weights["scorer"] = m.retrieval_scorer.weight
    return weights


def assert_uniform_with_std(w, std, name):
    """Uniform on [-std sqrt(3), std sqrt(3)]: inside the support, and the sample std within
    4 standard errors (a uniform's sample std has relative standard error ~ 0.447 / sqrt(n))."""
    bound = std * math.sqrt(3)
    assert w.abs().max() <= bound * (1 + 1e-3), name  # (the table's stds are rounded)
    tolerance = 4 * 0.447 / math.sqrt(w.numel()) + 2e-3
    assert abs(w.std().item() / std - 1) < tolerance, (name, w.std().item(), std)


@pytest.mark.parametrize("scoring,query_from_search", sorted(OFFICIAL_STD))
def test_initial_retrieval_weights_follow_the_official_formulas(scoring, query_from_search):
    m = official_size_module(scoring, query_from_search)
    weights = named_retrieval_weights(m)
    assert set(weights) == set(OFFICIAL_STD[scoring, query_from_search])
    for name, std in OFFICIAL_STD[scoring, query_from_search].items():
        assert_uniform_with_std(weights[name].detach(), std, name)
    for (bias_scoring, name), bound in OFFICIAL_BIAS_BOUND.items():
        if bias_scoring == scoring:
            layer = m.retrieval_scorer[0 if name == "scorer1" else 2]
            assert layer.bias.abs().max() <= bound
            assert layer.bias.abs().max() > 0.5 * bound


@pytest.mark.parametrize("scoring", sorted(OFFICIAL_LINEAR_STD))
def test_initial_linear_scorers_follow_the_official_formulas(scoring):
    m = official_size_module(scoring, False, mlp_hidden=0)
    weights = named_retrieval_weights(m)
    assert_uniform_with_std(weights["scorer"].detach(), OFFICIAL_LINEAR_STD[scoring], "scorer")
    assert_uniform_with_std(weights["retrieval_query_proj"].detach(), 0.0510, "query")


def test_the_mlp_query_path_starts_at_the_official_size():
    """Item 1 + 2 together: the first hidden layer's query part times the retrieval query, at
    initialisation, has the official size (it was about 8x smaller: gain 1/sqrt(2) twice and
    / sqrt(d_s))."""
    sizes = []
    for seed in range(3):
        m = official_size_module("mlp", False, seed=seed)
        x = torch.randn(16, 4, E)
        with torch.no_grad():
            rq = m.retrieval_queries(x)  # (B, S, T, d_s)
            w_q = m.retrieval_scorer[0].weight[:, m.value_dim :]
            sizes.append((rq @ w_q.T).std().item())
    # official: x W_vq (std sqrt(E) * 0.0510 per unit-variance input) then W1_q (std 0.125)
    expected = math.sqrt(E) * 0.0510 * math.sqrt(DS) * 0.125
    assert abs(sum(sizes) / len(sizes) / expected - 1) < 0.1


# -- scores against a plain re-statement of the official scorers (float64) --------------------
def official_value_scores(m, x):
    """The official CA (mlp, value first) and CAF (learned keys, query first) scorers, written
    out from docs/official-code.md A2.2 / A3.2 for self-attention without a mask: (B, S, T, R)."""
    S, dh, dv, ds = m.num_searches, m.head_dim, m.value_dim, m.retrieval_qk_dim
    X = x.transpose(0, 1)  # (B, T, E)
    q = (X @ m.q_proj.weight.T + m.q_proj.bias) / math.sqrt(dh)  # the in-place q scaling
    k = X @ m.k_proj.weight.T + m.k_proj.bias
    v = X @ m.v_proj.weight.T + m.v_proj.bias
    scores = []
    for h in range(S):
        qh, kh = q[..., h * dh : (h + 1) * dh], k[..., h * dh : (h + 1) * dh]
        alpha = torch.softmax(qh @ kh.transpose(1, 2), -1)
        if m.query_from_search:
            q_sel = qh @ m.retrieval_query_proj.weight.T + m.retrieval_query_proj.bias
        else:
            w = m.retrieval_query_proj.weight[h * ds : (h + 1) * ds]
            q_sel = X @ w.T + m.retrieval_query_proj.bias[h * ds : (h + 1) * ds]
        row = []
        for r in range(m.num_retrievals):
            o = alpha @ v[..., r * dv : (r + 1) * dv]
            if m.scoring == "mlp":
                features = torch.cat([o, q_sel], -1)  # CA: value first, no query scaling
            else:
                key = m.retrieval_keys[r].expand(q_sel.shape)
                features = torch.cat([q_sel, key], -1)  # CAF: query first, no query scaling
            net = m.retrieval_scorer
            if isinstance(net, torch.nn.Sequential):
                hidden = torch.relu(features @ net[0].weight.T + net[0].bias)
                s = hidden @ net[2].weight.T + net[2].bias
            else:
                s = features @ net.weight.T + net.bias
            row.append(s.squeeze(-1))
        scores.append(torch.softmax(torch.stack(row, -1), -1))
    return torch.stack(scores, 1)  # (B, S, T, R)


@pytest.mark.parametrize("scoring", ["mlp", "learned-key-mlp"])
@pytest.mark.parametrize("mlp_hidden", [None, 0])
@pytest.mark.parametrize("query_from_search", [False, True])
def test_value_scores_equal_the_official_scorers(scoring, mlp_hidden, query_from_search):
    torch.manual_seed(1)
    m = CompositionalAttention(
        D,
        4,
        2,
        8,
        scoring=scoring,
        mlp_hidden=mlp_hidden,
        query_from_search=query_from_search,
        self_attention=True,
    )
    m = randomize(m, std=0.5).double().eval()
    m.keep_value_scores = True
    x = torch.randn(5, 3, D, dtype=torch.float64)
    m(x, x, x, need_weights=False)
    expected = official_value_scores(m, x)
    torch.testing.assert_close(m.last_value_scores, expected, atol=1e-12, rtol=1e-12)
    if scoring == "learned-key-mlp" and mlp_hidden == 0:
        # the linear form is a constant learned mixture, the same for every input
        assert torch.allclose(expected, expected[:1, :, :1].expand_as(expected), atol=1e-12)


# -- Gumbel noise at evaluation (--retrieval-gumbel-in-eval) ------------------------------------
SCORINGS = ["dot", "mlp", "learned-key", "learned-key-mlp"]


def gumbel_module(scoring, in_eval=True, cross=False, **kwargs):
    m = make(
        cross=cross,
        num_searches=4,
        num_retrievals=2,
        scoring=scoring,
        gumbel=True,
        gumbel_temperature=1.0,  # the official: no temperature
        gumbel_in_eval=in_eval,
        **kwargs,
    )
    return m.double()


@pytest.mark.parametrize("scoring", SCORINGS)
def test_gumbel_in_eval_matches_the_reference_with_the_same_noise(scoring):
    torch.manual_seed(2)
    m = inject_noise(gumbel_module(scoring)).eval()
    x = torch.randn(6, 3, D, dtype=torch.float64)
    kpm = padding_mask([6, 4, 2], 6)
    noise = known_noise(3, 4, 6, 2, torch.float64)
    expected = reference(m, x, x, key_padding_mask=kpm, noise=noise)
    for need_weights in (False, True):
        out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    # our default at evaluation: no noise, the plain softmax
    plain = inject_noise(gumbel_module(scoring, in_eval=False)).eval()
    plain.load_state_dict(m.state_dict())
    out, _ = plain(x, x, x, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(
        out, reference(plain, x, x, key_padding_mask=kpm), atol=1e-12, rtol=0
    )
    assert not torch.allclose(out, expected, atol=1e-4)


@pytest.mark.parametrize("scoring", SCORINGS)
def test_gumbel_in_eval_draws_fresh_noise_at_every_forward(scoring):
    torch.manual_seed(3)
    m = gumbel_module(scoring).eval()
    x = torch.randn(5, 2, D, dtype=torch.float64)
    with torch.no_grad():
        first, second = m(x, x, x, need_weights=False)[0], m(x, x, x, need_weights=False)[0]
    assert not torch.allclose(first, second)


@pytest.mark.parametrize("scoring", SCORINGS)
def test_gumbel_in_eval_incremental_decoding_equals_full_forward(scoring):
    """Generation with noise: one draw per step; with the noise known by position, the steps
    equal the full forward (self-attention and cross-attention)."""
    torch.manual_seed(4)
    m = gumbel_module(scoring, query_from_search=True).eval()
    x = torch.randn(6, 3, D, dtype=torch.float64)
    inject_noise(m)
    full, _ = m(x, x, x, attn_mask=causal_mask(6).double(), need_weights=False)
    inject_noise(m, offset=[0])
    torch.testing.assert_close(decode_step_by_step(m, x), full, atol=1e-12, rtol=1e-12)

    c = gumbel_module(scoring, cross=True).eval()
    enc = torch.randn(5, 3, D, dtype=torch.float64)
    kpm = padding_mask([5, 2, 4], 5, left=True)
    inject_noise(c)
    full, _ = c(x, enc, enc, key_padding_mask=kpm, need_weights=False)
    inject_noise(c, offset=[0])
    steps = decode_step_by_step(c, x, enc, kpm)
    torch.testing.assert_close(steps, full, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("scoring", SCORINGS)
def test_gumbel_in_eval_padding_invariance(scoring):
    torch.manual_seed(5)
    m = inject_noise(gumbel_module(scoring)).eval()
    sentence = torch.randn(4, 1, D, dtype=torch.float64)
    alone, _ = m(sentence, sentence, sentence, need_weights=False)
    batch = torch.randn(7, 3, D, dtype=torch.float64)
    batch[:4, 1:2] = sentence
    out, _ = m(batch, batch, batch, key_padding_mask=padding_mask([7, 4, 6], 7))
    torch.testing.assert_close(out[:4, 1:2], alone, atol=1e-12, rtol=1e-12)


def test_gumbel_in_eval_needs_gumbel():
    with pytest.raises(ValueError, match="--retrieval-gumbel-in-eval needs --retrieval-gumbel"):
        CompositionalAttention(D, 4, 2, gumbel_in_eval=True)


# -- old checkpoints keep the query scaling they were trained with -------------------------------
def test_mlp_state_saved_without_the_flag_loads_with_the_scaled_query():
    torch.manual_seed(6)
    old = make(num_searches=4, num_retrievals=2, scoring="mlp", legacy_mlp_query_scaling=True)
    state = {k: v for k, v in old.state_dict().items() if k != "mlp_query_scaled"}  # as saved then
    loaded = make(num_searches=4, num_retrievals=2, scoring="mlp")
    assert loaded.retrieval_query_scaling == 1.0
    loaded.load_state_dict(state)
    assert loaded.retrieval_query_scaling == 16**-0.5 and bool(loaded.mlp_query_scaled)
    x = torch.randn(5, 2, D)
    torch.testing.assert_close(loaded(x, x, x)[0], old(x, x, x)[0], atol=0, rtol=0)
    # a state saved now says which: an unscaled module stays unscaled
    new = make(num_searches=4, num_retrievals=2, scoring="mlp")
    reloaded = make(num_searches=4, num_retrievals=2, scoring="mlp", legacy_mlp_query_scaling=True)
    reloaded.load_state_dict(new.state_dict())
    assert reloaded.retrieval_query_scaling == 1.0
    torch.testing.assert_close(reloaded(x, x, x)[0], new(x, x, x)[0], atol=0, rtol=0)
    assert not torch.allclose(new(x, x, x)[0], old(x, x, x)[0], atol=1e-4)


def test_legacy_mlp_checkpoint_loads_with_the_scaled_query():
    """The fixture trained with the scaled mlp scorer (d_s = 32) loads scaled;
    tests/test_legacy_checkpoints.py checks that it decodes exactly as it did."""
    from fairseq import checkpoint_utils

    path = ROOT / "tests" / "fixtures" / "legacy-0.1" / "translation-compositional.pt"
    models, _ = checkpoint_utils.load_model_ensemble(
        [str(path)], arg_overrides={"data": str(path.parent / "bin")}
    )
    attentions = [m for m in models[0].modules() if isinstance(m, CompositionalAttention)]
    assert attentions and all(a.scoring == "mlp" for a in attentions)
    assert all(a.retrieval_query_scaling == 32**-0.5 for a in attentions)


# -- through fairseq's own tools ---------------------------------------------------------------
TRAIN = ["--optimizer", "adam", "--lr", "5e-4", "--max-tokens", "400", "--max-update", "2"]
TRAIN += ["--no-progress-bar", "--log-interval", "1", "--no-epoch-checkpoints", "--cpu"]
TINY_COMPOSITIONAL = ["--arch", "compgen_abs", "--attention-type", "compositional"]
TINY_COMPOSITIONAL += ["--retrieval-qk-dim", "8", "--num-retrievals", "2"]
GENERATE = ["--beam", "3", "--batch-size", "50", "--max-len-b", "6", "--cpu"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        ["--retrieval-scoring", "learned-key-mlp", "--retrieval-query-from-search"],
        ["--retrieval-scoring", "learned-key-mlp", "--retrieval-mlp-hidden", "0"],
        ["--retrieval-scoring", "mlp", "--retrieval-gumbel", "--retrieval-gumbel-in-eval"],
    ],
    ids=["learned-key-mlp", "learned-key-linear", "gumbel-in-eval"],
)
def test_new_options_train_and_generate(demo_bin, tmp_path, extra):
    gen, hyps = train_then_generate(
        demo_bin, tmp_path / "ckpt", TINY_COMPOSITIONAL + TRAIN + extra, GENERATE, updates=2
    )
    assert len(hyps) == 100
    from fairseq import checkpoint_utils

    state = checkpoint_utils.load_checkpoint_to_cpu(str(tmp_path / "ckpt" / "checkpoint_last.pt"))
    args = state["cfg"]["model"]
    assert args.retrieval_scoring == extra[1]
    if "mlp" == extra[1]:  # saved now: the mlp query is unscaled, and the state says so
        flags = [v for k, v in state["model"].items() if k.endswith("mlp_query_scaled")]
        assert flags and not any(bool(f) for f in flags)


def test_gumbel_in_eval_without_gumbel_is_refused_naming_the_flag():
    from model_testing import build

    with pytest.raises(ValueError, match="--retrieval-gumbel-in-eval needs --retrieval-gumbel"):
        build(
            ["--arch", "compgen_abs", "--attention-type", "compositional"]
            + ["--retrieval-gumbel-in-eval"]
        )


def test_gumbel_in_eval_reaches_every_attention_of_a_model():
    """Through the model options: in evaluation mode every compositional attention keeps its
    noise, so two passes differ; without the option they are identical."""
    from model_testing import TINY, batch, build, full_log_probs

    base = ["--arch", "variant_transformer", "--attention-type", "compositional"]
    base += ["--num-retrievals", "2", "--retrieval-qk-dim", "8", "--retrieval-gumbel"]
    src, lengths, tgt = batch()
    for in_eval in (False, True):
        torch.manual_seed(0)
        model, _ = build(base + TINY + (["--retrieval-gumbel-in-eval"] if in_eval else []))
        model = randomize(model, std=0.2).eval()
        attentions = [m for m in model.modules() if isinstance(m, CompositionalAttention)]
        assert len(attentions) == 3 + 2 + 2 and all(a.gumbel_in_eval == in_eval for a in attentions)
        with torch.no_grad():
            first = full_log_probs(model, src, lengths, tgt)
            second = full_log_probs(model, src, lengths, tgt)
        assert torch.equal(first, second) != in_eval
