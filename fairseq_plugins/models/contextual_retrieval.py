"""``contextual_retrieval_model``: the model of Mittal et al.'s Contextual Retrieval Task
(docs/contextual-retrieval-task.md §2, the authors' model), for the task of the same
name.

  h_i = W2 ReLU(W1 u_i + b1) + b2                     per-object encoder (in_dim -> d -> d)
  a_i = Attention(h)_i, the token's own key masked     ONE layer: multi-head or compositional
  e_i = W_e h_i + b_e                                  the extra value slot (official --concat)
  m_i = a_i + W_oe e_i                                 = W_o [heads; e_i] + b_o, W_o split in two
  y_i = w4 . ReLU(W3 m_i + b3) + b4                    per-object decoder (d -> d -> 1)

No residual, normalisation, dropout or positions. The attention is the plugin's own module, built
by ``attention_registry.build_attention`` (fairseq's MultiheadAttention, or CompositionalAttention
with every scoring option), whose output projection is the heads' part of the official W_o; the
extra value's part is W_oe (no bias: W_o's bias is the module's). The extra slot is as wide as one
value slot (d_r = d/h, or the retrieval value width d_v / R).

Where the official code differs from the plugin's modules, the default follows the official:
the retrieval query/key width is the search head width d/S (--retrieval-qk-dim overrides), and
every Linear is initialised with PyTorch's default (--attention-init module keeps the attention
module's own initialisation), the split output projection [W_heads | W_oe] and its bias as the
authors' one Linear over the concatenation (--output-proj-init joint; ``separate`` draws each
part for its own fan-in).
"""

from dataclasses import dataclass, field, fields, make_dataclass, replace
from typing import Optional

import torch
import torch.nn as nn
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import BaseFairseqModel, register_model

from fairseq_plugins.modules.attention_registry import AttentionSpec, build_attention
from fairseq_plugins.modules.compositional_attention import CompositionalAttention
from fairseq_plugins.option_choices import ATTENTION_INITS, OUTPUT_PROJ_INITS
from fairseq_plugins.variant_config import VariantConfig, option, parse_options
from plugin_tools.errors import PluginConfigError

# The variant options that concern one self-attention without positions, taken over as they are
# (every retrieval_* option, so the scoring options the plugin gains apply here too).
SHARED_OPTIONS = ("attention_type", "num_searches", "num_retrievals", "compositional_attn_dim")


def shared_option(name):
    return name in SHARED_OPTIONS or (name.startswith("retrieval_") and name != "retrieval_qk_dim")


@dataclass
class _RetrievalModelOptions(FairseqDataclass):
    encoder_embed_dim: int = option(64, "model width d (encoder, attention, decoder)")
    encoder_attention_heads: int = option(
        4,
        "multi-head attention: heads h; compositional: the default of "
        "--num-searches / --num-retrievals",
    )
    retrieval_qk_dim: Optional[int] = option(
        None, "retrieval query/key width (default: d / S, the task's official code)"
    )
    no_extra_value: bool = option(
        False, "drop the extra value slot W_e h_i (the official code without --concat)"
    )
    attention_init: ChoiceEnum(ATTENTION_INITS) = option(
        "pytorch",
        "pytorch: every Linear with PyTorch's default (the official code); module: "
        "the attention module's own initialisation",
    )
    output_proj_init: ChoiceEnum(OUTPUT_PROJ_INITS) = option(
        "joint",
        "with --attention-init pytorch: joint: W_o and W_oe drawn as the authors' ONE "
        "Linear((heads + 1) slots, d) (bounds 1/sqrt of the joint fan-in); separate: each with "
        "PyTorch's default for its own fan-in (wider bounds)",
    )


ContextualRetrievalModelConfig = make_dataclass(
    "ContextualRetrievalModelConfig",
    [(f.name, f.type, field(default=f.default, metadata=f.metadata))
     for f in fields(VariantConfig) if shared_option(f.name)],
    bases=(_RetrievalModelOptions,),
)  # fmt: skip


def attention_plan(cfg):
    """The AttentionPlan of this model's attention (the encoder self-attention's of the shared
    options), and for compositional attention d_s = d / S unless --retrieval-qk-dim is given (a
    width S does not divide is left to the attention builder, whose error names the flags)."""
    attention = parse_options(cfg).encoder.self_attention  # options not taken keep their defaults
    settings = attention.settings
    if attention.kind != "compositional":
        return attention
    d = cfg.encoder_embed_dim
    searches = settings.num_searches or cfg.encoder_attention_heads
    if cfg.retrieval_qk_dim is not None:
        settings = replace(settings, retrieval_qk_dim=cfg.retrieval_qk_dim)
    elif searches >= 1 and d % searches == 0:
        settings = replace(settings, retrieval_qk_dim=d // searches)
    return replace(attention, settings=settings)


def joint_output_init(heads_out, extra_out):
    """W_o = [W_heads | W_oe] and b_o drawn as the authors' one ``nn.Linear(F, d)`` over the
    concatenated [heads; e], F = heads_out.in_features + extra_out.in_features: weights and bias
    within 1/sqrt(F), where two separate default Linears would use 1/sqrt of each part's own
    fan-in. Draws one Linear (weight, then bias: PyTorch's order) and splits its columns."""
    width = heads_out.in_features
    joint = nn.Linear(width + extra_out.in_features, heads_out.out_features)
    with torch.no_grad():
        heads_out.weight.copy_(joint.weight[:, :width])
        extra_out.weight.copy_(joint.weight[:, width:])
        if heads_out.bias is not None:
            heads_out.bias.copy_(joint.bias)


@register_model("contextual_retrieval_model", dataclass=ContextualRetrievalModelConfig)
class ContextualRetrievalModel(BaseFairseqModel):
    def __init__(self, cfg, in_dim, attention):
        super().__init__()
        d = cfg.encoder_embed_dim
        self.encoder = nn.Sequential(nn.Linear(in_dim, d), nn.ReLU(), nn.Linear(d, d))
        self.attention = attention
        if isinstance(attention, CompositionalAttention):
            slot = attention.value_dim
        else:
            slot = attention.head_dim
        self.extra_value = None if cfg.no_extra_value else nn.Linear(d, slot)
        self.extra_value_out = None if cfg.no_extra_value else nn.Linear(slot, d, bias=False)
        self.decoder = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
        if cfg.attention_init == "pytorch":
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    module.reset_parameters()
            if self.extra_value_out is not None and cfg.output_proj_init == "joint":
                joint_output_init(attention.out_proj, self.extra_value_out)

    @classmethod
    def build_model(cls, cfg, task):
        setting = getattr(task, "setting", None)
        if setting is None:
            raise PluginConfigError(
                "--arch contextual_retrieval_model needs --task contextual_retrieval"
            )
        if cfg.encoder_embed_dim < 1:
            raise PluginConfigError(
                f"--encoder-embed-dim must be >= 1 (got {cfg.encoder_embed_dim})"
            )
        try:
            attention = attention_plan(cfg)
        except ValueError as error:
            raise PluginConfigError(str(error)) from None
        spec = AttentionSpec("encoder", cfg.encoder_embed_dim, cfg.encoder_attention_heads, 0.0)
        return cls(cfg, setting.token_dim, build_attention(attention, spec))

    def attend(self, hidden):
        """The attention layer on (B, n, d), each object's own key masked: (B, n, d)."""
        n = hidden.size(1)
        own = torch.eye(n, dtype=torch.bool, device=hidden.device)
        mask = torch.zeros(n, n, dtype=hidden.dtype, device=hidden.device)
        mask = mask.masked_fill(own, float("-inf"))
        x = hidden.transpose(0, 1)
        out, _ = self.attention(x, x, x, attn_mask=mask, need_weights=False)
        return out.transpose(0, 1)

    def forward(self, tokens):
        """tokens (B, n, in_dim) -> predictions (B, n)."""
        hidden = self.encoder(tokens)
        mixed = self.attend(hidden)
        if self.extra_value is not None:
            mixed = mixed + self.extra_value_out(self.extra_value(hidden))
        return self.decoder(mixed).squeeze(-1)

    def max_positions(self):
        return None
