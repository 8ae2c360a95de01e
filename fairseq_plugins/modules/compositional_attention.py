"""Compositional Attention (Mittal et al., ICLR 2022), exactly as docs/method.md §1 states it.

S searches pick, per token, a soft mixture of R retrievals:
  A_i = softmax(Q_i K_i^T / sqrt(d_h) + mask)            searches, i = 1..S
  V_j = X' W_v,j                                          retrievals, j = 1..R
  O_ij = A_i V_j                                          every pair
  q_i = X W_rq,i / sqrt(d_s),  k_ij = O_ij W_rk           retrieval query / key (dot scorer)
  c_ij = softmax_j(q_i . k_ij)                            value scores
  out = concat_i(sum_j c_ij O_ij) W_o

Fast path: the R value projections are one Linear(d, attn_dim), so ONE fused attention call per
forward gives every O_ij (values of all retrievals concatenated on features, shared by the searches).
The retrieval key is folded into the query, ``q_i . (O_ij W_rk + b) = O_ij . (q_i W_rk) + q_i . b``,
so the (..., R, d_s) key tensor is never built. No Python loop over searches or retrievals.

Position schemes apply to the searches as to heads. CoPE (--decoder-rel-pos cope, docs/method.md
§5.7): each search's gates are the sigmoid of its own scaled, masked logits Q_i K_i^T / sqrt(d_h),
and q_i . e(p) (Q_i's row, one table of width d_h shared by the searches) is added to them before
A_i's softmax; it forces the explicit path, whose search weights then feed the retrievals as usual.

Options of the official implementation (official fairseq fork, ``compositional_attention.py`` and
``compositional_attention_func.py``; docs/official-code.md A2-A3, docs/method.md §1.7-1.10):
  scoring "mlp"           c_ij = softmax_j(MLP([O_ij ; q_i])) on the unscaled q_i (only the dot
                          scorers divide by sqrt(d_s)); with no hidden layer q_i's term is the same
                          for every j and cancels in the softmax (the official code alike), so the
                          default MLP has one hidden ReLU layer of width d_s (the official
                          ``nonlinear=True``); mlp_hidden=0 keeps the linear scorer.
  scoring "learned-key"   c_ij = softmax_j(q_i . key_j) with R learned keys of width d_s (the
                          official ``_func`` module with ``--qk-rule``): the scores do not depend
                          on O_ij.
  scoring "learned-key-mlp"  c_ij = softmax_j(MLP([q_i ; key_j])), query first, unscaled q_i (the
                          official ``_func`` module without ``--qk-rule``; ``run_wiki.sh``'s
                          variant). mlp_hidden=0: Linear(2 d_s, 1), a constant learned mixture
                          softmax_j(w . key_j), independent of the input (the official alike).
  query_from_search       q_i = (Q_i / sqrt(d_h)) W_rq with one Linear(d_h, d_s) shared by the
                          searches (the official ``--q-compose``), instead of X W_rq,i.
  gumbel                  c_ij = softmax_j((l_ij + g_ij) / tau), g_ij ~ Gumbel(0, 1) i.i.d. (the
                          official ``--gumbel``: soft, tau = 1.0 by default). Ours: in training
                          only, plain softmax at evaluation and decoding (deterministic metrics).
                          gumbel_in_eval: noise at evaluation and generation too, fresh at every
                          forward and decoding step, which is what the official module does.
Initialisation as the official module (docs/official-code.md A2.4, A3.3): Xavier-uniform on the
retrieval query projection with gain 1/sqrt(2) for the dot scorers and 1 for the MLP / linear
scorers; gain 1/sqrt(2) on the retrieval key projection, 1 on the score networks; the learned keys
as the official (1, 1, 1, R, d_s) tensor: std 1/sqrt(2 R d_s) (dot), 1/sqrt(R d_s) (MLP / linear).
legacy_mlp_query_scaling: the mlp scorer's query divided by sqrt(d_s), as older checkpoints (saved
before the ``mlp_query_scaled`` buffer existed) were trained. An mlp module stores which in its
state (buffer ``mlp_query_scaled``); an older state has none and loads as scaled, so such
checkpoints decode as they did (docs/method.md §1.12).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from fairseq_plugins.option_choices import RETRIEVAL_SCORINGS, ChoiceRegistry

from .biased_attention import BiasedAttention, split_width
from .numerics import at_least_float32, softmax_fp32
from .position_schemes import build_position_scheme, is_contextual

# The constructor arguments that come from the CompositionalPlan's field of the same name
# (--retrieval-scoring, --retrieval-mlp-hidden, ...).
RETRIEVAL_ARGUMENTS = (
    "scoring",
    "mlp_hidden",
    "query_from_search",
    "gumbel",
    "gumbel_temperature",
    "gumbel_in_eval",
    "gumbel_search",
)

# --retrieval-scoring: name -> its RetrievalScorer (after the module class). A scorer builds and
# initialises its parameters on the attention module (their names are the checkpoints') and
# computes the value-score logits l_ij.
RETRIEVAL_SCORERS = ChoiceRegistry("--retrieval-scoring", RETRIEVAL_SCORINGS)


class CompositionalAttention(BiasedAttention):
    def __init__(
        self,
        embed_dim,
        num_searches,
        num_retrievals,
        retrieval_qk_dim=32,
        *,
        attn_dim=None,
        scoring="dot",
        mlp_hidden=None,
        query_from_search=False,
        gumbel=False,
        gumbel_temperature=1.0,
        gumbel_in_eval=False,
        gumbel_search=False,
        legacy_mlp_query_scaling=False,
        search_dim=None,
        bias=True,
        **attention_args,
    ):
        """``attention_args``: BiasedAttention's (dropout, self/cross attention, kdim, vdim,
        relative positions, quantization noise)."""
        attn_dim = embed_dim if attn_dim is None else attn_dim
        search_dim = search_dim or embed_dim
        head_dim = split_width(search_dim, num_searches, "searches")
        if attn_dim < 1:
            raise ValueError(f"--compositional-attn-dim must be >= 1 (got {attn_dim})")
        value_dim = split_width(attn_dim, num_retrievals, "retrievals", "retrieval value width")
        if retrieval_qk_dim < 1:
            raise ValueError(f"--retrieval-qk-dim must be >= 1 (got {retrieval_qk_dim})")
        scorer = RETRIEVAL_SCORERS[scoring]()
        # None: one hidden layer of width d_s (the official nonlinear scorer); 0: linear (the
        # meaning of 0 in checkpoints saved before the default changed, so they load as they were).
        mlp_hidden = retrieval_qk_dim if mlp_hidden is None else mlp_hidden
        if mlp_hidden < 0:
            raise ValueError(f"--retrieval-mlp-hidden must be >= 0 (got {mlp_hidden})")
        if not gumbel_temperature > 0 or not math.isfinite(gumbel_temperature):
            raise ValueError(
                f"--retrieval-gumbel-temperature must be a finite number > 0 "
                f"(got {gumbel_temperature})"
            )
        if gumbel_in_eval and not gumbel:
            raise ValueError("--retrieval-gumbel-in-eval needs --retrieval-gumbel")
        if gumbel_search and not gumbel:
            raise ValueError("--retrieval-gumbel-search needs --retrieval-gumbel")
        super().__init__(embed_dim, num_searches, head_dim, **attention_args)
        self.num_searches = num_searches
        self.num_retrievals = num_retrievals
        self.search_dim = search_dim
        self.attn_dim = attn_dim
        self.value_dim = value_dim
        self.retrieval_qk_dim = retrieval_qk_dim
        self.scoring, self.scorer = scoring, scorer
        self.query_from_search = query_from_search
        self.gumbel = gumbel
        self.gumbel_temperature = float(gumbel_temperature)
        self.gumbel_in_eval = gumbel_in_eval
        self.gumbel_search = gumbel_search
        # 1/sqrt(d_s) on the retrieval query: the dot scorers (the official), and the mlp scorer
        # of older models, saved without the flag (kept in the state: see _load_from_state_dict).
        if scorer.stores_query_scaling:
            # An integer (1: scaled), so that fairseq's checkpoint averaging keeps it.
            scaled = torch.tensor(int(legacy_mlp_query_scaling))
            self.register_buffer("mlp_query_scaled", scaled)
        self._set_query_scaling(scorer.query_scaled or legacy_mlp_query_scaling)
        self.build_input_projections(search_dim, attn_dim, bias=bias)
        if query_from_search:
            # One map shared by the searches, on the scaled search query Q_i / sqrt(d_h). Plain
            # Linear: d_h need not be a multiple of the quantization-noise block size.
            self.retrieval_query_proj = nn.Linear(self.head_dim, retrieval_qk_dim, bias=bias)
        else:
            self.retrieval_query_proj = self.projection(
                embed_dim, num_searches * retrieval_qk_dim, bias=bias
            )
        self._search_queries = None  # Q of the current forward, for query_from_search
        # Used through their weights (folded / split, see value scores), so no quantization noise.
        scorer.build(self, mlp_hidden, bias)
        self.out_proj = self.projection(num_searches * self.value_dim, embed_dim, bias=bias)

        # Analysis hooks. keep_value_scores: keep the last value scores c_ij, (B, S, T, R), in
        # last_value_scores. value_scores_override: a function (O_ij (B, S, T, R, d_v), query)
        # -> c_ij used instead of the learned scores (e.g. the identity, which reduces the module
        # to multi-head attention).
        self.keep_value_scores = False
        self.last_value_scores = None
        self.value_scores_override = None
        self.reset_parameters()

    def reset_parameters(self):
        """fairseq's initialisation of q/k/v/out; the retrieval parts as the official module
        (docs/official-code.md A2.4, A3.3): Xavier-uniform, gain 1/sqrt(2) with the dot scorers and
        1 with the MLP / linear ones on the retrieval query projection, 1/sqrt(2) on the retrieval
        key projection, 1 on the score networks; biases keep PyTorch's default."""
        super().reset_parameters()
        nn.init.xavier_uniform_(self.retrieval_query_proj.weight, gain=self.scorer.query_gain)
        self.scorer.reset_parameters(self)

    def _set_query_scaling(self, scaled):
        self.retrieval_query_scaling = self.retrieval_qk_dim**-0.5 if scaled else 1.0

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """An mlp module's state without ``mlp_query_scaled`` is an older checkpoint's, trained
        with the mlp scorer's query divided by sqrt(d_s): it loads with that scaling. (A Python attribute
        then, read once here, not a tensor read at every forward.)"""
        if self.scorer.stores_query_scaling:
            key = prefix + "mlp_query_scaled"
            if key not in state_dict:
                state_dict[key] = torch.tensor(1)
            self._set_query_scaling(bool(state_dict[key]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @classmethod
    def from_plan(cls, plan, spec):
        """Built for one attention (an AttentionSpec) from its AttentionPlan: the position scheme
        (CoPE, --decoder-rel-pos cope: ``contextual_positions``, one table of the search width
        shared by the searches) and ``plan.settings``, a CompositionalPlan (searches and
        retrievals default to the layer's heads, the retrieval value width to the attention
        width)."""
        settings = plan.settings
        width = spec.inner_dim or spec.embed_dim
        searches = spec.num_heads if settings.num_searches is None else settings.num_searches
        retrievals = spec.num_heads if settings.num_retrievals is None else settings.num_retrievals
        # The searches play the heads' part: a scheme (CoPE's table too) is built at the search
        # width d/S, and CoPE goes to ``contextual_positions`` (a term from each search's logits).
        scheme = build_position_scheme(
            plan.positions, split_width(width, searches, "searches"), searches
        )
        contextual = is_contextual(scheme)
        retrieval = {name: getattr(settings, name) for name in RETRIEVAL_ARGUMENTS}
        return cls(
            spec.embed_dim,
            searches,
            retrievals,
            settings.retrieval_qk_dim,
            attn_dim=width if settings.attn_dim is None else settings.attn_dim,
            search_dim=width,
            relative_positions=None if contextual else scheme,
            contextual_positions=scheme if contextual else None,
            **retrieval,
            **spec.module_kwargs(),
        )

    def project_query(self, query):
        tgt_len, bsz, _ = query.shape
        q = self.q_proj(query).view(tgt_len, bsz, self.num_searches, self.head_dim)
        q = q.permute(1, 2, 0, 3)
        if self.query_from_search:
            self._search_queries = q  # taken (and released) by retrieval_queries in this forward
        return q

    def project_key_value(self, key, value):
        src_len, bsz, _ = key.shape
        k = self.k_proj(key).view(src_len, bsz, self.num_searches, self.head_dim)
        # All R retrievals side by side; one copy shared by the searches: (B, 1, Tk, R * d_v).
        v = self.v_proj(value).transpose(0, 1).unsqueeze(1)
        return k.permute(1, 2, 0, 3), v

    def retrieval_queries(self, query):
        """q_i = X W_rq,i, or with query_from_search q_i = (Q_i / sqrt(d_h)) W_rq from this
        forward's search queries; times 1/sqrt(d_s) for the dot scorers: (B, S, Tq, d_s)."""
        if self.query_from_search:
            q, self._search_queries = self._search_queries, None
            if q is None:
                raise RuntimeError("query_from_search: no search queries from project_query")
            rq = self.retrieval_query_proj(q * self.scaling)
        else:
            tgt_len, bsz, _ = query.shape
            rq = self.retrieval_query_proj(query).view(
                tgt_len, bsz, self.num_searches, self.retrieval_qk_dim
            )
            rq = rq.permute(1, 2, 0, 3)
        return rq if self.retrieval_query_scaling == 1.0 else rq * self.retrieval_query_scaling

    @property
    def gumbel_active(self):
        """Gumbel noise on the value-score logits: in training; at evaluation and generation too
        with gumbel_in_eval (the official module), else a plain softmax there."""
        return self.gumbel and (self.training or self.gumbel_in_eval)

    def search_logit_noise(self):
        """With gumbel_search, while gumbel_active: A_i = softmax((logits_i + G) / tau) on the
        search logits (after mask and position bias), G ~ Gumbel(0, 1) from
        ``sample_search_gumbel``; else None (plain softmax, any attention path)."""
        if not (self.gumbel_search and self.gumbel_active):
            return None

        def noisy(logits):
            noise = self.sample_search_gumbel(logits)
            return ((at_least_float32(logits) + noise) / self.gumbel_temperature).to(logits.dtype)

        return noisy

    def sample_search_gumbel(self, logits):
        """Gumbel noise for the search logits (B, S, Tq, Tk); tests replace it."""
        return self.sample_gumbel(logits)

    def sample_gumbel(self, logits):
        """Gumbel(0, 1) noise shaped like ``logits`` (B, S, Tq, R), in at least float32: -log(E),
        E ~ Exp(1), as F.gumbel_softmax draws it. Tests replace it to make the noise known."""
        dtype = logits.dtype if logits.dtype == torch.float64 else torch.float32
        noise = torch.empty(logits.shape, dtype=dtype, device=logits.device)
        return -noise.exponential_().log()

    def combine(self, attended, query):
        """sum_j c_ij O_ij per search, concatenated and projected: (Tq, B, embed_dim)."""
        bsz, searches, tgt_len, _ = attended.shape
        pairs = attended.view(bsz, searches, tgt_len, self.num_retrievals, self.value_dim)
        path = self.value_score_path()
        if path == "dot-mix":
            mixed, scores = self.mix_dot(pairs, query)
        else:
            if path == "override":
                scores = self.value_scores_override(pairs, query)
            else:
                scores = self.value_scores(pairs, query)
            mixed = torch.matmul(scores.unsqueeze(-2), pairs).squeeze(-2)  # (B, S, Tq, d_v)
        self._search_queries = None  # not kept past this forward (e.g. when scores are overridden)
        return self.project_mixed(mixed, scores)

    def value_score_path(self, weights=None, values=None):
        """The one place that chooses how the value scores c_ij and the mix sum_j c_ij O_ij are
        computed:

        - ``override``: the analysis hook ``value_scores_override`` gives c_ij;
        - ``weighted-mix``: dot scoring without Gumbel noise on the explicit path (``weights``
          (B, S, Tq, Tk) and ``values`` (B, 1, Tk, R*d_v) given), short keys (2 Tk <= d_v, e.g.
          IWSLT sentences with d_v = 128) and not a decoding step: scoring and mixing through the
          search weights (``_WeightedRetrievalMix``), the pairs O_ij never built. Its per-query
          tensors have R*Tk < R*d_v entries, at twice the (small) A.V arithmetic: 1.05x at T=30,
          d_v=128; 0.94x at T=32, d_v=64 (CPU, fwd+bwd of the module), hence the factor 2;
        - ``dot-mix``: dot scoring without Gumbel noise: ``mix_dot`` over the pairs
          (``_DotRetrievalMix``, one autograd node);
        - ``scores``: ``value_scores`` (the other scorers; softmax or Gumbel-softmax), then the
          mix."""
        if self.value_scores_override is not None:
            return "override"
        if not self.scorer.folds_key or self.gumbel_active:
            return "scores"
        if weights is not None and values.size(1) == 1:
            tgt_len, src_len = weights.shape[-2:]
            # tgt_len 1: a decoding step, the pairs are one query's, no traffic to save
            if 2 * src_len <= self.value_dim and tgt_len != 1:
                return "weighted-mix"
        return "dot-mix"

    def project_mixed(self, mixed, scores):
        """Mixed values (B, S, Tq, d_v) concatenated over the searches and projected: (Tq, B,
        embed_dim); the value scores (B, S, Tq, R) kept when ``keep_value_scores``."""
        bsz, searches, tgt_len, _ = mixed.shape
        if self.keep_value_scores:
            self.last_value_scores = scores.reshape(bsz, searches, tgt_len, -1).detach()
        out = mixed.permute(2, 0, 1, 3).reshape(tgt_len, bsz, searches * self.value_dim)
        return self.out_proj(out)

    def value_scores(self, pairs, query):
        """c_ij = softmax_j(l_ij), or softmax_j((l_ij + g_ij) / tau) with Gumbel noise g where
        gumbel_active (--retrieval-gumbel): (B, S, Tq, R) from O_ij (B, S, Tq, R, d_v). The logits
        l_ij of the scoring; the dot product without Gumbel noise takes the fused mix_dot
        instead."""
        logits = self.scorer.logits(self, pairs, query)
        if not self.gumbel_active:
            return softmax_fp32(logits)
        noisy = (at_least_float32(logits) + self.sample_gumbel(logits)) / self.gumbel_temperature
        return softmax_fp32(noisy).to(pairs.dtype)

    def folded_retrieval_query(self, query):
        """The retrieval key folded into the query, ``q_i . (O_ij W_rk + b) = O_ij . (q_i W_rk) +
        q_i . b``: ``q_i W_rk`` (B, S, Tq, d_v) and ``q_i . b`` (B, S, Tq) (None without a bias),
        so that the (..., R, d_s) keys are never built. The one place of the fold (dot scorer)."""
        rq = self.retrieval_queries(query)
        w, b = self.retrieval_key_proj.weight, self.retrieval_key_proj.bias
        return torch.matmul(rq, w), (torch.matmul(rq, b) if b is not None else None)

    def mix_dot(self, pairs, query):
        """Dot-product value scores c_ij = softmax_j(q_i . (O_ij W_rk + b)) and sum_j c_ij O_ij in
        one autograd node (fewer passes over the (B, S, Tq, R, d_v) pairs: forward reads them
        twice, backward reads them twice and writes their gradient in place). The retrieval key is
        folded into the query: q_i . (O_ij W_rk + b) = O_ij . (q_i W_rk) + q_i . b.
        Returns mixed (B, S, Tq, d_v) and c (B, S, Tq, R)."""
        folded, shift = self.folded_retrieval_query(query)  # shift: constant over j
        lead = pairs.shape[:3]
        n = lead.numel()
        mixed, scores = _DotRetrievalMix.apply(
            pairs.reshape(n, self.num_retrievals, self.value_dim),
            folded.reshape(n, self.value_dim),
            shift.reshape(n) if shift is not None else None,
        )
        return mixed.view(*lead, self.value_dim), scores.view(*lead, self.num_retrievals)

    def weigh_and_combine(self, weights, v, query):
        """Explicit path: on ``value_score_path``'s ``weighted-mix`` the pairs O_ij are never
        built (``_WeightedRetrievalMix``); otherwise (and with the analysis override) the pairs
        are built and ``combine`` runs."""
        if self.value_score_path(weights, v) != "weighted-mix":
            return super().weigh_and_combine(weights, v, query)
        bsz, searches, tgt_len, src_len = weights.shape
        folded, shift = self.folded_retrieval_query(query)
        rows = searches * tgt_len
        # (B, Tk, R * d_v) -> (B, Tk * R, d_v): row s * R + j is V_j[s]
        values = v.squeeze(1).reshape(bsz, src_len * self.num_retrievals, self.value_dim)
        mixed, scores = _WeightedRetrievalMix.apply(
            weights.reshape(bsz, rows, src_len),
            values,
            folded.reshape(bsz, rows, self.value_dim),
            shift.reshape(bsz, rows) if shift is not None else None,
            self.num_retrievals,
        )
        return self.project_mixed(mixed.view(bsz, searches, tgt_len, self.value_dim), scores)


class RetrievalScorer:
    """How one --retrieval-scoring computes the value-score logits l_ij (B, S, Tq, R) from the
    pairs O_ij (B, S, Tq, R, d_v) (the module docstring's equations), with parameters on the
    attention module. ``query_scaled``: q_i / sqrt(d_s) (the dot scorers); ``query_gain``: the
    Xavier gain of the retrieval query projection; ``folds_key``: the dot product whose key
    folds into the query (the fused mix paths); ``stores_query_scaling``: the module keeps in its
    state whether q_i is scaled (older mlp checkpoints were). Every scorer has ``build(module,
    mlp_hidden, bias)`` (its parameters, registered on the module), ``reset_parameters(module)``
    (the official initialisation) and ``logits(module, pairs, query)``."""

    query_scaled = False
    query_gain = 1.0
    folds_key = False
    stores_query_scaling = False


def build_learned_keys(module):
    module.retrieval_keys = nn.Parameter(
        torch.empty(module.num_retrievals, module.retrieval_qk_dim)
    )


def reset_learned_keys(module, gain):
    # The official keys are a (1, 1, 1, R, d_s) tensor, whose Xavier fans are both R d_s:
    # uniform with std gain / sqrt(R d_s), not the (R, d_s) matrix's sqrt(2 / (R + d_s)).
    bound = gain * math.sqrt(3 / module.retrieval_keys.numel())
    nn.init.uniform_(module.retrieval_keys, -bound, bound)


def build_score_network(module, inputs, mlp_hidden):
    """The score network on [O_ij ; q_i] (mlp) or [q_i ; key_j] (learned-key-mlp), as the
    official modules: one hidden ReLU layer of width ``mlp_hidden``, or linear (0)."""
    if mlp_hidden > 0:
        module.retrieval_scorer = nn.Sequential(
            nn.Linear(inputs, mlp_hidden), nn.ReLU(), nn.Linear(mlp_hidden, 1)
        )
    else:
        module.retrieval_scorer = nn.Linear(inputs, 1)


def reset_score_network(module):
    for m in module.retrieval_scorer.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight, gain=1.0)


def split_score_network(module):
    """The first layer of the score network and whether a hidden layer follows."""
    hidden_layer = isinstance(module.retrieval_scorer, nn.Sequential)
    return (module.retrieval_scorer[0] if hidden_layer else module.retrieval_scorer), hidden_layer


@RETRIEVAL_SCORERS.register("dot")
class DotScorer(RetrievalScorer):
    query_scaled = True
    query_gain = 1 / math.sqrt(2)
    folds_key = True

    def build(self, module, mlp_hidden, bias):
        module.retrieval_key_proj = nn.Linear(module.value_dim, module.retrieval_qk_dim, bias=bias)

    def reset_parameters(self, module):
        nn.init.xavier_uniform_(module.retrieval_key_proj.weight, gain=1 / math.sqrt(2))

    def logits(self, module, pairs, query):
        """l_ij = q_i . (O_ij W_rk + b) = O_ij . (q_i W_rk) + q_i . b: (B, S, Tq, R)."""
        folded, shift = module.folded_retrieval_query(query)
        logits = torch.matmul(pairs, folded.unsqueeze(-1)).squeeze(-1)
        return logits if shift is None else logits + shift.unsqueeze(-1)


@RETRIEVAL_SCORERS.register("mlp")
class MlpScorer(RetrievalScorer):
    stores_query_scaling = True

    def build(self, module, mlp_hidden, bias):
        build_score_network(module, module.retrieval_qk_dim + module.value_dim, mlp_hidden)

    def reset_parameters(self, module):
        reset_score_network(module)

    def logits(self, module, pairs, query):
        """l_ij = MLP([O_ij ; q_i]): (B, S, Tq, R). Linear (no hidden layer), q_i adds the same
        term to every j, which the softmax over j removes: only the hidden ReLU uses the query."""
        rq = module.retrieval_queries(query)
        # The first linear layer on [O_ij ; q_i], split so that q_i is projected once, not R times.
        first, hidden_layer = split_score_network(module)
        w_o, w_q = first.weight[:, : module.value_dim], first.weight[:, module.value_dim :]
        hidden = F.linear(pairs, w_o) + F.linear(rq, w_q, first.bias).unsqueeze(-2)
        if hidden_layer:
            hidden = module.retrieval_scorer[2](module.retrieval_scorer[1](hidden))
        return hidden.squeeze(-1)


@RETRIEVAL_SCORERS.register("learned-key")
class LearnedKeyScorer(RetrievalScorer):
    query_scaled = True
    query_gain = 1 / math.sqrt(2)

    def build(self, module, mlp_hidden, bias):
        build_learned_keys(module)

    def reset_parameters(self, module):
        reset_learned_keys(module, self.query_gain)

    def logits(self, module, pairs, query):
        """l_ij = q_i . key_j with R learned keys (independent of O_ij): (B, S, Tq, R)."""
        return torch.matmul(module.retrieval_queries(query), module.retrieval_keys.t())


@RETRIEVAL_SCORERS.register("learned-key-mlp")
class LearnedKeyMlpScorer(RetrievalScorer):
    def build(self, module, mlp_hidden, bias):
        build_learned_keys(module)
        build_score_network(module, 2 * module.retrieval_qk_dim, mlp_hidden)

    def reset_parameters(self, module):
        reset_learned_keys(module, self.query_gain)
        reset_score_network(module)

    def logits(self, module, pairs, query):
        """l_ij = MLP([q_i ; key_j]), query first (the official ``_func`` module): (B, S, Tq, R).
        The first layer split so that q_i and the keys are each projected once; linear (no hidden
        layer), l_ij = w_q . q_i + w_k . key_j + b, whose softmax over j is a constant mixture."""
        rq = module.retrieval_queries(query)
        first, hidden_layer = split_score_network(module)
        ds = module.retrieval_qk_dim
        w_q, w_k = first.weight[:, :ds], first.weight[:, ds:]
        keys = F.linear(module.retrieval_keys, w_k)
        hidden = F.linear(rq, w_q, first.bias).unsqueeze(-2) + keys
        if hidden_layer:
            hidden = module.retrieval_scorer[2](module.retrieval_scorer[1](hidden))
        return hidden.squeeze(-1)


RETRIEVAL_SCORERS.check_complete()


class _WeightedRetrievalMix(torch.autograd.Function):
    """Dot-scored retrieval mixing from the search weights, without the pairs O_j = A V_j.

    Per sentence, A (M, Tk) holds the M = S*Tq search rows, V (Tk*R, d_v) the values (row s*R+j is
    V_j[s]), f (M, d_v) the folded retrieval queries, s (M,) their shift:
      P = f V^T (M, Tk, R),  l_j = sum_s A[s] P[s, j] + s  (= O_j . f + s),  c = softmax_j(l),
      W = A (x) c (M, Tk, R),  out = W V  (= sum_j c_j O_j).
    Backward: g_W = g V^T, g_V = W^T g + g_P^T f, g_c = sum_s A g_W, g_l = c (g_c - c . g_c),
    g_A = sum_j (c_j g_W[., j] + g_l,j P[., j]), g_P = A (x) g_l, g_f = g_P V, g_s = sum_j g_l."""

    @staticmethod
    def forward(ctx, weights, values, folded, shift, retrievals):
        bsz, rows, src_len = weights.shape
        pair_dots = torch.bmm(folded, values.transpose(1, 2)).view(bsz, rows, src_len, retrievals)
        logits = torch.matmul(weights.unsqueeze(-2), pair_dots).squeeze(-2)  # (B, M, R)
        if shift is not None:
            logits = logits + shift.unsqueeze(-1)
        scores = softmax_fp32(logits)
        mixing = weights.unsqueeze(-1) * scores.unsqueeze(-2)  # (B, M, Tk, R)
        mixed = torch.bmm(mixing.view(bsz, rows, src_len * retrievals), values)
        ctx.save_for_backward(weights, values, folded, pair_dots, mixing, scores)
        ctx.has_shift = shift is not None
        ctx.mark_non_differentiable(scores)
        return mixed, scores

    @staticmethod
    def backward(ctx, grad_mixed, _grad_scores):
        weights, values, folded, pair_dots, mixing, scores = ctx.saved_tensors
        bsz, rows, src_len, retrievals = mixing.shape
        grad_mixed = grad_mixed.contiguous()
        grad_mixing = torch.bmm(grad_mixed, values.transpose(1, 2)).view(mixing.shape)
        grad_values = torch.bmm(mixing.view(bsz, rows, -1).transpose(1, 2), grad_mixed)
        grad_scores = torch.matmul(weights.unsqueeze(-2), grad_mixing).squeeze(-2)
        grad_logits = scores * (grad_scores - (scores * grad_scores).sum(-1, keepdim=True))
        grad_weights = torch.matmul(grad_mixing, scores.unsqueeze(-1)).squeeze(-1)
        grad_weights += torch.matmul(pair_dots, grad_logits.unsqueeze(-1)).squeeze(-1)
        grad_pair_dots = (weights.unsqueeze(-1) * grad_logits.unsqueeze(-2)).view(bsz, rows, -1)
        grad_folded = torch.bmm(grad_pair_dots, values)
        grad_values.baddbmm_(grad_pair_dots.transpose(1, 2), folded)
        grad_shift = grad_logits.sum(-1) if ctx.has_shift else None
        return grad_weights, grad_values, grad_folded, grad_shift, None


class _DotRetrievalMix(torch.autograd.Function):
    """c = softmax_j(O_j . f + s), out = sum_j c_j O_j, per row; O (N, R, d_v), f (N, d_v), s (N,).

    Backward: g_c = O g_out, g_l = c * (g_c - c . g_c), g_O = c g_out^T + g_l f^T (written in
    place), g_f = g_l^T O, g_s = sum_j g_l (zero up to rounding: softmax ignores a shift)."""

    @staticmethod
    def forward(ctx, pairs, folded, shift):
        logits = torch.bmm(pairs, folded.unsqueeze(-1)).squeeze(-1)  # (N, R)
        if shift is not None:
            logits = logits + shift.unsqueeze(-1)
        scores = softmax_fp32(logits)
        mixed = torch.bmm(scores.unsqueeze(1), pairs).squeeze(1)  # (N, d_v)
        ctx.save_for_backward(pairs, folded, scores)
        ctx.has_shift = shift is not None
        ctx.mark_non_differentiable(scores)
        return mixed, scores

    @staticmethod
    def backward(ctx, grad_mixed, _grad_scores):
        pairs, folded, scores = ctx.saved_tensors
        grad_mixed = grad_mixed.contiguous()
        grad_scores = torch.bmm(pairs, grad_mixed.unsqueeze(-1)).squeeze(-1)  # (N, R)
        grad_logits = scores * (grad_scores - (scores * grad_scores).sum(-1, keepdim=True))
        grad_pairs = torch.empty_like(pairs)  # c g^T + g_l f^T, written once, then updated
        torch.mul(scores.unsqueeze(-1), grad_mixed.unsqueeze(1), out=grad_pairs)
        grad_pairs.addcmul_(grad_logits.unsqueeze(-1), folded.unsqueeze(1))
        grad_folded = torch.bmm(grad_logits.unsqueeze(1), pairs).squeeze(1)
        grad_shift = grad_logits.sum(-1) if ctx.has_shift else None
        return grad_pairs, grad_folded, grad_shift
