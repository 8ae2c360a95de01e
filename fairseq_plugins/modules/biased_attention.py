"""The base of our attention modules: fairseq's call signature and incremental-state protocol,
scaled dot-product attention with one additive float bias (masks plus relative positions), and
attention weights on request.

The attention itself runs as one fused ``F.scaled_dot_product_attention`` call or, where that
kernel is unavailable and PyTorch's fallback would only add copies, as explicit matmuls
(``_use_fused_call``). Subclasses define the projections (``project_query``, ``project_key_value``)
and how the attended values become the output (``combine``). fairseq's own ``MultiheadAttention``
only takes a 2-D shared mask and cannot carry a per-head float bias, hence this module.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from fairseq.modules import MultiheadAttention
from fairseq.modules.fairseq_dropout import FairseqDropout
from fairseq.modules.quant_noise import quant_noise
from torch import Tensor

from .numerics import mask_value, softmax_fp32
from .relative_positions import attend_band_split, band_split_available, causal_band_mask


class AttentionShapeError(ValueError):
    """A width that does not split into its heads / searches / retrievals. The attention builder,
    which knows the role, turns it into an error that names the exact flags; the message here
    names the generic ones (for modules built directly in Python)."""

    FLAGS = {
        "heads": "--encoder/decoder-attention-heads",
        "searches": "--num-searches",
        "retrievals": "--num-retrievals",
    }
    WIDTH_FLAGS = {"retrievals": " (--compositional-attn-dim)"}

    def __init__(self, parts_name, parts, width, width_name):
        self.parts_name, self.parts, self.width = parts_name, parts, width
        flag = self.FLAGS[parts_name]
        if parts < 1:
            message = f"{flag} must be >= 1 (got {parts})"
        else:
            width_flag = self.WIDTH_FLAGS.get(parts_name, "")
            message = f"{flag} {parts} does not divide the {width_name} {width}{width_flag}"
        super().__init__(message)


def split_width(width, parts, parts_name, width_name="attention width"):
    """``width // parts``, or AttentionShapeError when ``parts`` < 1 or does not divide ``width``.
    parts_name: heads, searches or retrievals."""
    if parts < 1 or width % parts:
        raise AttentionShapeError(parts_name, parts, width, width_name)
    return width // parts


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


@with_incremental_state
class BiasedAttention(nn.Module):
    """Base of SDPAMultiheadAttention and CompositionalAttention (T x B x C layout).

    ``relative_positions``: a RelativePositionBias built for this attention's head width, or None.
    ``q_noise``/``qn_block_size``: fairseq's quantization noise on the projections that
    ``self.projection`` builds, as fairseq's MultiheadAttention applies it.
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        head_dim,
        dropout=0.0,
        self_attention=False,
        encoder_decoder_attention=False,
        relative_positions=None,
        q_noise=0.0,
        qn_block_size=8,
    ):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.scaling = head_dim**-0.5
        self.self_attention = self_attention
        self.encoder_decoder_attention = encoder_decoder_attention
        self.dropout_module = FairseqDropout(dropout, module_name=self.__class__.__name__)
        self.beam_size = 1
        self.relative_positions = relative_positions
        self.q_noise, self.qn_block_size = q_noise, qn_block_size
        # RealFormer (--realformer): a ResidualLogits shared with the same stream's attentions of
        # the other layers (see residual_attention.py); None: plain attention.
        self.residual_logits = None

    def projection(self, in_features, out_features, bias=True):
        """nn.Linear with fairseq's quantization noise (--quant-noise-pq) when asked for."""
        return quant_noise(
            nn.Linear(in_features, out_features, bias=bias), self.q_noise, self.qn_block_size
        )

    def build_input_projections(self, kdim, vdim, qk_width, value_width, bias=True):
        """q_proj (d -> qk_width), k_proj (kdim -> qk_width), v_proj (vdim -> value_width)."""
        self.kdim = kdim or self.embed_dim
        self.vdim = vdim or self.embed_dim
        self.q_proj = self.projection(self.embed_dim, qk_width, bias=bias)
        self.k_proj = self.projection(self.kdim, qk_width, bias=bias)
        self.v_proj = self.projection(self.vdim, value_width, bias=bias)

    def reset_parameters(self):
        """fairseq's MultiheadAttention initialisation of q/k/v/out (subclasses name them so)."""
        gain = 1 / math.sqrt(2) if self.kdim == self.vdim == self.embed_dim else 1.0
        for proj in (self.k_proj, self.v_proj, self.q_proj):
            nn.init.xavier_uniform_(proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if self.out_proj.bias is not None:
            nn.init.constant_(self.out_proj.bias, 0.0)

    # -- to be defined by subclasses -------------------------------------------------------------
    def project_query(self, query):
        """(Tq, B, C) -> unscaled queries (B, H, Tq, d_h)."""
        raise NotImplementedError

    def project_key_value(self, key, value):
        """(Tk, B, C) -> keys (B, H, Tk, d_h), values (B, H or 1, Tk, d_v*)."""
        raise NotImplementedError

    def combine(self, attended, query):
        """Attended values (B, H, Tq, d_v*) -> output (Tq, B, embed_dim)."""
        raise NotImplementedError

    # -- fairseq's incremental-state protocol ----------------------------------------------------
    def _get_input_buffer(self, incremental_state) -> dict[str, Tensor | None]:
        result = self.get_incremental_state(incremental_state, "attn_state")
        return result if result is not None else {}

    def _set_input_buffer(self, incremental_state, buffer: dict[str, Tensor | None]):
        return self.set_incremental_state(incremental_state, "attn_state", buffer)

    # Same semantics as fairseq's MultiheadAttention (incl. its shortcut for static encoder keys:
    # beams of one sentence share them, so a reorder within the batch is a no-op).
    reorder_incremental_state = MultiheadAttention.reorder_incremental_state

    def set_beam_size(self, beam_size):
        self.beam_size = beam_size

    # -- forward ---------------------------------------------------------------------------------
    def forward(
        self,
        query: Tensor,
        key: Tensor | None,
        value: Tensor | None,
        key_padding_mask: Tensor | None = None,
        incremental_state: dict[str, dict[str, Tensor | None]] | None = None,
        need_weights: bool = True,
        static_kv: bool = False,
        attn_mask: Tensor | None = None,
        before_softmax: bool = False,
        need_head_weights: bool = False,
    ):
        if before_softmax:
            raise ValueError(f"{self.__class__.__name__} does not support before_softmax")
        if key is None:
            key = value = query
        need_weights = need_weights or need_head_weights
        tgt_len, bsz, _ = query.shape

        saved = self._get_input_buffer(incremental_state) if incremental_state is not None else None
        if saved is not None and static_kv and "prev_key" in saved:
            k, v = saved["prev_key"], saved["prev_value"]
        else:
            k, v = self.project_key_value(key, value)
            if saved is not None:
                if "prev_key" in saved and not static_kv:
                    k = torch.cat([saved["prev_key"], k], dim=2)
                    v = torch.cat([saved["prev_value"], v], dim=2)
                    key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
                        key_padding_mask,
                        saved.get("prev_key_padding_mask"),
                        bsz,
                        k.size(2),
                        static_kv,
                    )
                if static_kv:
                    # Cached for every decoding step: contiguous once here, so that no step
                    # copies a head-split view (compositional values are reshaped per step).
                    k, v = k.contiguous(), v.contiguous()
                saved["prev_key"], saved["prev_value"] = k, v
                if not static_kv:
                    saved["prev_key_padding_mask"] = key_padding_mask
        src_len = k.size(2)

        q = self.project_query(query)
        mask = additive_mask(attn_mask, key_padding_mask, bsz, tgt_len, src_len, q.dtype)
        labels = None
        if self.relative_positions is not None:
            positions = self._relative_positions(
                saved, key_padding_mask, tgt_len, src_len, q.device
            )
            if self.relative_positions.rotates:  # RoPE: the cache keeps keys unrotated
                q, k = self.relative_positions.rotate_query_key(q, k, *positions)
            else:
                labels = self.relative_positions.labels(*positions)
        if saved is not None:
            incremental_state = self._set_input_buffer(incremental_state, saved)

        band_mask = None
        carry = self.residual_logits
        if labels is not None and not need_weights and key_padding_mask is None and carry is None:
            band_mask = self._causal_band_mask(q, v, labels, attn_mask, mask)
        if band_mask is not None:
            # CPU training of a long causal self-attention with relative positions: the band of
            # k keys explicitly, the far past through the flash kernel (see attend_band_split).
            attended = attend_band_split(self.relative_positions, q, k, v, band_mask, self.scaling)
            weights = None
            out = self.combine(attended, query)
        elif need_weights or carry is not None or not self._use_fused_call(q, v):
            # Explicit path: fairseq wants the attention weights (alignment, cross-attention at
            # generation time; SDPA does not return them), RealFormer carries the logits, or the
            # fused kernel is unavailable and PyTorch's fallback would do the same work with
            # extra copies (see _use_fused_call).
            logits = self._masked_logits(q, k, mask)
            # The relative-position bias after the mask (it leaves masked logits masked).
            if labels is not None:
                logits = self._add_relative_bias(logits, q, labels, attn_mask, src_len)
            if carry is not None:
                logits = carry.add(logits)
            weights = softmax_fp32(logits)
            out = self.weigh_and_combine(self.dropout_module(weights), v, query)
        else:
            if v.size(1) != self.num_heads:  # values shared by all heads (compositional)
                v = v.expand(bsz, self.num_heads, src_len, v.size(-1))
            bias = mask
            if labels is not None:
                rel = self.relative_positions(q, labels, self.scaling)
                bias = rel if bias is None else bias + rel
            if bias is not None:
                bias = bias.expand(bsz, self.num_heads, tgt_len, src_len)
            attended = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=bias,
                dropout_p=self.dropout_module.p if self.training else 0.0,
                scale=self.scaling,
            )
            weights = None
            out = self.combine(attended, query)

        if not need_weights:
            weights = None  # as fairseq: weights only when asked (its scorers index them)
        if weights is not None:
            weights = weights.transpose(0, 1)  # (H, B, Tq, Tk), as fairseq returns them
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return out, weights

    # Shared values larger than this (elements of the (B, H, Tk, d_v) expansion) go through the
    # explicit path on CPU; smaller problems keep the single fused call, where the copy is noise.
    shared_value_explicit_numel = 1 << 16

    def _use_fused_call(self, q, v):
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
        if torch.is_grad_enabled() and self._relative_bias_needs_grad(q):
            return False
        if v.size(1) != self.num_heads:
            return q.size(0) * self.num_heads * v.size(2) * v.size(3) < (
                self.shared_value_explicit_numel
            )
        return True

    def _masked_logits(self, q, k, mask):
        """q k^T * scaling + mask (in place), (B, H, Tq, Tk); whichever of q and the logits is
        smaller is scaled. (A broadcast mask as the addend of a baddbmm was slower on CPU.)"""
        if k.size(2) > q.size(-1):
            logits = torch.matmul(q * self.scaling, k.transpose(-1, -2))
        else:
            logits = torch.matmul(q, k.transpose(-1, -2)).mul_(self.scaling)
        return logits if mask is None else logits.add_(mask)

    def _relative_bias_needs_grad(self, q):
        rel = self.relative_positions
        if rel is None:
            return False
        if rel.embeddings is not None and (q.requires_grad or rel.embeddings.requires_grad):
            return True
        return rel.bias is not None and rel.bias.requires_grad

    def _causal_band_mask(self, q, v, labels, attn_mask, mask):
        """The additive mask on the band keys (1, 1, T, k) when ``attend_band_split`` applies,
        else None: CPU training (the bias needs a gradient) of a self-attention over its own T
        positions, T >= 4k, no attention dropout, one value per head, and an ``attn_mask`` that
        masks every key j > i and none j <= i - k (fairseq's causal mask)."""
        rel = self.relative_positions
        tgt_len, src_len = q.size(2), labels.size(-1)
        if (
            not self._long_self_attention_rows(labels, src_len)
            or tgt_len != src_len
            or attn_mask is None
            or not torch.is_grad_enabled()
            or not self._relative_bias_needs_grad(q)
            or (self.training and self.dropout_module.p > 0)
            or v.size(1) != self.num_heads
            or not band_split_available(q, v)
            or not self._masks_from(attn_mask, tgt_len, src_len, 1)
        ):
            return None
        free = torch.ones(tgt_len, src_len, dtype=torch.bool, device=q.device).tril_(-rel.radius)
        if bool(attn_mask.masked_fill(~free, 0).ne(0).any()):
            return None
        return causal_band_mask(mask, rel.radius)

    def _long_self_attention_rows(self, labels, src_len):
        """Self-attention labels (one (Tq, Tk) table, depending on i - j only) on rows of at least
        4 radii: the band paths apply. Short rows are mostly band edges, handled diagonal by
        diagonal, so they gather instead; rel2 cross-attention labels are per sentence."""
        return (
            not self.encoder_decoder_attention
            and self.relative_positions.banded
            and labels.dim() == 2
            and src_len >= 4 * self.relative_positions.radius
        )

    def _masks_from(self, attn_mask, tgt_len, src_len, start):
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

    def _add_relative_bias(self, logits, q, labels, attn_mask, src_len):
        """logits + relative-position bias (explicit path). Self-attention labels depend on i - j
        only: added in place along the band (RelativePositionBias.add_to_logits) when rows are
        long next to the radius; rel2 cross-attention labels (per sentence) and short rows are
        gathered."""
        rel = self.relative_positions
        if not self._long_self_attention_rows(labels, src_len):
            return logits.add_(rel(q, labels, self.scaling))
        tgt_len = q.size(2)
        offset = (
            src_len - tgt_len
        )  # queries are the last tgt_len positions (see _relative_positions)
        future_masked = self._masks_from(attn_mask, tgt_len, src_len, offset + rel.radius)
        return rel.add_to_logits(logits, q, self.scaling, offset, future_masked)

    def weigh_and_combine(self, weights, v, query):
        """Explicit path: ``combine(apply_weights(weights, v), query)``; a subclass may fuse the
        two (compositional attention with short keys)."""
        return self.combine(self.apply_weights(weights, v), query)

    def apply_weights(self, weights, v):
        """weights (B, H, Tq, Tk) @ values (B, H or 1, Tk, d_v*) without expanding shared values."""
        bsz, heads, tgt_len, src_len = weights.shape
        if v.size(1) == 1 and heads > 1:
            out = torch.bmm(weights.reshape(bsz, heads * tgt_len, src_len), v.squeeze(1))
            return out.view(bsz, heads, tgt_len, v.size(-1))
        return torch.matmul(weights, v)

    def _relative_positions(self, saved, key_padding_mask, tgt_len, src_len, device):
        """(query positions, key positions) for the relative-position module: (Tq,), (Tk,) in
        self-attention; (1, Tq) or (B, Tq) and (B or 1, Tk) in rel2 cross-attention."""
        if not self.encoder_decoder_attention:
            # Self-attention: queries are the last tgt_len of the src_len positions (incremental
            # decoding appends to the cache). Differences are shift-invariant, so left padding of
            # the source does not change them.
            keys = torch.arange(src_len, device=device)
            return keys[src_len - tgt_len :], keys
        # rel2: decoder step i against encoder token j, both counted from the first real token,
        # so left- and right-padded sources give the same labels.
        if key_padding_mask is not None:
            keys = (~key_padding_mask.bool()).long().cumsum(dim=1) - 1  # (B, Tk)
        else:
            keys = torch.arange(src_len, device=device).unsqueeze(0)
        queries = torch.arange(tgt_len, device=device).unsqueeze(0)  # (1, Tq)
        if saved is not None:
            step = saved.get("decoder_step")
            if step is None:
                step = torch.zeros(keys.size(0), dtype=torch.long, device=device)
            queries = queries + step.unsqueeze(1)
            saved["decoder_step"] = step + tgt_len
        return queries, keys
