"""Multi-head attention on the fused path, for what fairseq's MultiheadAttention cannot do:
relative-position biases and an inner width different from the model width (Graph-Transformer
half-dimension). Parameter names and initialisation follow fairseq's MultiheadAttention, so the two
are interchangeable where both apply (tests check they coincide).
"""

import torch.nn as nn

from .fused_attention import FusedAttention


class SDPAMultiheadAttention(FusedAttention):
    def __init__(
        self,
        embed_dim,
        num_heads,
        kdim=None,
        vdim=None,
        inner_dim=None,
        dropout=0.0,
        bias=True,
        self_attention=False,
        encoder_decoder_attention=False,
        rel_pos="none",
        rel_pos_radius=16,
        rel_pos_bias_per_head=False,
    ):
        inner_dim = inner_dim or embed_dim
        if num_heads < 1 or inner_dim % num_heads:
            raise ValueError(
                f"attention width {inner_dim} must be divisible by the number of heads "
                f"(--encoder/decoder-attention-heads = {num_heads})"
            )
        super().__init__(
            embed_dim,
            num_heads,
            inner_dim // num_heads,
            dropout,
            self_attention,
            encoder_decoder_attention,
            rel_pos,
            rel_pos_radius,
            rel_pos_bias_per_head,
        )
        self.inner_dim = inner_dim
        self.kdim = kdim or embed_dim
        self.vdim = vdim or embed_dim
        self.q_proj = nn.Linear(embed_dim, inner_dim, bias=bias)
        self.k_proj = nn.Linear(self.kdim, inner_dim, bias=bias)
        self.v_proj = nn.Linear(self.vdim, inner_dim, bias=bias)
        self.out_proj = nn.Linear(inner_dim, embed_dim, bias=bias)
        self.reset_parameters()

    def _split_heads(self, x):
        length, bsz, _ = x.shape
        return x.view(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def project_query(self, query):
        return self._split_heads(self.q_proj(query))

    def project_key_value(self, key, value):
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def combine(self, attended, query):
        bsz, _, tgt_len, _ = attended.shape
        out = attended.permute(2, 0, 1, 3).reshape(tgt_len, bsz, self.inner_dim)
        return self.out_proj(out)
