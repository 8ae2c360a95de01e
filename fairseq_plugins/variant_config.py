"""The options every model of this plugin shares. They are orthogonal: attention type, relative
positions, copy decoder, layer sharing and Graph-Transformer encoder layers combine freely.

One dataclass serves both fairseq option styles: ``add_args`` of the translation model (legacy
argparse) and the hydra config of the language model.
"""

from dataclasses import dataclass, field, fields
from typing import Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass

from plugin_tools.errors import PluginConfigError
from .modules.attention_registry import ATTENTION_TYPES, ENCODER_ATTENTION_TYPES
from .modules.compositional_attention import RETRIEVAL_SCORINGS
from .modules.copy_generator import COPY_PROJECTIONS
from .modules.graph_encoder import FUSIONS
from .modules.position_schemes import ALL_REL_POS_MODES

GRAPH_FUSIONS = list(FUSIONS)


@dataclass
class VariantConfig(FairseqDataclass):
    attention_type: ChoiceEnum(list(ATTENTION_TYPES)) = field(
        default="multihead",
        metadata={"help": "attention of every layer: fairseq's multi-head or compositional"},
    )
    encoder_attention_type: Optional[str] = field(
        default=None,
        metadata={
            "help": "encoder self-attention type: multihead, compositional or geometric (the "
            "Neural Data Router's; encoder only) (default: --attention-type)"
        },
    )
    decoder_attention_type: Optional[str] = field(
        default=None,
        metadata={
            "help": "decoder self-attention type: multihead or compositional (default: --attention-type)"
        },
    )
    cross_attention_type: Optional[str] = field(
        default=None,
        metadata={
            "help": "encoder-decoder attention type: multihead or compositional (default: --attention-type)"
        },
    )
    num_searches: Optional[int] = field(
        default=None, metadata={"help": "compositional searches S (default: the layer's heads)"}
    )
    num_retrievals: Optional[int] = field(
        default=None, metadata={"help": "compositional retrievals R (default: the layer's heads)"}
    )
    retrieval_qk_dim: int = field(
        default=32, metadata={"help": "retrieval query/key dimension d_s"}
    )
    retrieval_scoring: ChoiceEnum(list(RETRIEVAL_SCORINGS)) = field(
        default="dot",
        metadata={
            "help": "value scores c_ij: dot (q_i . O_ij W_rk / sqrt(d_s)), mlp (a small network "
            "on [O_ij ; q_i]), learned-key (q_i . key_j / sqrt(d_s) with R learned keys, "
            "independent of O_ij: the official compositional_attention_func.py with --qk-rule) or "
            "learned-key-mlp (a small network on [q_i ; key_j]: the official _func module "
            "without --qk-rule)"
        },
    )
    retrieval_mlp_hidden: Optional[int] = field(
        default=None,
        metadata={
            "help": "hidden ReLU width of the mlp and learned-key-mlp scorers (default: d_s, the "
            "official nonlinear=True; 0: linear, which ignores the query: its term is the same "
            "for every retrieval and cancels in the softmax)"
        },
    )
    retrieval_query_from_search: bool = field(
        default=False,
        metadata={
            "help": "retrieval query q_i from the search query Q_i / sqrt(d_h) through one "
            "Linear(d_h, d_s) shared by the searches, instead of from the layer input "
            "(the official --q-compose)"
        },
    )
    retrieval_gumbel: bool = field(
        default=False,
        metadata={
            "help": "in training, value scores by Gumbel-softmax (soft) over the retrievals: "
            "softmax((logits + Gumbel noise) / temperature); plain softmax at evaluation and "
            "decoding unless --retrieval-gumbel-in-eval (the official --gumbel keeps the noise)"
        },
    )
    retrieval_gumbel_in_eval: bool = field(
        default=False,
        metadata={
            "help": "keep the --retrieval-gumbel noise at evaluation, validation and generation, "
            "fresh at every decoding step, as the official module does (metrics are then "
            "stochastic)"
        },
    )
    retrieval_gumbel_temperature: float = field(
        default=1.0,
        metadata={"help": "temperature of --retrieval-gumbel (> 0; the official 1.0)"},
    )
    compositional_attn_dim: Optional[int] = field(
        default=None,
        metadata={
            "help": "total value width of the R retrievals, R*d_v (the official code's name; "
            "default: the attention width, so d_v = d/R)"
        },
    )
    realformer: bool = field(
        default=False,
        metadata={
            "help": "RealFormer residual attention: every self-attention and cross-attention adds "
            "the previous layer's scaled, masked pre-softmax logits (relative-position terms "
            "included) to its own; three separate carries (encoder self, decoder self, cross)"
        },
    )
    share_encoder_layers: bool = field(
        default=False, metadata={"help": "all encoder layers share one set of parameters"}
    )
    share_decoder_layers: bool = field(
        default=False, metadata={"help": "all decoder layers share one set of parameters"}
    )
    rel_pos: ChoiceEnum(list(ALL_REL_POS_MODES)) = field(
        default="none",
        metadata={
            "help": "positions in self-attention: e (embeddings), b (bias), eb (Ontanon et al.), "
            "alibi (linear distance penalty, the paper's slopes), t5 (bucketed learned bias), "
            "rope (rotary q/k), nope (no positions at all); none: absolute embeddings only"
        },
    )
    encoder_rel_pos: Optional[str] = field(
        default=None,
        metadata={"help": "the --rel-pos of the encoder self-attention (default: --rel-pos)"},
    )
    decoder_rel_pos: Optional[str] = field(
        default=None,
        metadata={
            "help": "the --rel-pos of the decoder self-attention (default: --rel-pos); e.g. "
            "nope: the decoder has no position information (Kazemnejad et al. 2023)"
        },
    )
    t5_num_buckets: int = field(
        default=32, metadata={"help": "--rel-pos t5: buckets of the relative distance (T5: 32)"}
    )
    t5_max_distance: int = field(
        default=128,
        metadata={"help": "--rel-pos t5: distance from which all share the last bucket (T5: 128)"},
    )
    rope_base: float = field(
        default=10000.0,
        metadata={"help": "--rel-pos rope: the base of the angles (RoFormer: 10000)"},
    )
    rel_pos_radius: int = field(default=16, metadata={"help": "relative position clip radius k"})
    rel_pos_cross: bool = field(
        default=False,
        metadata={"help": "rel2: relative positions in encoder-decoder attention too"},
    )
    rel_pos_bias_per_head: bool = field(
        default=False, metadata={"help": "rel-b: one bias table per head instead of shared"}
    )
    rel_pos_keep_absolute: bool = field(
        default=False,
        metadata={"help": "keep absolute position embeddings with --rel-pos (off by default)"},
    )
    encoder_copy_gate: bool = field(
        default=False,
        metadata={
            "help": "Neural Data Router copy gate in every encoder layer: h' = g*u + (1-g)*h "
            "(post-norm; with --encoder-attention-type geometric and --share-encoder-layers: "
            "the NDR)"
        },
    )
    copy_gate_drop: float = field(
        default=0.0,
        metadata={
            "help": "--encoder-copy-gate: probability of closing a position's gate in training "
            "(the official ndr.drop_gate, default 0)"
        },
    )
    geometric_attention_unnormalized: bool = field(
        default=False,
        metadata={
            "help": "geometric attention: weights A_ij not divided by their row sum (the paper "
            "normalises by default)"
        },
    )
    copy_decoder: bool = field(
        default=False,
        metadata={"help": "mix a copy distribution over source tokens into the output"},
    )
    copy_projection: ChoiceEnum(list(COPY_PROJECTIONS)) = field(
        default="none",
        metadata={
            "help": "second copy decoder (official COPY_DECODER2): map the copy distribution "
            "V -> V (full, or low-rank through --copy-projection-dim) and softmax it before the "
            "mix; none: the first copy decoder"
        },
    )
    copy_projection_dim: Optional[int] = field(
        default=None,
        metadata={"help": "rank r of --copy-projection low-rank (default: the decoder dim d)"},
    )
    graph_encoder: bool = field(
        default=False,
        metadata={"help": "Graph-Transformer (multi-order-graph) encoder layers from layer 2 on"},
    )
    graph_fusion: ChoiceEnum(GRAPH_FUSIONS) = field(
        default="weight-gate", metadata={"help": "how graph layers fuse their four parts"}
    )
    graph_half_dim: bool = field(
        default=False, metadata={"help": "graph parts work in d/2 and project back to d"}
    )
    graph_shared_qkv: bool = field(
        default=False, metadata={"help": "the three graph attentions share q/k/v projections"}
    )

    @classmethod
    def from_args(cls, args):
        """Read the options from a parsed namespace or config; missing ones take their defaults."""
        values = {}
        for f in fields(cls):
            value = getattr(args, f.name, None)
            values[f.name] = f.default if value is None else value
        for f in fields(cls):  # enums from hydra configs -> plain strings
            if hasattr(values[f.name], "value"):
                values[f.name] = values[f.name].value
        options = cls(**values)
        options.validate()
        return options

    def validate(self):
        """Choices and dependencies between options. Widths and counts are checked by the modules
        that use them (the attention builder names the flags)."""
        types = list(ATTENTION_TYPES)
        checks = [
            ("attention_type", types),
            ("encoder_attention_type", list(ENCODER_ATTENTION_TYPES) + [None]),
            ("decoder_attention_type", types + [None]),
            ("cross_attention_type", types + [None]),
            ("rel_pos", list(ALL_REL_POS_MODES)),
            ("encoder_rel_pos", list(ALL_REL_POS_MODES) + [None]),
            ("decoder_rel_pos", list(ALL_REL_POS_MODES) + [None]),
            ("retrieval_scoring", list(RETRIEVAL_SCORINGS)),
            ("graph_fusion", GRAPH_FUSIONS),
            ("copy_projection", list(COPY_PROJECTIONS)),
        ]
        for name, choices in checks:
            if getattr(self, name) not in choices:
                shown = ", ".join(c for c in choices if c)
                raise PluginConfigError(
                    f"--{name.replace('_', '-')}: unknown value {getattr(self, name)!r} "
                    f"(choose from {shown})"
                )
        if self.retrieval_gumbel_in_eval and not self.retrieval_gumbel:
            raise PluginConfigError("--retrieval-gumbel-in-eval needs --retrieval-gumbel")
        if self.realformer and self.graph_encoder:
            raise PluginConfigError(
                "--realformer is not available with --graph-encoder (its layers attend three ways)"
            )
        if self.rel_pos_cross and self.rel_pos in ("none", "nope"):
            raise PluginConfigError("--rel-pos-cross needs --rel-pos e, b, eb, alibi, t5 or rope")
        if not 0 <= self.copy_gate_drop < 1:
            raise PluginConfigError(
                f"--copy-gate-drop must be in [0, 1) (got {self.copy_gate_drop})"
            )
        if self.copy_gate_drop and not self.encoder_copy_gate:
            raise PluginConfigError("--copy-gate-drop needs --encoder-copy-gate")
        geometric = self.attention_type_for("encoder") == "geometric"
        if geometric and (self.graph_encoder or self.realformer):
            raise PluginConfigError(
                "--encoder-attention-type geometric is not available with --graph-encoder or "
                "--realformer (it has no softmax logits to carry)"
            )
        if self.geometric_attention_unnormalized and not geometric:
            raise PluginConfigError(
                "--geometric-attention-unnormalized needs --encoder-attention-type geometric"
            )
        if self.encoder_copy_gate and self.graph_encoder:
            raise PluginConfigError("--encoder-copy-gate is not available with --graph-encoder")
        if self.copy_projection != "none" and not self.copy_decoder:
            raise PluginConfigError("--copy-projection needs --copy-decoder")
        if self.copy_projection_dim is not None:
            if self.copy_projection != "low-rank":
                raise PluginConfigError("--copy-projection-dim needs --copy-projection low-rank")
            if self.copy_projection_dim < 1:
                raise PluginConfigError(
                    f"--copy-projection-dim must be >= 1 (got {self.copy_projection_dim})"
                )

    def attention_type_for(self, role):
        """role: encoder, decoder, cross or graph (graph layers follow the encoder)."""
        specific = {
            "encoder": self.encoder_attention_type,
            "graph": self.encoder_attention_type,
            "decoder": self.decoder_attention_type,
            "cross": self.cross_attention_type,
        }[role]
        return specific or self.attention_type

    def set_position_embeddings(self, args):
        """rel-* models use no absolute position embeddings (the paper's setting) unless
        --rel-pos-keep-absolute: sets fairseq's --no-token-positional-embeddings in ``args`` when
        neither side has them (one side alone: ``absolute_positions``, read by the model)."""
        if not (self.absolute_positions("encoder") or self.absolute_positions("decoder")):
            args.no_token_positional_embeddings = True

    def absolute_positions(self, side):
        """Whether the encoder / decoder side keeps fairseq's absolute position embeddings: only
        where its self-attention has no position scheme (``--*rel-pos none``) and is not
        geometric (which orders keys by distance itself), or with --rel-pos-keep-absolute."""
        if self.rel_pos_keep_absolute:
            return True
        if side == "encoder" and self.attention_type_for("encoder") == "geometric":
            return False
        return self.rel_pos_for(side) == "none"

    def rel_pos_for(self, role):
        """The position scheme of a role: encoder (and graph) / decoder self-attention take
        --encoder-rel-pos / --decoder-rel-pos when given; cross-attention --rel-pos with
        --rel-pos-cross (rel2), else none."""
        if role == "cross":
            return self.rel_pos if self.rel_pos_cross else "none"
        specific = {"encoder": self.encoder_rel_pos, "graph": self.encoder_rel_pos}
        specific["decoder"] = self.decoder_rel_pos
        given = specific[role]
        return self.rel_pos if given is None else given


def set_variant_defaults(args):
    """Architecture helper: fill every variant option the command line left unset."""
    for f in fields(VariantConfig):
        if getattr(args, f.name, None) is None:
            setattr(args, f.name, f.default)
