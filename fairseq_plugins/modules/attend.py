"""The attention arithmetic of our attention modules, apart from the modules (in the spirit of
x-transformers' ``Attend``): given queries, keys and values already split into heads, fairseq's
masks and a position scheme's labels, ``attend`` picks one of three paths and runs it:

- **fused**: one ``F.scaled_dot_product_attention`` call with one additive float bias (masks plus
  relative positions);
- **explicit**: logits ``q k^T * scaling + mask`` (+ relative bias, + CoPE, + RealFormer carry),
  softmax,
  and the weights returned for the module to apply (``apply_weights``; compositional attention may
  fuse applying and mixing);
- **band-split**: CPU training of a long causal self-attention with clipped relative positions,
  the band of k keys explicitly and the far past through the flash kernel
  (``band_kernels.BandSplitAttention``).

The modules (``biased_attention.py`` and its subclasses) keep the projections, the incremental
state and the position labels. Nothing here has parameters or state.
"""

from typing import NamedTuple

import torch
import torch.nn.functional as F

from .band_kernels import BandSplitAttention, band_split_available, causal_band_mask
from .numerics import mask_value, softmax_fp32

# Shared values larger than this (elements of the (B, H, Tk, d_v) expansion) go through the
# explicit path on CPU; smaller problems keep the single fused call, where the copy is noise.
SHARED_VALUE_EXPLICIT_NUMEL = 1 << 16


def additive_mask(attn_mask, key_padding_mask, bsz, tgt_len, src_len, dtype):
    """Combine fairseq's masks into one float bias broadcastable to (B, H, Tq, Tk), or None."""
    neg = mask_value(dtype)
    mask = None
    if attn_mask is not None:
        if attn_mask.dim() != 2:
            raise ValueError("attn_mask must be 2-D (tgt_len, src_len), shared by the batch")
        if attn_mask.dtype == torch.bool:
            mask = torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device)
            mask = mask.masked_fill(attn_mask, neg)
        else:
            mask = attn_mask.to(dtype).clamp(min=neg)
        mask = mask.view(1, 1, tgt_len, src_len)
    if key_padding_mask is not None:
        pad = torch.zeros((bsz, 1, 1, src_len), dtype=dtype, device=key_padding_mask.device)
        pad = pad.masked_fill(key_padding_mask.to(torch.bool).view(bsz, 1, 1, src_len), neg)
        mask = pad if mask is None else mask + pad
    return mask


class Masks(NamedTuple):
    """fairseq's masks of one forward. ``additive``: ``additive_mask`` of both (or None);
    ``attn_mask``: the 2-D mask it came from (which keys it masks tells the band paths whether
    they apply); ``padded``: a key padding mask is part of ``additive``."""

    additive: torch.Tensor | None
    attn_mask: torch.Tensor | None
    padded: bool


class Positions(NamedTuple):
    """The position bias of one forward: ``scheme`` (the attention's position module, or None),
    its ``labels`` (None: no bias to add, e.g. RoPE, which rotated q and k already), and whether
    it is an encoder-decoder attention (``cross``: rel2 labels are per sentence)."""

    scheme: object
    labels: torch.Tensor | None
    cross: bool


def attend(
    q,
    k,
    v,
    masks,
    positions,
    scaling,
    carry=None,
    dropout_p=0.0,
    need_weights=False,
    noise=None,
    contextual=None,
):
    """Attention of q (B, H, Tq, d_h) over k (B, H, Tk, d_h), v (B, H or 1, Tk, d_v*) under
    ``masks`` (Masks) and ``positions`` (Positions). ``carry``: RealFormer's ResidualLogits, or
    None. ``dropout_p``: attention dropout of this forward (0 at evaluation), applied by the
    fused call only; the explicit path returns the weights before dropout. ``noise``: None, or a
    function of the final logits (e.g. Gumbel noise over a temperature) applied before the
    softmax; it forces the explicit path. ``contextual``: CoPE (ContextualPositions) or None; its
    term, computed from the masked logits (masked keys have gate 0), is added before the RealFormer
    carry (so the carried logits contain it); it forces the explicit path.

    Returns ``(attended, weights)``, exactly one of them a tensor: the attended values
    (B, H, Tq, d_v*) on the fused and band-split paths, the softmax weights (B, H, Tq, Tk) on the
    explicit path (taken when ``need_weights``, with a carry, or where the fused kernel would only
    add copies: ``use_fused_call``)."""
    mask, attn_mask = masks.additive, masks.attn_mask
    rel, labels, cross = positions
    band_mask = None
    explicit = need_weights or carry is not None or noise is not None or contextual is not None
    if labels is not None and not explicit and not masks.padded:
        band_mask = band_split_mask(q, v, rel, labels, attn_mask, mask, cross, dropout_p)
    if band_mask is not None:
        return attend_band_split(rel, q, k, v, band_mask, scaling), None
    if explicit or not use_fused_call(q, v, rel):
        logits = masked_logits(q, k, mask, scaling)
        # The relative-position bias after the mask (it leaves masked logits masked).
        if labels is not None:
            logits = add_relative_bias(logits, q, rel, labels, attn_mask, scaling, cross)
        if contextual is not None:  # out of place: the gates read the logits it adds to
            logits = logits + contextual(q, logits)
        if carry is not None:
            logits = carry.add(logits)
        if noise is not None:
            logits = noise(logits)
        return None, softmax_fp32(logits)
    return fused_attention(q, k, v, mask, rel, labels, scaling, dropout_p), None


def fused_attention(q, k, v, mask, rel, labels, scaling, dropout_p):
    """One ``F.scaled_dot_product_attention`` call; the relative bias added to the mask."""
    bsz, heads, tgt_len, _ = q.shape
    src_len = k.size(2)
    if v.size(1) != heads:  # values shared by all heads (compositional)
        v = v.expand(bsz, heads, src_len, v.size(-1))
    bias = mask
    if labels is not None:
        bias_of_labels = rel(q, labels, scaling)
        bias = bias_of_labels if bias is None else bias + bias_of_labels
    if bias is not None:
        bias = bias.expand(bsz, heads, tgt_len, src_len)
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=bias, dropout_p=dropout_p, scale=scaling
    )


def use_fused_call(q, v, rel):
    """One ``F.scaled_dot_product_attention`` call, or the explicit path (CPU only).

    On CPU the fused (flash) kernel needs q/k/v of one head width and a bias that needs no
    gradient; otherwise PyTorch runs its math fallback, which scales copies of q and k, copies
    the expanded shared values (B, S, Tk, R*d_v) for compositional attention, and adds NaN
    guards to the softmax. The explicit path does the same maths without those copies: shared
    values are one (S*Tq, Tk) x (Tk, R*d_v) GEMM per sentence, and a self-attention relative
    bias is added in place along its diagonals. CUDA always takes the fused call.
    """
    if q.is_cuda:
        return True
    if torch.is_grad_enabled() and relative_bias_needs_grad(rel, q):
        return False
    heads = q.size(1)
    if v.size(1) != heads:
        return q.size(0) * heads * v.size(2) * v.size(3) < SHARED_VALUE_EXPLICIT_NUMEL
    return True


def masked_logits(q, k, mask, scaling):
    """q k^T * scaling + mask (in place), (B, H, Tq, Tk); whichever of q and the logits is
    smaller is scaled. (A broadcast mask as the addend of a baddbmm was slower on CPU.)"""
    if k.size(2) > q.size(-1):
        logits = torch.matmul(q * scaling, k.transpose(-1, -2))
    else:
        logits = torch.matmul(q, k.transpose(-1, -2)).mul_(scaling)
    return logits if mask is None else logits.add_(mask)


def apply_weights(weights, v):
    """weights (B, H, Tq, Tk) @ values (B, H or 1, Tk, d_v*) without expanding shared values."""
    bsz, heads, tgt_len, src_len = weights.shape
    if v.size(1) == 1 and heads > 1:
        out = torch.bmm(weights.reshape(bsz, heads * tgt_len, src_len), v.squeeze(1))
        return out.view(bsz, heads, tgt_len, v.size(-1))
    return torch.matmul(weights, v)


def relative_bias_needs_grad(rel, q):
    """Whether the position bias needs a gradient: through q (rel-e's ``q E^T``) or to any of
    the scheme's parameters (tables, FIRE's MLP)."""
    if rel is None:
        return False
    if rel.embeddings is not None and q.requires_grad:
        return True
    return any(p.requires_grad for p in rel.parameters())


def long_self_attention_rows(rel, labels, src_len, cross):
    """Self-attention labels (one (Tq, Tk) table, depending on i - j only) on rows of at least
    4 radii: the band paths apply. Short rows are mostly band edges, handled diagonal by
    diagonal, so they gather instead; rel2 cross-attention labels are per sentence."""
    return not cross and rel.banded and labels.dim() == 2 and src_len >= 4 * rel.radius


def masks_from(attn_mask, tgt_len, src_len, start):
    """Whether ``attn_mask`` masks every key j >= i + start."""
    if start >= src_len:
        return True
    if attn_mask is None:
        return False
    region = torch.ones(tgt_len, src_len, dtype=torch.bool, device=attn_mask.device)
    outside = ~region.triu_(start)
    if attn_mask.dtype == torch.bool:
        return bool(attn_mask.masked_fill(outside, True).all())
    blocked = attn_mask.masked_fill(outside, float("-inf"))
    return bool((blocked <= mask_value(attn_mask.dtype) / 2).all())


def add_relative_bias(logits, q, rel, labels, attn_mask, scaling, cross):
    """logits + relative-position bias (explicit path). Self-attention labels depend on i - j
    only: added in place along the band (RelativePositionBias.add_to_logits) when rows are
    long next to the radius; rel2 cross-attention labels (per sentence) and short rows are
    gathered."""
    src_len = logits.size(-1)
    if not long_self_attention_rows(rel, labels, src_len, cross):
        return logits.add_(rel(q, labels, scaling))
    tgt_len = q.size(2)
    # queries are the last tgt_len positions (see BiasedAttention._relative_positions)
    offset = src_len - tgt_len
    future_masked = masks_from(attn_mask, tgt_len, src_len, offset + rel.radius)
    return rel.add_to_logits(logits, q, scaling, offset, future_masked)


def band_split_mask(q, v, rel, labels, attn_mask, mask, cross, dropout_p):
    """The additive mask on the band keys (1, 1, T, k) when ``attend_band_split`` applies,
    else None: CPU training (the bias needs a gradient) of a self-attention over its own T
    positions, T >= 4k, no attention dropout, one value per head, and an ``attn_mask`` that
    masks every key j > i and none j <= i - k (fairseq's causal mask)."""
    if not rel.banded:  # no band (and labels need not be a table: FIRE's DistinctPairs)
        return None
    tgt_len, src_len = q.size(2), labels.size(-1)
    if (
        not long_self_attention_rows(rel, labels, src_len, cross)
        or tgt_len != src_len
        or attn_mask is None
        or not torch.is_grad_enabled()
        or not relative_bias_needs_grad(rel, q)
        or dropout_p > 0
        or v.size(1) != q.size(1)
        or not band_split_available(q, v)
        or not masks_from(attn_mask, tgt_len, src_len, 1)
    ):
        return None
    free = torch.ones(tgt_len, src_len, dtype=torch.bool, device=q.device).tril_(-rel.radius)
    if bool(attn_mask.masked_fill(~free, 0).ne(0).any()):
        return None
    return causal_band_mask(mask, rel.radius)


def attend_band_split(rel, q, k, v, band_mask, scaling):
    """Causal self-attention output (B, H, T, d) with ``rel``'s bias, Tq = Tk = T, keys j > i
    masked. ``band_mask`` (B or 1, H or 1, T, k): ``causal_band_mask`` of the additive mask; the
    caller has checked that nothing is masked in the far past (j <= i - k)."""
    scores = rel.label_scores(q, scaling, reverse=True)
    return BandSplitAttention.apply(q, k, v, scores, band_mask, rel.radius, scaling)
