"""The base of our attention modules: fairseq's call signature and incremental-state protocol,
the keys and values of the cache, the position labels, and attention weights on request.

The arithmetic (one fused ``F.scaled_dot_product_attention`` call with one additive float bias,
explicit matmuls, or the band-split path) is ``attend.py``'s. Subclasses define the projections
(``project_query``, ``project_key_value``) and how the attended values become the output
(``combine``). fairseq's own ``MultiheadAttention`` only takes a 2-D shared mask and cannot carry
a per-head float bias, hence this module.
"""

import math

import torch
import torch.nn as nn
from fairseq.incremental_decoding_utils import with_incremental_state
from fairseq.modules import MultiheadAttention
from fairseq.modules.fairseq_dropout import FairseqDropout
from fairseq.modules.quant_noise import quant_noise
from torch import Tensor

from . import attend as attention_paths
from .attend import Masks, Positions, additive_mask, apply_weights


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


@with_incremental_state
class BiasedAttention(nn.Module):
    """Base of SDPAMultiheadAttention and CompositionalAttention (T x B x C layout).

    ``relative_positions``: a position scheme (``position_schemes.py``: a bias from positions or
    a rotation of q and k) built for this attention's head width, or None.
    ``contextual_positions``: CoPE (``contextual_positions.py``), a term from the masked logits
    (it forces the explicit path), or None.
    ``q_noise``/``qn_block_size``: fairseq's quantization noise on the projections that
    ``self.projection`` builds, as fairseq's MultiheadAttention applies it. ``kdim``/``vdim``:
    the width of the keys' / values' input (default embed_dim). Subclasses take these arguments
    as ``**attention_args`` and hand them on.
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
        contextual_positions=None,
        q_noise=0.0,
        qn_block_size=8,
        kdim=None,
        vdim=None,
    ):
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim or embed_dim
        self.vdim = vdim or embed_dim
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.scaling = head_dim**-0.5
        self.self_attention = self_attention
        self.encoder_decoder_attention = encoder_decoder_attention
        self.dropout_module = FairseqDropout(dropout, module_name=self.__class__.__name__)
        self.beam_size = 1
        self.relative_positions = relative_positions
        self.contextual_positions = contextual_positions
        self.q_noise, self.qn_block_size = q_noise, qn_block_size
        # RealFormer (--realformer): a ResidualLogits shared with the same stream's attentions of
        # the other layers (see residual_attention.py); None: plain attention.
        self.residual_logits = None
        # Randomized positions (--random-positions-max-length): a SampledPositions shared with
        # the stack's other attentions (randomized_positions.py); None: positions 0 .. T-1.
        self.sampled_positions = None

    def projection(self, in_features, out_features, bias=True):
        """nn.Linear with fairseq's quantization noise (--quant-noise-pq) when asked for."""
        return quant_noise(
            nn.Linear(in_features, out_features, bias=bias), self.q_noise, self.qn_block_size
        )

    def build_input_projections(self, qk_width, value_width, bias=True):
        """q_proj (d -> qk_width), k_proj (kdim -> qk_width), v_proj (vdim -> value_width)."""
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
        k, v, key_padding_mask = self._keys_values(key, value, key_padding_mask, saved, static_kv)
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

        dropout_p = self.dropout_module.p if self.training else 0.0
        masks = Masks(mask, attn_mask, padded=key_padding_mask is not None)
        positions = Positions(self.relative_positions, labels, self.encoder_decoder_attention)
        attended, weights = attention_paths.attend(
            q,
            k,
            v,
            masks,
            positions,
            self.scaling,
            self.residual_logits,
            dropout_p,
            need_weights,
            noise=self.search_logit_noise(),
            contextual=self.contextual_positions,
        )
        if attended is not None:
            out = self.combine(attended, query)
        else:
            out = self.weigh_and_combine(self.dropout_module(weights), v, query)

        if not need_weights:
            weights = None  # as fairseq: weights only when asked (its scorers index them)
        if weights is not None:
            weights = weights.transpose(0, 1)  # (H, B, Tq, Tk), as fairseq returns them
            if not need_head_weights:
                weights = weights.mean(dim=0)
        return out, weights

    def _keys_values(self, key, value, key_padding_mask, saved, static_kv):
        """Keys, values and key padding mask of this forward: projected, and with incremental
        state (``saved``) appended to / taken from the cache, as fairseq's MultiheadAttention."""
        if saved is not None and static_kv and "prev_key" in saved:
            return saved["prev_key"], saved["prev_value"], key_padding_mask
        k, v = self.project_key_value(key, value)
        if saved is None:
            return k, v, key_padding_mask
        if "prev_key" in saved and not static_kv:
            k = torch.cat([saved["prev_key"], k], dim=2)
            v = torch.cat([saved["prev_value"], v], dim=2)
            key_padding_mask = MultiheadAttention._append_prev_key_padding_mask(
                key_padding_mask,
                saved.get("prev_key_padding_mask"),
                k.size(0),
                k.size(2),
                static_kv,
            )
        if static_kv:
            # Cached for every decoding step: contiguous once here, so that no step copies a
            # head-split view (compositional values are reshaped per step).
            k, v = k.contiguous(), v.contiguous()
        saved["prev_key"], saved["prev_value"] = k, v
        if not static_kv:
            saved["prev_key_padding_mask"] = key_padding_mask
        return k, v, key_padding_mask

    def search_logit_noise(self):
        """A function applied to the attention logits before the softmax (explicit path), or
        None: subclasses add Gumbel noise there (compositional attention's gumbel_search)."""
        return None

    def weigh_and_combine(self, weights, v, query):
        """Explicit path: ``combine(apply_weights(weights, v), query)``; a subclass may fuse the
        two (compositional attention with short keys)."""
        return self.combine(self.apply_weights(weights, v), query)

    apply_weights = staticmethod(apply_weights)  # weights @ values, shared values unexpanded

    def _relative_positions(self, saved, key_padding_mask, tgt_len, src_len, device):
        """(query positions, key positions) for the relative-position module: (Tq,), (Tk,) in
        self-attention ((B, Tq), (B, Tk) for FIRE with a key padding mask); (1, Tq) or (B, Tq)
        and (B or 1, Tk) in rel2 cross-attention; (B, Tq), (B, Tk) with randomized positions."""
        sampled = self.sampled_positions
        if sampled is not None and sampled.positions is not None:
            return sampled.query_key_positions(self.encoder_decoder_attention, tgt_len, src_len)
        if not self.encoder_decoder_attention:
            # Self-attention: queries are the last tgt_len of the src_len positions (incremental
            # decoding appends to the cache). Differences are shift-invariant, so left padding of
            # the source does not change them; a scheme that reads the query's own position
            # (FIRE) counts them per sentence from the first real token instead, (B, Tk).
            if key_padding_mask is not None and self.relative_positions.absolute_queries:
                leading_padding = key_padding_mask.bool().long().cumprod(dim=1).sum(dim=1)
                if leading_padding.any():  # else every sentence starts at 0: one (Tq, Tk) table
                    keys = torch.arange(src_len, device=device) - leading_padding.unsqueeze(1)
                    return keys[:, src_len - tgt_len :], keys
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
