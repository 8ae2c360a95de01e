"""fairseq's Transformer encoder/decoder layers with the attention that their AttentionPlans
(``variant_config.py``) choose.

Only the ``build_*_attention`` hooks change; the layers' forward passes are fairseq's own. A layer
is handed the plan of each of its attentions and keeps it on itself before ``super().__init__``,
because fairseq's constructor calls the hooks from inside ``__init__``.
"""

from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)

from .attention_registry import AttentionSpec, build_attention


class VariantEncoderLayer(TransformerEncoderLayerBase):
    attention_role = "encoder"
    attention_inner_dim = None

    def __init__(self, cfg, attention, return_fc=False):
        """``attention``: the AttentionPlan of the self-attention."""
        self.attention_plan = attention  # read by build_self_attention, inside super().__init__
        super().__init__(cfg, return_fc=return_fc)

    def build_self_attention(self, embed_dim, cfg):
        return self.build_attention(embed_dim, cfg)

    def build_attention(self, embed_dim, cfg):
        spec = AttentionSpec(
            self.attention_role,
            embed_dim,
            cfg.encoder.attention_heads,
            cfg.attention_dropout,
            inner_dim=self.attention_inner_dim,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
        )
        return build_attention(self.attention_plan, spec)

    def feed_forward_block(self, x):
        """The second half of fairseq's encoder layer forward (FFN with residual and norm)."""
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.activation_fn(self.fc1(x))
        x = self.activation_dropout_module(x)
        x = self.fc2(x)
        x = self.dropout_module(x)
        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x


class VariantDecoderLayer(TransformerDecoderLayerBase):
    def __init__(
        self,
        cfg,
        self_attention,
        cross_attention,
        no_encoder_attn=False,
        add_bias_kv=False,
        add_zero_attn=False,
    ):
        """``self_attention``, ``cross_attention``: the AttentionPlans of the two attentions."""
        # read by the build_*_attention hooks, inside super().__init__
        self.self_attention_plan, self.cross_attention_plan = self_attention, cross_attention
        super().__init__(
            cfg,
            no_encoder_attn=no_encoder_attn,
            add_bias_kv=add_bias_kv,
            add_zero_attn=add_zero_attn,
        )

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        if add_bias_kv or add_zero_attn or cfg.cross_self_attention:
            raise ValueError(
                "add_bias_kv, add_zero_attn and --cross-self-attention are not supported by "
                "fairseq_plugins models"
            )
        spec = AttentionSpec(
            "decoder",
            embed_dim,
            cfg.decoder.attention_heads,
            cfg.attention_dropout,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
        )
        return build_attention(self.self_attention_plan, spec)

    def build_encoder_attention(self, embed_dim, cfg):
        spec = AttentionSpec(
            "cross",
            embed_dim,
            cfg.decoder.attention_heads,
            cfg.attention_dropout,
            kdim=cfg.encoder.embed_dim,
            q_noise=self.quant_noise,
            qn_block_size=self.quant_noise_block_size,
        )
        return build_attention(self.cross_attention_plan, spec)


def wrap_layer(layer, cfg):
    """fairseq's optional activation checkpointing and FSDP wrapping of a layer."""
    from fairseq.distributed import fsdp_wrap
    from fairseq.modules.checkpoint_activations import checkpoint_wrapper

    checkpoint = cfg.checkpoint_activations
    if checkpoint:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    min_params_to_wrap = cfg.min_params_to_wrap if not checkpoint else 0
    return fsdp_wrap(layer, min_num_params=min_params_to_wrap)
