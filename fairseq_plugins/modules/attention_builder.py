"""One place that turns the variant options into an attention module for a given role.

Multi-head attention without relative positions and at full width is fairseq's own
MultiheadAttention (so the baseline is exactly stock fairseq); everything else is one of our fused
modules, which share fairseq's call signature and incremental-state protocol.
"""

from fairseq.modules import MultiheadAttention

from .compositional_attention import CompositionalAttention
from .sdpa_multihead_attention import SDPAMultiheadAttention


def build_attention(
    options,
    role,
    embed_dim,
    num_heads,
    dropout,
    kdim=None,
    inner_dim=None,
    q_noise=0.0,
    qn_block_size=8,
):
    """role: encoder / decoder (self-attention), cross (decoder to encoder), graph (encoder parts)."""
    attention_type = options.attention_type_for(role)
    rel_pos = options.rel_pos_for(role)
    self_attention = role in ("encoder", "decoder")
    cross = role == "cross"
    rel_kwargs = dict(
        rel_pos=rel_pos,
        rel_pos_radius=options.rel_pos_radius,
        rel_pos_bias_per_head=options.rel_pos_bias_per_head,
    )
    if attention_type == "compositional":
        return CompositionalAttention(
            embed_dim,
            options.num_searches or num_heads,
            options.num_retrievals or num_heads,
            retrieval_qk_dim=options.retrieval_qk_dim,
            attn_dim=options.compositional_attn_dim or inner_dim,
            scoring=options.retrieval_scoring,
            mlp_hidden=options.retrieval_mlp_hidden,
            dropout=dropout,
            self_attention=self_attention,
            encoder_decoder_attention=cross,
            kdim=kdim,
            vdim=kdim,
            search_dim=inner_dim,
            **rel_kwargs,
        )
    if rel_pos == "none" and inner_dim in (None, embed_dim):
        return MultiheadAttention(
            embed_dim,
            num_heads,
            kdim=kdim,
            vdim=kdim,
            dropout=dropout,
            self_attention=self_attention,
            encoder_decoder_attention=cross,
            q_noise=q_noise,
            qn_block_size=qn_block_size,
        )
    return SDPAMultiheadAttention(
        embed_dim,
        num_heads,
        kdim=kdim,
        vdim=kdim,
        inner_dim=inner_dim,
        dropout=dropout,
        self_attention=self_attention,
        encoder_decoder_attention=cross,
        **rel_kwargs,
    )
