"""The plugin's encoder-decoder model family: fairseq's Transformer with every variant option
(attention type, relative positions, copy decoder, layer sharing, Graph-Transformer encoder layers).

Registered as ``variant_transformer``; the named presets (compositional_transformer*,
graph_transformer*, compgen_*) are architectures of this one model.
"""

import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerEncoderBase,
    TransformerModel,
    base_architecture,
)

from fairseq_plugins.cli_errors import PluginConfigError
from fairseq_plugins.modules.copy_generator import CopyGenerator
from fairseq_plugins.modules.graph_encoder_layer import GraphEncoderLayer
from fairseq_plugins.modules.layer_sharing import tie_parameters
from fairseq_plugins.modules.variant_layers import (
    VariantDecoderLayer,
    VariantEncoderLayer,
    wrap_layer,
)
from fairseq_plugins.variant_config import VariantConfig, set_variant_defaults


class VariantTransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, options, return_fc=False):
        self.options = options
        self._layers_built = 0
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        if options.share_encoder_layers:
            tie_parameters(self.layers)

    def build_encoder_layer(self, cfg):
        first = self._layers_built == 0
        self._layers_built += 1
        if self.options.graph_encoder and not first:
            layer = GraphEncoderLayer(cfg, self.options, return_fc=self.return_fc)
        else:
            layer = VariantEncoderLayer(cfg, self.options, return_fc=self.return_fc)
        return wrap_layer(layer, cfg)

    def forward(
        self, src_tokens, src_lengths=None, return_all_hiddens=False, token_embeddings=None
    ):
        if self.options.graph_encoder:
            out = self.forward_graph(src_tokens, return_all_hiddens, token_embeddings)
        else:
            out = self.forward_scriptable(
                src_tokens, src_lengths, return_all_hiddens, token_embeddings
            )
        out["src_tokens"] = [src_tokens]  # the copy decoder scatters onto source tokens
        return out

    def forward_graph(self, src_tokens, return_all_hiddens=False, token_embeddings=None):
        """Layer 1 is standard; layer i >= 2 gets P = X_(i-2) and I = X_(i-1) - X_(i-2)."""
        padding_mask = src_tokens.eq(self.padding_idx)
        has_pads = bool(padding_mask.any())
        x, embedding = self.forward_embedding(src_tokens, token_embeddings)
        if has_pads:
            x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
        x = x.transpose(0, 1)
        mask = padding_mask if has_pads else None
        states = [x] if return_all_hiddens else []
        prev = None
        for layer in self.layers:
            if prev is None:
                prev, x = x, layer(x, encoder_padding_mask=mask)
            else:
                prev, x = x, layer(prev, x - prev, encoder_padding_mask=mask)
            if return_all_hiddens:
                states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        lengths = src_tokens.ne(self.padding_idx).sum(dim=1, dtype=torch.int32).reshape(-1, 1)
        return {
            "encoder_out": [x],
            "encoder_padding_mask": [padding_mask],
            "encoder_embedding": [embedding],
            "encoder_states": states,
            "fc_results": [],
            "src_tokens": [],
            "src_lengths": [lengths],
        }


class VariantTransformerDecoder(TransformerDecoderBase):
    def __init__(
        self, cfg, dictionary, embed_tokens, options, no_encoder_attn=False, output_projection=None
    ):
        self.options = options
        super().__init__(
            cfg,
            dictionary,
            embed_tokens,
            no_encoder_attn=no_encoder_attn,
            output_projection=output_projection,
        )
        if options.share_decoder_layers:
            tie_parameters(self.layers)
        if options.copy_decoder:
            if no_encoder_attn:
                raise PluginConfigError("--copy-decoder needs an encoder (not available for LMs)")
            self.copy_generator = CopyGenerator(self.output_embed_dim, cfg.encoder.embed_dim)
        else:
            self.copy_generator = None

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        return wrap_layer(VariantDecoderLayer(cfg, self.options, no_encoder_attn), cfg)

    def forward(
        self,
        prev_output_tokens,
        encoder_out=None,
        incremental_state=None,
        features_only=False,
        full_context_alignment=False,
        alignment_layer=None,
        alignment_heads=None,
        src_lengths=None,
        return_all_hiddens=False,
    ):
        x, extra = self.extract_features(
            prev_output_tokens,
            encoder_out=encoder_out,
            incremental_state=incremental_state,
            full_context_alignment=full_context_alignment,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
        )
        if features_only:
            return x, extra
        logits = self.output_layer(x)
        if self.copy_generator is None:
            return logits, extra
        padding = encoder_out["encoder_padding_mask"]
        log_probs = self.copy_generator(
            logits,
            x,
            encoder_out["encoder_out"][0],
            padding[0] if len(padding) > 0 else None,
            encoder_out["src_tokens"][0],
        )
        extra["copy_log_probs"] = True
        return log_probs, extra

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        if self.copy_generator is None:
            return super().get_normalized_probs(net_output, log_probs, sample)
        # The copy mixture already is a distribution: forward returned its log.
        out = net_output[0].float()
        return out if log_probs else out.exp()


def check_attention_dims(args, options, roles=("encoder", "decoder", "cross")):
    """Every attention's width must split into its heads / searches / retrievals: raise a
    PluginConfigError naming the flags (instead of an assertion deep inside a module)."""
    for role in roles:
        side = "encoder" if role == "encoder" else "decoder"
        embed_dim = getattr(args, f"{side}_embed_dim")
        heads = getattr(args, f"{side}_attention_heads")
        if heads < 1:
            raise PluginConfigError(f"--{side}-attention-heads must be >= 1 (got {heads})")
        inner_dims = [embed_dim]
        if role == "encoder" and options.graph_encoder and options.graph_half_dim:
            if embed_dim % 2 or (embed_dim // 2) % heads:
                raise PluginConfigError(
                    f"--graph-half-dim needs d/2 = {embed_dim / 2} divisible by "
                    f"--encoder-attention-heads {heads}"
                )
            inner_dims.append(embed_dim // 2)
        attention_type = options.attention_type_for(role)
        for inner in inner_dims:
            if attention_type == "compositional":
                width = f"the {role} attention width {inner} (--{side}-embed-dim" + (
                    " / 2, --graph-half-dim)" if inner != embed_dim else ")"
                )
                searches = options.num_searches or heads
                if inner % searches:
                    given = (
                        "--num-searches" if options.num_searches else f"--{side}-attention-heads"
                    )
                    raise PluginConfigError(
                        f"{given} {searches} (the number of searches) does not divide {width}"
                    )
                retrievals = options.num_retrievals or heads
                value_width = options.compositional_attn_dim or inner
                if value_width % retrievals:
                    given = (
                        "--num-retrievals"
                        if options.num_retrievals
                        else f"--{side}-attention-heads"
                    )
                    raise PluginConfigError(
                        f"{given} {retrievals} (the number of retrievals) does not divide the "
                        f"{role} retrieval value width {value_width} (--compositional-attn-dim, "
                        "default: the attention width)"
                    )
            elif inner % heads:
                raise PluginConfigError(
                    f"--{side}-embed-dim {embed_dim} is not divisible by "
                    f"--{side}-attention-heads {heads}"
                )


def check_variant_model(args, task):
    """Errors a user can fix, raised before anything is built or written."""
    options = VariantConfig.from_args(args)
    check_attention_dims(args, options)
    if options.copy_decoder and task.source_dictionary != task.target_dictionary:
        raise PluginConfigError(
            "--copy-decoder needs a joined source/target dictionary "
            "(run fairseq-preprocess with --joined-dictionary)"
        )
    if options.rel_pos != "none" and not options.rel_pos_keep_absolute:
        args.no_token_positional_embeddings = True  # rel-* uses no absolute positions
    return options


@register_model("variant_transformer")
class VariantTransformerModel(TransformerModel):
    """Transformer with Compositional Attention, relative positions, copy decoder, layer sharing
    and Graph-Transformer encoder layers as orthogonal options."""

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        gen_parser_from_dataclass(parser, VariantConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        variant_base_architecture(args)
        check_variant_model(args, task)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        options = VariantConfig.from_args(args)
        return VariantTransformerEncoder(cfg, src_dict, embed_tokens, options)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        options = VariantConfig.from_args(args)
        return VariantTransformerDecoder(
            cfg, tgt_dict, embed_tokens, options, no_encoder_attn=cfg.no_cross_attention
        )


@register_model_architecture("variant_transformer", "variant_transformer")
def variant_base_architecture(args):
    set_variant_defaults(args)
    base_architecture(args)
