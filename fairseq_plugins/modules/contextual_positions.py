"""CoPE, contextual position encoding (Golovneva et al. 2024): positions that count only the
tokens the query's gates select, so that a head can attend to "the i-th sentence".

For query i and key j <= i (causal attention):

    g_it = sigmoid(s_it)                        s: the attention's scaled, masked logits
    p_ij = sum_{t=j}^{i} g_it                   (clamped to max_pos - 1)
    e(p) = (1 - w) e[floor p] + w e[ceil p]     w = p - floor p
    s_ij += q_i . e(p_ij)

``e`` is a table of ``max_pos`` vectors of the head width, shared by the heads of the attention
and started at zero (both as in the paper's code, Appendix B). Nothing here depends on what a
"head" is: compositional attention hands its searches' logits and queries (width d/S) in the
place of heads (docs/method.md §5.7), multi-head attention its heads'. The interpolation is done
on the scalars ``q_i . e[k]`` (one (Tq, max_pos) product per head instead of a (Tq, Tk, d)
tensor).
The added term is not divided by sqrt(d_h); gradients flow through the gates into q and k.

CoPE needs the logits themselves, so it is not a bias from positions (``position_schemes.py``):
``forward(q, logits, mask)`` returns the term to add to the logits, which the attention computes
on its explicit path. The gates follow the paper and x-transformers: computed on the logits after
masking, so that masked keys (the future, padding) have gate 0 and count nothing; keys j > i get
p = 0 and stay masked. The paper defines causal self-attention only: without a causal mask the
sum would run to the end of the sequence.
"""

import torch
import torch.nn as nn

from .numerics import at_least_float32


class ContextualPositions(nn.Module):
    def __init__(self, head_dim, max_pos):
        super().__init__()
        if max_pos < 1:
            raise ValueError(f"--cope-max-pos must be >= 1 (got {max_pos})")
        if head_dim < 1:
            raise ValueError(f"CoPE needs a head width >= 1 (got {head_dim})")
        self.max_pos = max_pos
        self.embeddings = nn.Parameter(torch.zeros(max_pos, head_dim))

    def positions(self, logits, mask=None):
        """p_ij (..., Tq, Tk) from the scaled logits and the additive mask (broadcastable to the
        logits, as ``attend.additive_mask`` gives: 0 or a large negative value) or a bool mask
        (True: masked), or None (logits already masked, or nothing to mask). In at least
        float32: a half precision sum of many gates would not count on past a few hundred."""
        logits = at_least_float32(logits)
        if mask is not None and mask.dtype == torch.bool:
            gates = torch.sigmoid(logits).masked_fill(mask, 0.0)
        else:
            gates = torch.sigmoid(logits if mask is None else logits + mask)
        # suffix sums over the keys: p_ij = sum_{t >= j} g_it; the mask ends the sum at t = i
        return gates.flip(-1).cumsum(-1).flip(-1).clamp(max=self.max_pos - 1)

    def forward(self, q, logits, mask=None):
        """The term to add to the logits, (B, H, Tq, Tk) in q's dtype. ``q`` (B, H, Tq, d_h): the
        unscaled queries; ``logits`` (B, H, Tq, Tk): q k^T * scaling of those queries. H: the
        heads, or a compositional attention's searches (d_h: the search width)."""
        if q.size(-1) != self.embeddings.size(-1):
            raise ValueError(
                f"CoPE was built for heads of width {self.embeddings.size(-1)}, got queries of "
                f"width {q.size(-1)} (--decoder-attention-heads or --num-searches, "
                "--decoder-embed-dim)"
            )
        if logits.shape[:-1] != q.shape[:-1]:
            raise ValueError(
                f"CoPE: logits {tuple(logits.shape)} do not match queries {tuple(q.shape)}"
            )
        positions = self.positions(logits, mask)
        per_position = torch.matmul(q, self.embeddings.to(q.dtype).t())  # (B, H, Tq, max_pos)
        floor = positions.floor()
        weight = (positions - floor).to(q.dtype)
        lower = per_position.gather(-1, floor.long())
        upper = per_position.gather(-1, positions.ceil().long())
        return upper * weight + lower * (1 - weight)
