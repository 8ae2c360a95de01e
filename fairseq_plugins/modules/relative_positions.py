"""Relative positions as an additive attention bias (rel-e, rel-b, rel-eb; METHOD.md section 2).

Label of query position i and key position j: ``k + clip(i - j, -k, k)`` with radius k.
rel-e adds ``q_i . E[label]`` (one table of 2k+1 vectors of the head dim, shared by the heads),
rel-b adds a learned scalar ``b[label]`` (shared by the heads, or one per head), and both terms are
divided by sqrt(d_h) like q.k. The bias is gathered from ``q E^T`` of shape (B, H, Tq, 2k+1): a
(Tq, Tk, d) tensor is never built.
"""

import torch
import torch.nn as nn

REL_POS_MODES = ("none", "e", "b", "eb")  # the choices of --rel-pos


def build_relative_positions(mode, radius, head_dim, num_heads, bias_per_head=False):
    """The RelativePositionBias of an attention with heads of ``head_dim``, or None for "none"."""
    if mode == "none":
        return None
    return RelativePositionBias(mode, radius, head_dim, num_heads, bias_per_head)


class RelativePositionBias(nn.Module):
    def __init__(self, mode, radius, head_dim, num_heads, bias_per_head=False):
        super().__init__()
        if mode not in REL_POS_MODES or mode == "none":
            raise ValueError(f"--rel-pos must be one of e, b, eb (got {mode!r})")
        if radius < 1:
            raise ValueError(f"--rel-pos-radius must be >= 1 (got {radius})")
        self.mode = mode
        self.radius = radius
        num_labels = 2 * radius + 1
        if "e" in mode:
            self.embeddings = nn.Parameter(torch.empty(num_labels, head_dim))
            nn.init.normal_(self.embeddings, std=head_dim**-0.5)
        else:
            self.register_parameter("embeddings", None)
        if "b" in mode:
            self.bias = nn.Parameter(torch.zeros(num_labels, num_heads if bias_per_head else 1))
        else:
            self.register_parameter("bias", None)

    def labels(self, query_positions, key_positions):
        """Label tensor (..., Tq, Tk) from positions (..., Tq) and (..., Tk)."""
        diff = query_positions.unsqueeze(-1) - key_positions.unsqueeze(-2)
        return diff.clamp(-self.radius, self.radius) + self.radius

    def forward(self, q, labels, scaling):
        """Additive logits bias (B or 1, H or 1, Tq, Tk) for unscaled queries q (B, H, Tq, d_h).

        ``labels`` is (Tq, Tk) (same for the whole batch) or (B, Tq, Tk). The scaling is applied to
        the small per-label tensors, and with rel-eb the bias table is added to ``q E^T`` before the
        gather (both are indexed by the same label), so only one (B, H, Tq, Tk) tensor is written.
        """
        bsz, heads, tgt_len, _ = q.shape
        if labels.dim() == 2:
            labels = labels.unsqueeze(0)
        labels = labels.unsqueeze(1)  # (B or 1, 1, Tq, Tk)
        src_len = labels.size(-1)
        table = None
        if self.bias is not None:
            table = self.bias.to(q.dtype).t() * scaling  # (H or 1, 2k+1)
        if self.embeddings is None:
            # (B or 1, Tq, Tk, H or 1) -> (B or 1, H or 1, Tq, Tk)
            return table.t()[labels.squeeze(1)].permute(0, 3, 1, 2)
        scores = torch.matmul(q, self.embeddings.t().to(q.dtype) * scaling)  # (B, H, Tq, 2k+1)
        if table is not None:
            scores = scores + table.unsqueeze(1)  # (H or 1, 1, 2k+1) broadcast over B, Tq
        index = labels.expand(bsz, heads, tgt_len, src_len)
        return torch.gather(scores, -1, index)
