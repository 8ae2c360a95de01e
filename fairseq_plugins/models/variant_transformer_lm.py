"""Decoder-only language model of the plugin (``variant_transformer_lm``) and the Compositional
Attention LM presets with matched multi-head baselines.

Paper's LM setting (WikiText-103, METHOD.md section 1): 6 shared pre-norm decoder layers, d=512,
ffn 2048, S=R=8, d_s=32, tied input/output embeddings.
"""

from dataclasses import dataclass

from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer_lm import (
    DEFAULT_MAX_TARGET_POSITIONS,
    TransformerLanguageModel,
    TransformerLanguageModelConfig,
    base_lm_architecture,
)

from fairseq_plugins.cli_errors import PluginConfigError
from fairseq_plugins.variant_config import VariantConfig, set_variant_defaults

from .variant_transformer import VariantTransformerDecoder, check_attention_dims


@dataclass
class VariantTransformerLMConfig(TransformerLanguageModelConfig, VariantConfig):
    pass


@register_model("variant_transformer_lm", dataclass=VariantTransformerLMConfig)
class VariantTransformerLanguageModel(TransformerLanguageModel):
    @classmethod
    def build_model(cls, args, task):
        variant_lm_base_architecture(args)
        options = VariantConfig.from_args(args)
        if options.copy_decoder:
            raise PluginConfigError("--copy-decoder needs an encoder; it is not available for LMs")
        if options.graph_encoder:
            raise PluginConfigError(
                "--graph-encoder concerns encoders; it is not available for LMs"
            )
        check_attention_dims(args, options, roles=("decoder",))
        if args.character_embeddings or args.adaptive_input:
            raise PluginConfigError(
                "variant_transformer_lm supports plain token embeddings only "
                "(no --character-embeddings / --adaptive-input)"
            )
        if args.decoder_layers_to_keep:
            args.decoder_layers = len(args.decoder_layers_to_keep.split(","))
        if getattr(args, "max_target_positions", None) is None:
            args.max_target_positions = getattr(
                args, "tokens_per_sample", DEFAULT_MAX_TARGET_POSITIONS
            )
        if options.rel_pos != "none" and not options.rel_pos_keep_absolute:
            args.no_token_positional_embeddings = True
        embed_tokens = cls.build_embedding(args, task.source_dictionary, args.decoder_input_dim)
        decoder = VariantTransformerDecoder(
            TransformerConfig.from_namespace(args),
            task.target_dictionary,
            embed_tokens,
            options,
            no_encoder_attn=True,
        )
        return cls(decoder)


def variant_lm_base_architecture(args):
    # (register_model with a dataclass registers the arch of the same name by itself)
    set_variant_defaults(args)
    base_lm_architecture(args)


def paper_lm_shape(args):
    args.decoder_layers = getattr(args, "decoder_layers", 6)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", 512)
    args.decoder_ffn_embed_dim = getattr(args, "decoder_ffn_embed_dim", 2048)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 8)
    args.decoder_normalize_before = True
    args.share_decoder_layers = True
    args.share_decoder_input_output_embed = True
    args.dropout = getattr(args, "dropout", 0.1)


def _lm_preset(name, attention_type, extra=None):
    @register_model_architecture("variant_transformer_lm", name)
    def arch(args):
        if getattr(args, "attention_type", None) is None:
            args.attention_type = attention_type
        args.retrieval_qk_dim = getattr(args, "retrieval_qk_dim", None) or 32
        paper_lm_shape(args)
        if extra:
            extra(args)
        variant_lm_base_architecture(args)

    arch.__name__ = name


def _wiki103(args):
    # Regularisation of fairseq's WikiText-103 LMs at this size.
    args.attention_dropout = getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = getattr(args, "activation_dropout", 0.1)
    args.dropout = getattr(args, "dropout", 0.2)


for _suffix, _extra in (("", None), ("_wiki103", _wiki103)):
    _lm_preset(f"compositional_transformer_lm{_suffix}", "compositional", _extra)
    _lm_preset(f"compositional_transformer_lm{_suffix}_baseline", "multihead", _extra)
