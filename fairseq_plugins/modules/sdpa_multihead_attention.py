"""The ``multihead`` attention type: fairseq's own MultiheadAttention wherever it applies (so a
baseline is exactly stock fairseq), else our multi-head attention on the biased-attention base, for
what fairseq's cannot do: relative-position biases and an inner width different from the model
width (Graph-Transformer half-dimension). Parameter names and initialisation follow fairseq's
MultiheadAttention, so the two are interchangeable where both apply (tests check they coincide).
"""

from fairseq.modules import MultiheadAttention

from .biased_attention import BiasedAttention, split_width
from .position_schemes import build_position_scheme, is_contextual


def build_multihead_attention(plan, spec):
    """The multi-head attention for one attention (an AttentionSpec) from its AttentionPlan:
    fairseq's own where no position scheme, inner width or RealFormer carry asks for ours. CoPE
    (--decoder-rel-pos cope) goes to ``contextual_positions``, every other scheme to
    ``relative_positions``."""
    width = spec.inner_dim or spec.embed_dim
    scheme = build_position_scheme(
        plan.positions, split_width(width, spec.num_heads, "heads"), spec.num_heads
    )
    if scheme is None and width == spec.embed_dim and not plan.residual_logits:
        return MultiheadAttention(spec.embed_dim, spec.num_heads, **spec.module_kwargs())
    contextual = is_contextual(scheme)
    return SDPAMultiheadAttention(
        spec.embed_dim,
        spec.num_heads,
        inner_dim=width,
        relative_positions=None if contextual else scheme,
        contextual_positions=scheme if contextual else None,
        **spec.module_kwargs(),
    )


class SDPAMultiheadAttention(BiasedAttention):
    def __init__(self, embed_dim, num_heads, *, inner_dim=None, bias=True, **attention_args):
        """``attention_args``: BiasedAttention's (dropout, self/cross attention, kdim, vdim,
        relative positions, quantization noise)."""
        inner_dim = inner_dim or embed_dim
        head_dim = split_width(inner_dim, num_heads, "heads")
        super().__init__(embed_dim, num_heads, head_dim, **attention_args)
        self.inner_dim = inner_dim
        self.build_input_projections(inner_dim, inner_dim, bias=bias)
        self.out_proj = self.projection(inner_dim, embed_dim, bias=bias)
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
