"""Relative positions as an additive attention bias (rel-e, rel-b, rel-eb; METHOD.md section 2).

Label of query position i and key position j: ``k + clip(i - j, -k, k)`` with radius k.
rel-e adds ``q_i . E[label]`` (one table of 2k+1 vectors of the head dim, shared by the heads),
rel-b adds a learned scalar ``b[label]`` (shared by the heads, or one per head), and both terms are
divided by sqrt(d_h) like q.k. The bias is gathered from ``q E^T`` of shape (B, H, Tq, 2k+1): a
(Tq, Tk, d) tensor is never built.

In self-attention the label depends on i - j only, so during training the bias is added to the
logits in place, diagonal by diagonal (``add_to_logits``), and its gradient is read back from the
same diagonals: no (B, H, Tq, Tk) bias tensor, no gather and no scatter-add over it. Softmax ignores
a constant per row, so the far-past label (i - j >= k), which covers most of a long row, is
subtracted from every label and its region needs no work at all.
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
        return _ShiftedBandBias.apply(
            logits, self.label_scores(q, scaling, reverse=True), offset, self.radius, future_masked
        )


class _ShiftedBandBias(torch.autograd.Function):
    """logits[i, j] += s[i, m(i, j)] - s[i, 0] in place, where s holds the labels in reverse order,
    m(i, j) = k + clip(j - i - o, -k, k) (= 2k - label).

    Relative to the far-past label (m = 0: i + o - j >= k, most of a long row) the bias is zero
    there, so only the band |j - i - o| < k (m = 1 .. 2k-1) and the far-future triangle (m = 2k,
    j - i - o >= k: skipped when masked) are touched. The band of the rows where it lies inside the
    row is one strided view (row stride Tk + 1: 2k-1 contiguous logits per row, column c has
    m = c + 1); the few rows at the edges go diagonal by diagonal. Backward: the band gradient is
    read from the same views, m = 2k's is a masked row sum, m = 0's is minus the sum of the others
    (its shift of the whole row)."""

    @staticmethod
    def forward(ctx, logits, scores, offset, radius, future_masked):
        tgt_len, src_len = logits.shape[-2:]
        rel = scores - scores[..., 0:1]
        for rows, view, m in _band_views(logits, offset, radius):
            view.add_(_rows(rel, rows, m))
        upper = None
        if not future_masked and offset + radius < src_len:
            upper = _future_region(tgt_len, src_len, offset + radius, logits)
            logits.addcmul_(rel[..., 2 * radius :], upper)
        ctx.mark_dirty(logits)
        ctx.save_for_backward(upper)
        ctx.offset, ctx.radius, ctx.score_shape = offset, radius, scores.shape
        return logits

    @staticmethod
    def backward(ctx, grad):
        (upper,) = ctx.saved_tensors
        radius = ctx.radius
        grad = grad.contiguous()
        bsz, heads, tgt_len, _ = grad.shape
        grad_scores = grad.new_zeros(bsz, heads, tgt_len, 2 * radius + 1)
        for rows, view, m in _band_views(grad, ctx.offset, radius):
            grad_scores[..., rows, m] = view
        if upper is not None:
            grad_scores[..., 2 * radius] = (grad * upper).sum(-1)
        grad_scores[..., 0] = -grad_scores.sum(-1)
        return grad, grad_scores.sum_to_size(ctx.score_shape), None, None, None


def _band_views(x, offset, radius):
    """Views of the band |j - i - offset| < k of a contiguous x (..., Tq, Tk), as (query rows,
    view, m): for the rows whose band lies inside the row, one (..., rows, 2k-1) strided view whose
    column c has m = k + j - i - offset = c + 1 (m = slice(1, 2k)); for the other rows, one
    diagonal per m (an int)."""
    tgt_len, src_len = x.shape[-2:]
    width = 2 * radius - 1
    first = max(0, radius - 1 - offset)  # band start i + offset - k + 1 >= 0
    last = min(tgt_len, src_len - radius - offset + 1)  # band end i + offset + k - 1 < Tk
    edges = [(0, tgt_len)]
    if last > first and width <= src_len + 1:
        start = first + offset - radius + 1
        size = x.shape[:-2] + (last - first, width)
        stride = x.stride()[:-2] + (src_len + 1, 1)
        view = x.as_strided(size, stride, x.storage_offset() + first * src_len + start)
        yield slice(first, last), view, slice(1, 2 * radius)
        edges = [(0, first), (last, tgt_len)]
    for lo, hi in edges:
        block = x[..., lo:hi, :]
        for m in range(1, 2 * radius):
            shift = offset + lo + m - radius  # key j = query i + shift
            begin = max(0, -shift)
            count = min(hi - lo - begin, src_len - begin - shift)
            if count > 0:
                rows = slice(lo + begin, lo + begin + count)
                yield rows, torch.diagonal(block, shift, -2, -1), m


def _rows(rel, rows, m):
    """rel[..., rows, m] shaped for a band view; a broadcast query dim (rel-b alone) stays
    broadcast."""
    if rel.size(-2) > 1:
        return rel[..., rows, m]
    return rel[..., 0:1, m] if isinstance(m, slice) else rel[..., 0, m : m + 1]


def _future_region(tgt_len, src_len, start, like):
    """(Tq, Tk) ones where key j >= query i + start, zeros elsewhere."""
    return torch.ones(tgt_len, src_len, dtype=like.dtype, device=like.device).triu_(start)
