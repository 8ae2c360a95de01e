"""Compositional Attention (Mittal et al., ICLR 2022), exactly as METHOD.md section 1 states it.

S searches pick, per token, a soft mixture of R retrievals:
  A_i = softmax(Q_i K_i^T / sqrt(d_h) + mask)            searches, i = 1..S
  V_j = X' W_v,j                                          retrievals, j = 1..R
  O_ij = A_i V_j                                          every pair
  q_i = X W_rq,i / sqrt(d_s),  k_ij = O_ij W_rk           retrieval query / key
  c_ij = softmax_j(q_i . k_ij)                            value scores
  out = concat_i(sum_j c_ij O_ij) W_o

Fast path: the R value projections are one Linear(d, attn_dim), so ONE fused attention call per
forward gives every O_ij (values of all retrievals concatenated on features, shared by the searches).
The retrieval key is folded into the query, ``q_i . (O_ij W_rk + b) = O_ij . (q_i W_rk) + q_i . b``,
so the (..., R, d_s) key tensor is never built. No Python loop over searches or retrievals.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from .fused_attention import FusedAttention

SCORING_CHOICES = ("dot", "mlp")


def check_compositional_dims(embed_dim, num_searches, num_retrievals, attn_dim, search_dim=None):
    """Raise a ValueError naming the flag for an impossible setting."""
    if num_searches < 1:
        raise ValueError(f"--num-searches must be >= 1 (got {num_searches})")
    if num_retrievals < 1:
        raise ValueError(f"--num-retrievals must be >= 1 (got {num_retrievals})")
    search_dim = search_dim or embed_dim
    if search_dim % num_searches:
        raise ValueError(
            f"model dimension {search_dim} is not divisible by --num-searches {num_searches}"
        )
    if attn_dim % num_retrievals:
        raise ValueError(
            f"--compositional-attn-dim {attn_dim} is not divisible by --num-retrievals "
            f"{num_retrievals}"
        )


class CompositionalAttention(FusedAttention):
    def __init__(
        self,
        embed_dim,
        num_searches,
        num_retrievals,
        retrieval_qk_dim=32,
        attn_dim=None,
        scoring="dot",
        mlp_hidden=0,
        dropout=0.0,
        self_attention=False,
        encoder_decoder_attention=False,
        kdim=None,
        vdim=None,
        search_dim=None,
        bias=True,
        rel_pos="none",
        rel_pos_radius=16,
        rel_pos_bias_per_head=False,
    ):
        attn_dim = attn_dim or embed_dim
        search_dim = search_dim or embed_dim
        check_compositional_dims(embed_dim, num_searches, num_retrievals, attn_dim, search_dim)
        if retrieval_qk_dim < 1:
            raise ValueError(f"--retrieval-qk-dim must be >= 1 (got {retrieval_qk_dim})")
        if scoring not in SCORING_CHOICES:
            raise ValueError(f"--retrieval-scoring must be dot or mlp (got {scoring!r})")
        super().__init__(
            embed_dim,
            num_searches,
            search_dim // num_searches,
            dropout,
            self_attention,
            encoder_decoder_attention,
            rel_pos,
            rel_pos_radius,
            rel_pos_bias_per_head,
        )
        self.num_searches = num_searches
        self.num_retrievals = num_retrievals
        self.search_dim = search_dim
        self.attn_dim = attn_dim
        self.value_dim = attn_dim // num_retrievals
        self.retrieval_qk_dim = retrieval_qk_dim
        self.scoring = scoring
        self.kdim = kdim or embed_dim
        self.vdim = vdim or embed_dim

        self.q_proj = nn.Linear(embed_dim, search_dim, bias=bias)
        self.k_proj = nn.Linear(self.kdim, search_dim, bias=bias)
        self.v_proj = nn.Linear(self.vdim, attn_dim, bias=bias)
        self.retrieval_query_proj = nn.Linear(embed_dim, num_searches * retrieval_qk_dim, bias=bias)
        if scoring == "dot":
            self.retrieval_key_proj = nn.Linear(self.value_dim, retrieval_qk_dim, bias=bias)
        elif mlp_hidden > 0:
            self.retrieval_scorer = nn.Sequential(
                nn.Linear(self.value_dim + retrieval_qk_dim, mlp_hidden),
                nn.ReLU(),
                nn.Linear(mlp_hidden, 1),
            )
        else:
            self.retrieval_scorer = nn.Linear(self.value_dim + retrieval_qk_dim, 1)
        self.out_proj = nn.Linear(num_searches * self.value_dim, embed_dim, bias=bias)

        # Analysis hook: set keep_value_scores = True to keep the last value scores (B, S, T, R).
        self.keep_value_scores = False
        self.last_value_scores = None
        self.reset_parameters()

    def project_query(self, query):
        tgt_len, bsz, _ = query.shape
        q = self.q_proj(query).view(tgt_len, bsz, self.num_searches, self.head_dim)
        return q.permute(1, 2, 0, 3)

    def project_key_value(self, key, value):
        src_len, bsz, _ = key.shape
        k = self.k_proj(key).view(src_len, bsz, self.num_searches, self.head_dim)
        # All R retrievals side by side; one copy shared by the searches: (B, 1, Tk, R * d_v).
        v = self.v_proj(value).transpose(0, 1).unsqueeze(1)
        return k.permute(1, 2, 0, 3), v

    def retrieval_queries(self, query):
        """q_i = X W_rq,i / sqrt(d_s): (B, S, Tq, d_s)."""
        tgt_len, bsz, _ = query.shape
        rq = self.retrieval_query_proj(query).view(
            tgt_len, bsz, self.num_searches, self.retrieval_qk_dim
        )
        return rq.permute(1, 2, 0, 3) * self.retrieval_qk_dim**-0.5

    def value_scores(self, pairs, query):
        """c_ij: softmax over retrievals, (B, S, Tq, R), from O_ij (B, S, Tq, R, d_v)."""
        rq = self.retrieval_queries(query)
        if self.scoring == "dot":
            w, b = self.retrieval_key_proj.weight, self.retrieval_key_proj.bias  # (d_s, d_v)
            folded = torch.matmul(rq, w)  # q_i W_rk: (B, S, Tq, d_v)
            logits = torch.matmul(pairs, folded.unsqueeze(-1)).squeeze(-1)
            if b is not None:  # q_i . b is constant over j; kept so the bias gets its gradient
                logits = logits + torch.matmul(rq, b).unsqueeze(-1)
        else:
            # Linear layer on [O_ij ; q_i], split so that q_i is projected once, not R times.
            first = (
                self.retrieval_scorer[0]
                if isinstance(self.retrieval_scorer, nn.Sequential)
                else self.retrieval_scorer
            )
            w_o, w_q = first.weight[:, : self.value_dim], first.weight[:, self.value_dim :]
            hidden = F.linear(pairs, w_o) + F.linear(rq, w_q, first.bias).unsqueeze(-2)
            if isinstance(self.retrieval_scorer, nn.Sequential):
                hidden = self.retrieval_scorer[2](self.retrieval_scorer[1](hidden))
            logits = hidden.squeeze(-1)
        return F.softmax(logits.float(), dim=-1).type_as(pairs)

    def combine(self, attended, query):
        bsz, searches, tgt_len, _ = attended.shape
        pairs = attended.view(bsz, searches, tgt_len, self.num_retrievals, self.value_dim)
        if self.scoring == "dot" and (
            getattr(self.value_scores, "__func__", None) is CompositionalAttention.value_scores
        ):
            mixed, scores = self.mix_dot(pairs, query)
        else:  # mlp scoring, or value_scores overridden (a subclass or an instance hook)
            scores = self.value_scores(pairs, query)
            mixed = torch.matmul(scores.unsqueeze(-2), pairs).squeeze(-2)  # (B, S, Tq, d_v)
        if self.keep_value_scores:
            self.last_value_scores = scores.detach()
        out = mixed.permute(2, 0, 1, 3).reshape(tgt_len, bsz, searches * self.value_dim)
        return self.out_proj(out)

    def mix_dot(self, pairs, query):
        """value_scores (dot) and sum_j c_ij O_ij in one autograd node: same maths, fewer passes
        over the (B, S, Tq, R, d_v) pairs (forward reads them twice, backward reads them twice and
        writes their gradient in place). Returns mixed (B, S, Tq, d_v) and c (B, S, Tq, R)."""
        rq = self.retrieval_queries(query)
        w, b = self.retrieval_key_proj.weight, self.retrieval_key_proj.bias
        folded = torch.matmul(rq, w)  # q_i W_rk: (B, S, Tq, d_v)
        shift = torch.matmul(rq, b) if b is not None else None  # q_i . b, constant over j
        lead = pairs.shape[:3]
        n = lead.numel()
        mixed, scores = _DotRetrievalMix.apply(
            pairs.reshape(n, self.num_retrievals, self.value_dim),
            folded.reshape(n, self.value_dim),
            shift.reshape(n) if shift is not None else None,
        )
        return mixed.view(*lead, self.value_dim), scores.view(*lead, self.num_retrievals)


class _DotRetrievalMix(torch.autograd.Function):
    """c = softmax_j(O_j . f + s), out = sum_j c_j O_j, per row; O (N, R, d_v), f (N, d_v), s (N,).

    Backward: g_c = O g_out, g_l = c * (g_c - c . g_c), g_O = c g_out^T + g_l f^T (written in
    place), g_f = g_l^T O, g_s = sum_j g_l (zero up to rounding: softmax ignores a shift)."""

    @staticmethod
    def forward(ctx, pairs, folded, shift):
        logits = torch.bmm(pairs, folded.unsqueeze(-1)).squeeze(-1)  # (N, R)
        if shift is not None:
            logits = logits + shift.unsqueeze(-1)
        if logits.dtype in (torch.float32, torch.float64):
            scores = F.softmax(logits, dim=-1)
        else:
            scores = F.softmax(logits, dim=-1, dtype=torch.float32).to(pairs.dtype)
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
