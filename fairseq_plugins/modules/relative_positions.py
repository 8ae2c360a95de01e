"""Relative positions as an additive attention bias (rel-e, rel-b, rel-eb;
docs/method.md §2.1-2.4).

Label of query position i and key position j: ``k + clip(i - j, -k, k)`` with radius k.
rel-e adds ``q_i . E[label]`` (one table of 2k+1 vectors of the head dim, shared by the heads),
rel-b adds a learned scalar ``b[label]`` (shared by the heads, or one per head), and both terms are
divided by sqrt(d_h) like q.k. The bias is gathered from ``q E^T`` of shape (B, H, Tq, 2k+1): a
(Tq, Tk, d) tensor is never built.

In self-attention the label depends on i - j only: ``add_to_logits`` adds the bias in place along
the diagonals (up to a constant per row), with the CPU band kernels of ``band_kernels.py``; which
path an attention takes is decided in ``attend.py``.
"""

import torch
import torch.nn as nn

from fairseq_plugins.option_choices import REL_POS_MODES

from .band_kernels import ShiftedBandBias


def build_relative_positions(mode, radius, head_dim, num_heads, bias_per_head=False):
    """The RelativePositionBias of an attention with heads of ``head_dim``, or None for "none"."""
    if mode == "none":
        return None
    return RelativePositionBias(mode, radius, head_dim, num_heads, bias_per_head)


class RelativePositionBias(nn.Module):
    # The interface of the position schemes (position_schemes.py): a bias from labels, not a
    # rotation of q and k; labels clipped to the radius, so the diagonal band paths apply.
    rotates = False
    banded = True
    absolute_queries = False  # labels depend on i - j only

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
        if self.embeddings is None:
            table = self.bias.to(q.dtype) * scaling  # (2k+1, H or 1)
            # (B or 1, Tq, Tk, H or 1) -> (B or 1, H or 1, Tq, Tk)
            return table[labels.squeeze(1)].permute(0, 3, 1, 2)
        scores = self.label_scores(q, scaling)  # (B, H, Tq, 2k+1)
        index = labels.expand(bsz, heads, tgt_len, src_len)
        return torch.gather(scores, -1, index)

    def label_scores(self, q, scaling, reverse=False):
        """The scaled logits term of every label, (B, H, Tq, 2k+1), or (1, H or 1, 1, 2k+1) for
        rel-b alone: ``q E^T`` plus the bias table (added before any gather: same index).
        ``reverse``: labels in reverse order, i.e. indexed by k + clip(j - i, -k, k)."""
        table, embeddings = self.bias, self.embeddings
        if reverse:  # flip the small tables, not the scores
            table = table.flip(0) if table is not None else None
            embeddings = embeddings.flip(0) if embeddings is not None else None
        if table is not None:
            table = table.to(q.dtype).t() * scaling  # (H or 1, 2k+1)
        if embeddings is None:
            return table.unsqueeze(0).unsqueeze(2)
        scores = torch.matmul(q, embeddings.t().to(q.dtype) * scaling)  # (B, H, Tq, 2k+1)
        if table is not None:
            scores = scores + table.unsqueeze(1)  # (H or 1, 1, 2k+1) broadcast over B, Tq
        return scores

    def add_to_logits(self, logits, q, scaling, offset, future_masked=False):
        """Self-attention: logits (B, H, Tq, Tk) + the bias of labels ``k + clip(i + offset - j)``,
        in place, up to a constant per row (which softmax ignores). ``future_masked``: keys
        j >= i + offset + k are masked (causal), so their label needs no work."""
        return ShiftedBandBias.apply(
            logits, self.label_scores(q, scaling, reverse=True), offset, self.radius, future_masked
        )
