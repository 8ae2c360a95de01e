"""The CPU band kernels of relative-position attention (rel-e, rel-b, rel-eb; docs/method.md §2.4):
autograd functions and the strided views they work on. No module state here: the attention paths
that call them are in ``attend.py``, the position tables in ``relative_positions.py``.

In self-attention the label ``k + clip(i - j, -k, k)`` depends on i - j only, so during training the
bias is added to the logits in place, diagonal by diagonal (``ShiftedBandBias``), and its gradient
is read back from the same diagonals: no (B, H, Tq, Tk) bias tensor, no gather and no scatter-add
over it. Softmax ignores a constant per row, so the far-past label (i - j >= k), which covers most
of a long row, is subtracted from every label and its region needs no work at all.

Long causal rows (``BandSplitAttention``): the band of k keys explicitly, the far past through
PyTorch's CPU flash kernel, merged by their log-sum-exp.

Every function takes the per-label scores ``s`` (``RelativePositionBias.label_scores(...,
reverse=True)``): labels in reverse order, m = 2k - label.
"""

import torch


class ShiftedBandBias(torch.autograd.Function):
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
        for rows, view, m in band_views(logits, offset, radius):
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
        for rows, view, m in band_views(grad, ctx.offset, radius):
            grad_scores[..., rows, m] = view
        if upper is not None:
            grad_scores[..., 2 * radius] = (grad * upper).sum(-1)
        grad_scores[..., 0] = -grad_scores.sum(-1)
        return grad, grad_scores.sum_to_size(ctx.score_shape), None, None, None


def band_views(x, offset, radius):
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


# -- long causal rows: the band explicitly, the far past through the flash kernel -------------

_flash_forward = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_flash_backward = getattr(
    torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None
)


def band_split_available(q, v):
    """Whether ``attend_band_split`` can run here: CPU, float32/float64, q and v of one width,
    and PyTorch's CPU flash kernel present."""
    return (
        _flash_forward is not None
        and _flash_backward is not None
        and q.device.type == "cpu"  # the flash kernels below are CPU ones (not CUDA, MPS, ...)
        and q.dtype in (torch.float32, torch.float64)
        and q.size(-1) == v.size(-1)
    )


def causal_band_mask(mask, radius):
    """The additive mask (..., T, k) on the band keys j = i-k+1 .. i (column c: j = i-k+1+c) of a
    (..., T, T) mask, -inf where j < 0."""
    band = mask.new_full(mask.shape[:-1] + (radius,), float("-inf"))
    for rows, view, m in band_views(mask, 0, radius):
        if isinstance(m, slice):
            band[..., rows, :] = view[..., :radius]
        elif m <= radius:
            band[..., rows, m - 1] = view
    return band


class BandSplitAttention(torch.autograd.Function):
    """softmax over the keys j <= i of (q k^T * scaling + bias) v, computed as two parts merged
    by their log-sum-exp (as flash attention merges its blocks):

    - the band j = i-k+1 .. i (k keys), where the relative bias varies: logits, weights and
      products of those keys only (block-wise GEMMs, ``_band_products`` / ``_band_apply``),
      (B, H, T, k) tensors;
    - the far past j <= i - k, where every key has the far-past label, a constant that the shift
      of ShiftedBandBias removes: plain causal attention of the queries k.. over the keys
      ..T-1-k through PyTorch's flash kernel, no mask tensor.

    Backward: given the merged output and log-sum-exp, the flash backward of the far part gives
    exactly its share of dq, dk, dv (dS = P (dP - rowsum(dout * out)) with the global P and row
    sums); the band's share and the bias gradient (dS on the band; minus its sum for the far-past
    label) come from the band products. No (B, H, T, T) tensor is written."""

    @staticmethod
    def forward(ctx, q, k, v, scores, band_mask, radius, scaling):
        # (B, H, T, d) contiguous: the flash kernel runs ~1.3x faster on these (and on their
        # slices along T) than on the head-split views of (T, B, H * d) projections.
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        tgt_len = q.size(2)
        rel = scores - scores[..., 0:1]
        band = _band_products(q, k, radius).mul_(scaling).add_(rel[..., 1 : radius + 1])
        band.add_(band_mask)
        lse = torch.logsumexp(band, -1)
        out = _band_apply(torch.exp(band - lse.unsqueeze(-1)), v)
        if tgt_len > radius:
            far_out, far_lse = _flash_forward(
                q[:, :, radius:], k[:, :, :-radius], v[:, :, :-radius], 0.0, True, scale=scaling
            )
            near_lse = lse[..., radius:]
            merged = torch.logaddexp(near_lse, far_lse)
            near = out[:, :, radius:]
            near.mul_(torch.exp(near_lse - merged).unsqueeze(-1))
            near.add_(far_out * torch.exp(far_lse - merged).unsqueeze(-1))
            lse[..., radius:] = merged
        ctx.save_for_backward(q, k, v, out, lse, band)
        ctx.radius, ctx.scaling, ctx.score_shape = radius, scaling, scores.shape
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse, band = ctx.saved_tensors
        radius, scaling = ctx.radius, ctx.scaling
        grad_out = grad_out.contiguous()
        weights = torch.exp(band - lse.unsqueeze(-1))  # A on the band (0 where j < 0)
        delta = (grad_out * out).sum(-1, keepdim=True)
        grad_band = _band_products(grad_out, v, radius).sub_(delta).mul_(weights)
        grad_q = _band_apply(grad_band, k).mul_(scaling)
        grad_k = _band_apply_transposed(grad_band, q).mul_(scaling)
        grad_v = _band_apply_transposed(weights, grad_out)
        if q.size(2) > radius:
            far_q, far_k, far_v = _flash_backward(
                grad_out[:, :, radius:],
                q[:, :, radius:],
                k[:, :, :-radius],
                v[:, :, :-radius],
                out[:, :, radius:],
                lse[..., radius:],
                0.0,
                True,
                scale=scaling,
            )
            grad_q[:, :, radius:] += far_q
            grad_k[:, :, :-radius] += far_k
            grad_v[:, :, :-radius] += far_v
        grad_scores = grad_band.new_zeros(grad_band.shape[:-1] + (2 * radius + 1,))
        grad_scores[..., 1 : radius + 1] = grad_band
        grad_scores[..., 0] = -grad_band.sum(-1)
        return grad_q, grad_k, grad_v, grad_scores.sum_to_size(ctx.score_shape), None, None, None


# Band of w keys j = i-w+1 .. i per query i, column c: j = i-w+1+c. Queries go in blocks of
# `block` rows; the block starting at query b reaches the keys b-w+1 .. b+block-1 (zero rows
# where j < 0 or j >= T): one small GEMM per block instead of a (T, T) product.
_BLOCK = 32


def _blocking(rows, width):
    block = max(_BLOCK, width)
    return -(-rows // block), block


def _key_blocks(y, width, blocks, block):
    """(..., blocks, block + w - 1, d): y's rows with w-1 zero rows in front, block by block
    (overlapping), contiguous."""
    lead, rows, dim = y.shape[:-2], y.size(-2), y.size(-1)
    reach = block + width - 1
    padded = y.new_zeros(lead + (blocks * block + width - 1, dim))
    rows = min(rows, blocks * block)
    padded[..., width - 1 : width - 1 + rows, :] = y[..., :rows, :]
    view = padded.as_strided(
        lead + (blocks, reach, dim), padded.stride()[:-2] + (block * dim, dim, 1)
    )
    return view.contiguous()


def _query_blocks(x, blocks, block):
    lead, rows, dim = x.shape[:-2], x.size(-2), x.size(-1)
    if rows == blocks * block:
        return x.reshape(lead + (blocks, block, dim))
    padded = x.new_zeros(lead + (blocks * block, dim))
    padded[..., :rows, :] = x
    return padded.view(lead + (blocks, block, dim))


def _diagonal_band(dense, width):
    """The band view (..., blocks, block, w) of dense (..., blocks, block, block + w - 1): row r,
    columns r .. r + w - 1."""
    reach = dense.size(-1)
    return dense.as_strided(dense.shape[:-1] + (width,), dense.stride()[:-2] + (reach + 1, 1))


def _band_products(x, y, width):
    """out[..., i, c] = x_i . y_{i-w+1+c} (0 where that row of y does not exist), for x and y
    (..., T, d)."""
    rows = x.size(-2)
    blocks, block = _blocking(rows, width)
    prod = torch.matmul(
        _query_blocks(x, blocks, block), _key_blocks(y, width, blocks, block).transpose(-1, -2)
    )
    band = _diagonal_band(prod, width)
    return band.reshape(x.shape[:-2] + (blocks * block, width))[..., :rows, :]


def _dense_blocks(a, blocks, block):
    """(..., blocks, block, block + w - 1) zeros with the band a (..., T, w) on its diagonals."""
    lead, rows, width = a.shape[:-2], a.size(-2), a.size(-1)
    dense = a.new_zeros(lead + (blocks, block, block + width - 1))
    if rows < blocks * block:
        a = torch.cat([a, a.new_zeros(lead + (blocks * block - rows, width))], -2)
    _diagonal_band(dense, width).copy_(a.reshape(lead + (blocks, block, width)))
    return dense


def _band_apply(a, y):
    """out_i = sum_c a[i, c] y_{i-w+1+c}, for a (..., T, w) and y (..., T, d)."""
    rows, width = a.size(-2), a.size(-1)
    blocks, block = _blocking(rows, width)
    out = torch.matmul(_dense_blocks(a, blocks, block), _key_blocks(y, width, blocks, block))
    return out.reshape(y.shape[:-2] + (blocks * block, y.size(-1)))[..., :rows, :]


def _band_apply_transposed(a, x):
    """out_j = sum over (i, c) with i-w+1+c = j of a[i, c] x_i, for a (..., T, w) and
    x (..., T, d): per block the transposed GEMM, then the overlapping key rows added up."""
    rows, width = a.size(-2), a.size(-1)
    lead, dim = x.shape[:-2], x.size(-1)
    blocks, block = _blocking(rows, width)
    part = torch.matmul(
        _dense_blocks(a, blocks, block).transpose(-1, -2), _query_blocks(x, blocks, block)
    )  # (..., blocks, block + w - 1, d): key rows b-w+1 .. b+block-1 of each block
    keys = x.new_zeros(lead + (blocks * block + width - 1, dim))
    keys[..., : blocks * block, :].view(lead + (blocks, block, dim)).add_(part[..., :block, :])
    if width > 1:
        tail = keys.as_strided(
            lead + (blocks, width - 1, dim), keys.stride()[:-2] + (block * dim, dim, 1), block * dim
        )
        tail.add_(part[..., block:, :])
    return keys[..., width - 1 : width - 1 + rows, :]
