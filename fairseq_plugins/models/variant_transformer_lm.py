"""Decoder-only language model of the plugin (``variant_transformer_lm``): fairseq's
TransformerLanguageModel with the variant options that concern a decoder (attention type, relative
positions, layer sharing). Presets: ``presets_compositional_attention.py``.
"""

from dataclasses import dataclass, field

from fairseq.models import register_model
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer_lm import (
    DEFAULT_MAX_TARGET_POSITIONS,
    TransformerLanguageModel,
    TransformerLanguageModelConfig,
    base_lm_architecture,
)

from fairseq_plugins.variant_config import VariantConfig, parse_options, set_variant_defaults
from plugin_tools.errors import PluginConfigError

from .variant_transformer import VariantTransformerDecoder


@dataclass
class VariantTransformerLMConfig(TransformerLanguageModelConfig, VariantConfig):
    # --share-decoder-layers can only switch sharing on; the presets that share by default
    # (compositional_transformer_lm*) turn it back with this. (Pre-norm needs no such flag:
    # fairseq's base_lm_architecture makes every language model pre-norm.)
    no_share_decoder_layers: bool = field(
        default=False, metadata={"help": "presets with shared layers: one set per layer instead"}
    )


@register_model("variant_transformer_lm", dataclass=VariantTransformerLMConfig)
class VariantTransformerLanguageModel(TransformerLanguageModel):
    @classmethod
    def build_model(cls, args, task):
        plan = parse_options(
            args,
            variant_lm_base_architecture,
            unavailable={
                "copy_decoder": "--copy-decoder needs an encoder; it is not available for LMs",
                "graph_encoder": "--graph-encoder concerns encoders; it is not available for LMs",
            },
        )
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
        embed_tokens = cls.build_embedding(args, task.source_dictionary, args.decoder_input_dim)
        decoder = VariantTransformerDecoder(
            TransformerConfig.from_namespace(args),
            task.target_dictionary,
            embed_tokens,
            plan.decoder,
            no_encoder_attn=True,
        )
        return cls(decoder)


def variant_lm_base_architecture(args):
    # (register_model with a dataclass registers the arch of the same name by itself)
    set_variant_defaults(args)
    base_lm_architecture(args)
