"""Presets of "Compositional Attention: Disentangling Search and Retrieval" (Mittal et al., ICLR
2022), translation and language modelling, each with a matched baseline.

Each ``X`` uses compositional attention in every attention (S = R = heads unless given);
``X_baseline`` has the same shapes with fairseq's multi-head attention, so a comparison is one
flag (``--attention-type``) or one preset name.

Paper's LM setting (WikiText-103, docs/method.md §7): 6 shared pre-norm decoder layers, d=512,
ffn 2048, S=R=8, d_s=32, tied input/output embeddings (``compositional_transformer_lm*``; sharing
can be turned off with ``--no-share-decoder-layers``; fairseq makes every LM pre-norm).
"""

from fairseq.models import register_model_architecture
from fairseq.models.transformer import transformer_iwslt_de_en, transformer_wmt_en_de

from .variant_transformer import variant_base_architecture
from .variant_transformer_lm import variant_lm_base_architecture


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


def paper_lm_shape(args):
    args.decoder_layers = getattr(args, "decoder_layers", 6)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 512)
    args.decoder_ffn_embed_dim = getattr(args, "decoder_ffn_embed_dim", 2048)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 8)
    args.decoder_normalize_before = True  # (fairseq makes every LM pre-norm anyway)
    args.share_decoder_layers = not getattr(args, "no_share_decoder_layers", False)
    args.share_decoder_input_output_embed = True
    args.dropout = getattr(args, "dropout", 0.1)


def _lm_preset(name, attention_type, extra=None):
    @register_model_architecture("variant_transformer_lm", name)
    def arch(args):
        if getattr(args, "attention_type", None) is None:
            args.attention_type = attention_type
        paper_lm_shape(args)
        if extra:
            extra(args)
        variant_lm_base_architecture(args)

    arch.__name__ = name


def _wiki103(args):
    # Attention and activation dropout as fairseq's WikiText-103 LMs; dropout stays the paper
    # shape's 0.1.
    args.attention_dropout = getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = getattr(args, "activation_dropout", 0.1)


for _suffix, _extra in (("", None), ("_wiki103", _wiki103)):
    _lm_preset(f"compositional_transformer_lm{_suffix}", "compositional", _extra)
    _lm_preset(f"compositional_transformer_lm{_suffix}_baseline", "multihead", _extra)
