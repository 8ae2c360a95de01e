"""Direction-sensitive geometric attention of the Neural Data Router (Csordás, Irie and
Schmidhuber, ICLR 2022), ``--encoder-attention-type geometric`` (docs/method.md §6.1).

Geometric attention, one head, queries i and keys j of one sequence (self-attention):

    s_ij = scale * (q_i + c) . k_j + [j > i] scale_pos * f_i + [j < i] scale_pos * b_i + s_0
    P_ij = sigmoid(s_ij),   P_ii = 0 (and 0 at masked keys)
    A_ij = P_ij * prod_{k in S_ij} (1 - P_ik)
    S_ij = {k != i : |k - i| < |j - i|}  u  {k : |k - i| = |j - i|, k > j}
    out_i = sum_j A_ij v_j / max(sum_j A_ij, 1e-12)        (normalised, the paper's default)

so position i takes the closest key that matches, nearer ones first; at equal distance the key on
the right comes first (the official CUDA kernel's window sum: the paper's text leaves ties open).
``q = x W_q``, ``k = x W_k``, ``v = x W_v`` (no biases), ``c`` a learned per-head content bias
(zeros), ``[b_i, f_i] = x_i W_d + b_d`` the direction-sensitive term (two scalars per head: how
much position i prefers keys behind / in front), ``scale`` (1/sqrt(d_h)), ``scale_pos`` (1) and
``s_0`` (0) learned scalars; dropout on the keys (attention dropout), output ``Linear(H d_h, d)``
without bias. Computed in log space: ``log A_ij = log sigmoid(s_ij) + sum_{k in S_ij}
log sigmoid(-s_ik)``, the window sum as a difference of two entries of the row's cumulative sum.
Plain autograd (no custom backward).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .position_schemes import build_position_scheme


def geometric_log_window(log_not, offset=0):
    """sum_{k in S_ij} log_not[..., i, k] for every (i, j), (..., Tq, Tk); query row r is position
    i = r + offset among the keys. Entries j = i are 0 (unused: P_ii = 0)."""
    tgt_len, src_len = log_not.shape[-2:]
    device = log_not.device
    i = torch.arange(tgt_len, device=device).unsqueeze(1) + offset
    j = torch.arange(src_len, device=device).unsqueeze(0)
    left = j < i
    # S_ij is the key range [first, last]: left keys j: [j+1, min(2i-j, Tk-1)] (the right key at
    # the same distance included); right keys: [max(2i-j+1, 0), j-1].
    first = torch.where(left, j + 1, (2 * i - j + 1).clamp(min=0))
    last = torch.where(left, (2 * i - j).clamp(max=src_len - 1), j - 1)
    last = torch.where(j == i, first - 1, last)  # empty
    cumulative = F.pad(log_not.cumsum(-1), (1, 0))  # cumulative[..., m] = sum_{k < m}
    shape = log_not.shape[:-2] + (tgt_len, src_len)
    upper = cumulative.gather(-1, (last + 1).expand(shape))
    lower = cumulative.gather(-1, first.expand(shape))
    return upper - lower


def geometric_attention_weights(logits, normalize=True, offset=0):
    """A_ij from logits s_ij (..., Tq, Tk) in which the diagonal and masked keys are -inf."""
    window = geometric_log_window(F.logsigmoid(-logits), offset)
    weights = torch.exp(F.logsigmoid(logits) + window)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True).clamp(min=1e-12)
    return weights


def _xavier_uniform(weight, fan_in, fan_out, gain=1.0):
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        return weight.uniform_(-bound, bound)


class GeometricAttention(nn.Module):
    """Direction-sensitive geometric self-attention with fairseq's attention call signature
    (T x B x C). Encoder self-attention only (no incremental state). ``relative_positions``: a
    scheme of ``--rel-pos`` (position_schemes.build_position_scheme) added to the logits before
    the sigmoid (biases), or rotating q and k (RoPE); None: the paper's setting."""

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        normalize=True,
        relative_positions=None,
        self_attention=True,
        encoder_decoder_attention=False,
        kdim=None,
        vdim=None,
        **_unused,
    ):
        super().__init__()
        if encoder_decoder_attention or not self_attention or kdim not in (None, embed_dim):
            raise ValueError(
                "geometric attention is a self-attention: use it for --encoder-attention-type only"
            )
        if num_heads < 1 or embed_dim % num_heads:
            raise ValueError(
                f"--encoder-embed-dim {embed_dim} is not divisible by "
                f"--encoder-attention-heads {num_heads}"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5  # for the q-dependent relative terms (rel-e)
        self.normalize = normalize
        self.relative_positions = relative_positions
        self.key_dropout = nn.Dropout(dropout)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.direction_proj = nn.Linear(embed_dim, 2 * num_heads)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.content_bias = nn.Parameter(torch.zeros(num_heads, self.head_dim))
        self.logit_scale = nn.Parameter(torch.tensor([self.head_dim**-0.5]))
        self.direction_scale = nn.Parameter(torch.ones(1))
        self.logit_bias = nn.Parameter(torch.zeros(1))
        self.reset_parameters()

    @classmethod
    def from_plan(cls, plan, spec):
        """Built for one attention (an AttentionSpec) from its AttentionPlan: the position scheme
        and ``plan.settings``, a GeometricPlan."""
        if spec.role != "encoder":
            raise ValueError(
                "geometric attention is a self-attention of the encoder: use it with "
                "--encoder-attention-type geometric only"
            )
        head_dim = (spec.inner_dim or spec.embed_dim) // max(spec.num_heads, 1)
        relative_positions = build_position_scheme(plan.positions, head_dim, spec.num_heads)
        return cls(
            spec.embed_dim,
            spec.num_heads,
            dropout=spec.dropout,
            normalize=plan.settings.normalize,
            relative_positions=relative_positions,
            self_attention=spec.self_attention,
            encoder_decoder_attention=spec.encoder_decoder_attention,
            kdim=spec.kdim,
        )

    def reset_parameters(self):
        d, dh = self.embed_dim, self.head_dim
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            _xavier_uniform(proj.weight, d, dh)
        _xavier_uniform(self.direction_proj.weight, d, 2)
        _xavier_uniform(self.out_proj.weight, dh, d)

    def _heads(self, x):
        length, bsz, _ = x.shape
        return x.view(length, bsz, self.num_heads, -1).permute(1, 2, 0, 3)  # (B, H, T, ...)

    def forward(
        self,
        query,
        key=None,
        value=None,
        key_padding_mask=None,
        incremental_state=None,
        need_weights=False,
        static_kv=False,
        attn_mask=None,
        before_softmax=False,
        need_head_weights=False,
    ):
        if incremental_state is not None or before_softmax:
            raise ValueError("geometric attention has no incremental decoding / before_softmax")
        length, bsz, _ = query.shape
        q, k, v = (self._heads(p(query)) for p in (self.q_proj, self.k_proj, self.v_proj))
        rel = self.relative_positions
        positions = torch.arange(length, device=query.device)
        if rel is not None and rel.rotates:
            q, k = rel.rotate_query_key(q, k, positions, positions)
        content = q + self.content_bias.unsqueeze(1).to(q.dtype)
        logits = torch.matmul(content, self.key_dropout(k).transpose(-1, -2)) * self.logit_scale
        if rel is not None and not rel.rotates:
            logits = logits + rel(q, rel.labels(positions, positions), self.scaling)
        direction = self._heads(self.direction_proj(query)) * self.direction_scale  # (B,H,T,2)
        behind, ahead = direction[..., 0:1], direction[..., 1:2]
        j_after_i = positions.unsqueeze(0) > positions.unsqueeze(1)  # (T, T): key j after query i
        j_before_i = positions.unsqueeze(0) < positions.unsqueeze(1)
        logits = logits + torch.where(j_after_i, ahead, torch.where(j_before_i, behind, 0.0))
        logits = logits + self.logit_bias
        blocked = torch.eye(length, dtype=torch.bool, device=query.device)
        if attn_mask is not None:
            blocked = blocked | (attn_mask if attn_mask.dtype == torch.bool else attn_mask < -1e4)
        blocked = blocked.view(1, 1, length, length)
        if key_padding_mask is not None:
            blocked = blocked | key_padding_mask.to(torch.bool).view(bsz, 1, 1, length)
        weights = geometric_attention_weights(
            logits.masked_fill(blocked, float("-inf")), self.normalize
        )
        attended = torch.matmul(weights, v)  # (B, H, T, d_h)
        out = self.out_proj(attended.permute(2, 0, 1, 3).reshape(length, bsz, self.embed_dim))
        if not (need_weights or need_head_weights):
            return out, None
        weights = weights.transpose(0, 1)
        return out, weights if need_head_weights else weights.mean(0)
