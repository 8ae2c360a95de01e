"""Compositional Attention translation presets (Mittal et al. 2022) and matched baselines.

Each ``X`` uses compositional attention in every attention (S = R = heads unless given);
``X_baseline`` has the same shapes with fairseq's multi-head attention, so a comparison is one
flag (``--attention-type``) or one preset name.
"""

from fairseq.models import register_model_architecture
from fairseq.models.transformer import transformer_iwslt_de_en, transformer_wmt_en_de

from .variant_transformer import variant_base_architecture


def _preset(name, shapes, attention_type):
    @register_model_architecture("variant_transformer", name)
    def arch(args):
        if getattr(args, "attention_type", None) is None:
            args.attention_type = attention_type
        shapes(args)
        variant_base_architecture(args)

    arch.__name__ = name
    return arch


_SHAPES = {
    "compositional_transformer": lambda args: None,  # transformer base
    "compositional_transformer_iwslt_de_en": transformer_iwslt_de_en,
    "compositional_transformer_wmt_en_de": transformer_wmt_en_de,
}
for _name, _shapes in _SHAPES.items():
    _preset(_name, _shapes, "compositional")
    _preset(f"{_name}_baseline", _shapes, "multihead")
