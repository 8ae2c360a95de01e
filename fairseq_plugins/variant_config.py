"""The options every model of this plugin shares. They are orthogonal: attention type, relative
positions, copy decoder, layer sharing and Graph-Transformer encoder layers combine freely.

One dataclass serves both fairseq option styles: ``add_args`` of the translation model (legacy
argparse) and the hydra config of the language model. The allowed values of the options are
``option_choices.py``'s (the modules import them from there); ``parse_options`` is how every model
kind reads and checks them, once, into a frozen ``VariantPlan`` (one ``AttentionPlan`` per role):
nothing past it reads the options.
"""

from dataclasses import dataclass, field, fields
from typing import Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass

from plugin_tools.errors import PluginConfigError

from .option_choices import (
    ALL_REL_POS_MODES,
    ATTENTION_TYPES,
    COPE_ATTENTION_TYPES,
    COPY_PROJECTIONS,
    COUPLING_TASKS,
    ENCODER_ATTENTION_TYPES,
    GRAPH_FUSIONS,
    RETRIEVAL_SCORINGS,
    ChoiceRegistry,
    unknown_choice,
)


def option(default, help_text):
    """A dataclass field with its ``--help`` text (what fairseq's parser generator reads)."""
    return field(default=default, metadata={"help": help_text})


def role_option(general_flag, help_text):
    """The option of one role (encoder, decoder, cross-attention) that, unset (None), takes the
    value of ``general_flag``: ``VariantConfig.attention_type_for`` / ``rel_pos_for`` read it."""
    return option(None, f"{help_text} (default: {general_flag})")


@dataclass
class VariantConfig(FairseqDataclass):
    attention_type: ChoiceEnum(list(ATTENTION_TYPES)) = option(
        "multihead", "attention of every layer: fairseq's multi-head or compositional"
    )
    encoder_attention_type: Optional[str] = role_option(
        "--attention-type",
        "encoder self-attention type: multihead, compositional or geometric (the "
        "Neural Data Router's; encoder only)",
    )
    decoder_attention_type: Optional[str] = role_option(
        "--attention-type", "decoder self-attention type: multihead or compositional"
    )
    cross_attention_type: Optional[str] = role_option(
        "--attention-type", "encoder-decoder attention type: multihead or compositional"
    )
    num_searches: Optional[int] = option(
        None, "compositional searches S (default: the layer's heads)"
    )
    num_retrievals: Optional[int] = option(
        None, "compositional retrievals R (default: the layer's heads)"
    )
    retrieval_qk_dim: int = option(32, "retrieval query/key dimension d_s")
    retrieval_scoring: ChoiceEnum(list(RETRIEVAL_SCORINGS)) = option(
        "dot",
        "value scores c_ij: dot (q_i . O_ij W_rk / sqrt(d_s)), mlp (a small network "
        "on [O_ij ; q_i]), learned-key (q_i . key_j / sqrt(d_s) with R learned keys, "
        "independent of O_ij: the official compositional_attention_func.py with --qk-rule) or "
        "learned-key-mlp (a small network on [q_i ; key_j]: the official _func module "
        "without --qk-rule)",
    )
    retrieval_mlp_hidden: Optional[int] = option(
        None,
        "hidden ReLU width of the mlp and learned-key-mlp scorers (default: d_s, the "
        "official nonlinear=True; 0: linear, which ignores the query: its term is the same "
        "for every retrieval and cancels in the softmax)",
    )
    retrieval_query_from_search: bool = option(
        False,
        "retrieval query q_i from the search query Q_i / sqrt(d_h) through one "
        "Linear(d_h, d_s) shared by the searches, instead of from the layer input "
        "(the official --q-compose)",
    )
    retrieval_gumbel: bool = option(
        False,
        "in training, value scores by Gumbel-softmax (soft) over the retrievals: "
        "softmax((logits + Gumbel noise) / temperature); plain softmax at evaluation and "
        "decoding unless --retrieval-gumbel-in-eval (the official --gumbel keeps the noise)",
    )
    retrieval_gumbel_in_eval: bool = option(
        False,
        "keep the --retrieval-gumbel noise at evaluation, validation and generation, "
        "fresh at every decoding step, as the official module does (metrics are then "
        "stochastic)",
    )
    retrieval_gumbel_search: bool = option(
        False,
        "with --retrieval-gumbel, the search softmax over the keys by Gumbel-softmax too "
        "(same temperature and phases), as the official contextual-retrieval model's --gumbel",
    )
    retrieval_gumbel_temperature: float = option(
        1.0, "temperature of --retrieval-gumbel (> 0; the official 1.0)"
    )
    compositional_attn_dim: Optional[int] = option(
        None,
        "total value width of the R retrievals, R*d_v (the official code's name; "
        "default: the attention width, so d_v = d/R)",
    )
    realformer: bool = option(
        False,
        "RealFormer residual attention: every self-attention and cross-attention adds "
        "the previous layer's scaled, masked pre-softmax logits (relative-position terms "
        "included) to its own; three separate carries (encoder self, decoder self, cross)",
    )
    share_encoder_layers: bool = option(False, "all encoder layers share one set of parameters")
    share_decoder_layers: bool = option(False, "all decoder layers share one set of parameters")
    rel_pos: ChoiceEnum(list(ALL_REL_POS_MODES)) = option(
        "none",
        "positions in self-attention: e (embeddings), b (bias), eb (Ontanon et al.), "
        "alibi (linear distance penalty, the paper's slopes), t5 (bucketed learned bias), "
        "rope (rotary q/k), nope (no positions at all), fire (a learned MLP of normalised "
        "distances, Li et al. 2024), cope (contextual positions, Golovneva et al. 2024: "
        "decoder self-attention only, --decoder-rel-pos cope); none: absolute embeddings only",
    )
    encoder_rel_pos: Optional[str] = role_option("--rel-pos", "the encoder self-attention's")
    decoder_rel_pos: Optional[str] = role_option(
        "--rel-pos",
        "the decoder self-attention's; e.g. nope: the decoder has no position information "
        "(Kazemnejad et al. 2023)",
    )
    t5_num_buckets: int = option(32, "--rel-pos t5: buckets of the relative distance (T5: 32)")
    t5_max_distance: int = option(
        128, "--rel-pos t5: distance from which all share the last bucket (T5: 128)"
    )
    rope_base: float = option(10000.0, "--rel-pos rope: the base of the angles (RoFormer: 10000)")
    fire_mlp_hidden: int = option(
        32, "--rel-pos fire: hidden ReLU units of the MLP of every attention (FIRE: 32)"
    )
    fire_threshold: float = option(
        512.0,
        "--rel-pos fire: the fixed L0 of the learned threshold L = |s L0| (s starts at 1) that "
        "distances are normalised by, psi(i - j) / psi(max(L, i)); a smaller L0 spreads short "
        "distances further apart (FIRE's appendix code: 512)",
    )
    cope_max_pos: int = option(
        16,
        "--decoder-rel-pos cope: positions of the table (counts beyond are clamped to "
        "the last; x-transformers' default 16)",
    )
    random_positions_max_length: int = option(
        0,
        "randomized positions (Ruoss et al. 2023): each sequence's positions are a sorted "
        "uniform random subset of 0..L-1 instead of 0..T-1, drawn at every forward (training "
        "and evaluation) for whatever reads positions on both sides: the --*rel-pos schemes, "
        "RoPE, absolute embeddings; 0: off (the official example: 2048)",
    )
    abacus: bool = option(
        False,
        "Abacus embeddings (McLeish et al. 2024) on both sides: every digit token gets a "
        "learned vector of its index within its run of digits (encoder: counted from the run's "
        "end, 1 = units; decoder: from its start, the causal choice), added to its token "
        "embedding; in training the indices are shifted by one offset per batch",
    )
    abacus_max_id: int = option(
        128, "--abacus: the largest Abacus id (table rows 0..N, row 0 a zero vector)"
    )
    abacus_max_offset: int = option(
        99, "--abacus: the training offset is uniform in 0..K, one draw per batch (0 at evaluation)"
    )
    position_coupling: Optional[str] = option(
        None,
        "position coupling (Cho et al. 2024) for the compgen task add, addneg, reverse or dup: "
        "one learned table of ids shared by encoder and decoder gives corresponding source and "
        "target tokens the same position vector, in place of the absolute position embeddings; "
        "random start per sentence in training (default: off)",
    )
    position_coupling_max_id: int = option(
        64, "--position-coupling: the largest coupled id (Cho et al.'s max_position)"
    )
    rel_pos_radius: int = option(16, "relative position clip radius k")
    rel_pos_cross: bool = option(False, "rel2: relative positions in encoder-decoder attention too")
    rel_pos_bias_per_head: bool = option(False, "rel-b: one bias table per head instead of shared")
    rel_pos_keep_absolute: bool = option(
        False, "keep absolute position embeddings with --rel-pos (off by default)"
    )
    encoder_copy_gate: bool = option(
        False,
        "Neural Data Router copy gate in every encoder layer: h' = g*u + (1-g)*h "
        "(post-norm; with --encoder-attention-type geometric and --share-encoder-layers: "
        "the NDR)",
    )
    copy_gate_drop: float = option(
        0.0,
        "--encoder-copy-gate: probability of closing a position's gate in training "
        "(the official ndr.drop_gate, default 0)",
    )
    geometric_attention_unnormalized: bool = option(
        False,
        "geometric attention: weights A_ij not divided by their row sum (the paper "
        "normalises by default)",
    )
    copy_decoder: bool = option(False, "mix a copy distribution over source tokens into the output")
    copy_projection: ChoiceEnum(list(COPY_PROJECTIONS)) = option(
        "none",
        "second copy decoder (official COPY_DECODER2): map the copy distribution "
        "V -> V (full, or low-rank through --copy-projection-dim) and softmax it before the "
        "mix; none: the first copy decoder",
    )
    copy_projection_dim: Optional[int] = option(
        None, "rank r of --copy-projection low-rank (default: the decoder dim d)"
    )
    graph_encoder: bool = option(
        False, "Graph-Transformer (multi-order-graph) encoder layers from layer 2 on"
    )
    graph_fusion: ChoiceEnum(list(GRAPH_FUSIONS)) = option(
        "weight-gate", "how graph layers fuse their four parts"
    )
    graph_half_dim: bool = option(False, "graph parts work in d/2 and project back to d")
    graph_shared_qkv: bool = option(False, "the three graph attentions share q/k/v projections")

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
        unset = (None,)  # the per-role overrides: None follows the general option
        checks = [
            ("attention_type", ATTENTION_TYPES),
            ("encoder_attention_type", ENCODER_ATTENTION_TYPES + unset),
            ("decoder_attention_type", ATTENTION_TYPES + unset),
            ("cross_attention_type", ATTENTION_TYPES + unset),
            ("rel_pos", ALL_REL_POS_MODES),
            ("encoder_rel_pos", ALL_REL_POS_MODES + unset),
            ("decoder_rel_pos", ALL_REL_POS_MODES + unset),
            ("retrieval_scoring", RETRIEVAL_SCORINGS),
            ("graph_fusion", GRAPH_FUSIONS),
            ("copy_projection", COPY_PROJECTIONS),
            ("position_coupling", COUPLING_TASKS + unset),
        ]
        for name, choices in checks:
            value = getattr(self, name)
            if value not in choices:
                flag = f"--{name.replace('_', '-')}"
                raise PluginConfigError(unknown_choice(flag, value, choices))
        if self.retrieval_gumbel_in_eval and not self.retrieval_gumbel:
            raise PluginConfigError("--retrieval-gumbel-in-eval needs --retrieval-gumbel")
        if self.realformer and self.graph_encoder:
            raise PluginConfigError(
                "--realformer is not available with --graph-encoder (its layers attend three ways)"
            )
        if self.rel_pos_cross and self.rel_pos in ("none", "nope"):
            raise PluginConfigError(
                "--rel-pos-cross needs --rel-pos e, b, eb, alibi, t5, rope or fire"
            )
        if self.fire_mlp_hidden < 1:
            raise PluginConfigError(f"--fire-mlp-hidden must be >= 1 (got {self.fire_mlp_hidden})")
        if not self.fire_threshold > 0:
            raise PluginConfigError(f"--fire-threshold must be > 0 (got {self.fire_threshold})")
        self.check_contextual_positions()
        if self.random_positions_max_length < 0:
            raise PluginConfigError(
                "--random-positions-max-length must be >= 0 (0: off; got "
                f"{self.random_positions_max_length})"
            )
        self.check_digit_positions()
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
        if geometric and self.random_positions_max_length:
            raise PluginConfigError(
                "--random-positions-max-length is not available with --encoder-attention-type "
                "geometric (it forms its own positions)"
            )
        if geometric and self.rel_pos_for("encoder") == "fire":
            raise PluginConfigError(
                "--encoder-rel-pos fire is not available with --encoder-attention-type geometric "
                "(its positions are not counted from the first real token)"
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

    def check_digit_positions(self):
        """--abacus and --position-coupling: their numbers, and coupling's place as the one
        absolute position of both sides (randomized positions define another). Their checks
        against the dictionaries and the embedding widths are the model's, when it is built."""
        if self.abacus_max_id < 1:
            raise PluginConfigError(f"--abacus-max-id must be >= 1 (got {self.abacus_max_id})")
        if self.abacus_max_offset < 0:
            raise PluginConfigError(
                f"--abacus-max-offset must be >= 0 (got {self.abacus_max_offset})"
            )
        if self.position_coupling_max_id < 1:
            raise PluginConfigError(
                f"--position-coupling-max-id must be >= 1 (got {self.position_coupling_max_id})"
            )
        if self.position_coupling and self.random_positions_max_length:
            raise PluginConfigError(
                "--position-coupling is not available with --random-positions-max-length (both "
                "define the absolute positions)"
            )

    def check_contextual_positions(self):
        """CoPE is defined for causal self-attention (its position sums run to the query through
        the causal mask): the decoder's only, of an attention type in COPE_ATTENTION_TYPES
        (multi-head: per head; compositional: per search)."""
        for flag, value in (
            ("--rel-pos", self.rel_pos),
            ("--encoder-rel-pos", self.encoder_rel_pos),
        ):
            if value == "cope":
                raise PluginConfigError(
                    f"{flag} cope: CoPE applies to decoder self-attention only "
                    "(use --decoder-rel-pos cope)"
                )
        if self.cope_max_pos < 1:
            raise PluginConfigError(f"--cope-max-pos must be >= 1 (got {self.cope_max_pos})")
        decoder_type = self.attention_type_for("decoder")
        if self.rel_pos_for("decoder") == "cope" and decoder_type not in COPE_ATTENTION_TYPES:
            raise PluginConfigError(
                f"--decoder-rel-pos cope needs decoder self-attention of type "
                f"{' or '.join(COPE_ATTENTION_TYPES)} (got --decoder-attention-type {decoder_type})"
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
        geometric (which orders keys by distance itself), or with --rel-pos-keep-absolute; never
        with --position-coupling (its coupled positions take their place)."""
        if self.position_coupling:  # the coupled positions replace them on both sides
            return False
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


# -- the plan: what the parsed options build, one frozen slice per role ----------------------------
# Every builder gets its own slice, handed to it: the encoder its EncoderPlan, the decoder its
# DecoderPlan, a layer the AttentionPlan of each of its attentions, an attention module the
# settings of its own kind.
# Nothing past parse_options reads VariantConfig.


@dataclass(frozen=True)
class PositionPlan:
    """The position scheme of one attention (``--rel-pos`` or the role's override) and the
    settings of the schemes; ``causal``: a decoder self-attention (the T5 bucketing differs)."""

    scheme: str = "none"
    causal: bool = False
    radius: int = 16
    bias_per_head: bool = False
    t5_num_buckets: int = 32
    t5_max_distance: int = 128
    rope_base: float = 10000.0
    fire_mlp_hidden: int = 32
    cope_max_pos: int = 16
    fire_threshold: float = 512.0


@dataclass(frozen=True)
class CompositionalPlan:
    """The settings of a compositional attention (docs/method.md §1): searches, retrievals and
    the retrieval value width (None: from the layer's heads and width), the value scorer."""

    num_searches: Optional[int] = None
    num_retrievals: Optional[int] = None
    attn_dim: Optional[int] = None
    retrieval_qk_dim: int = 32
    scoring: str = "dot"
    mlp_hidden: Optional[int] = None
    query_from_search: bool = False
    gumbel: bool = False
    gumbel_temperature: float = 1.0
    gumbel_in_eval: bool = False
    gumbel_search: bool = False


@dataclass(frozen=True)
class GeometricPlan:
    """The settings of the Neural Data Router's geometric attention."""

    normalize: bool = True


@dataclass(frozen=True)
class AttentionPlan:
    """One role's attention: its type (``kind``, a name of --encoder-attention-type), the
    settings of that type (None for multihead), its position scheme, and whether it carries
    RealFormer residual logits (--realformer)."""

    kind: str = "multihead"
    positions: PositionPlan = PositionPlan()
    residual_logits: bool = False
    settings: Optional[object] = None


@dataclass(frozen=True)
class GraphPlan:
    """Graph-Transformer encoder layers (from layer 2 on): the attention of their three
    attention parts, the fusion of the four parts, half dimension, shared q/k/v."""

    attention: AttentionPlan
    fusion: str = "weight-gate"
    half_dim: bool = False
    shared_qkv: bool = False


@dataclass(frozen=True)
class CopyPlan:
    """The copy decoder: its V -> V projection (none, full, low-rank) and the low rank."""

    projection: str = "none"
    projection_dim: Optional[int] = None


@dataclass(frozen=True)
class EncoderPlan:
    """The encoder stack: its self-attention, absolute position embeddings kept, tied layers,
    Graph-Transformer layers (None: off), NDR copy-gated layers (``copy_gate_drop``; None: off),
    randomized positions (``random_positions_max_length`` L; 0: off)."""

    self_attention: AttentionPlan
    absolute_positions: bool = True
    share_layers: bool = False
    graph: Optional[GraphPlan] = None
    copy_gate_drop: Optional[float] = None
    random_positions_max_length: int = 0


@dataclass(frozen=True)
class DecoderPlan:
    """The decoder stack: self- and cross-attention, absolute position embeddings kept, tied
    layers, the copy decoder (None: off), randomized positions (``random_positions_max_length``
    L; 0: off)."""

    self_attention: AttentionPlan
    cross_attention: AttentionPlan
    absolute_positions: bool = True
    share_layers: bool = False
    copy: Optional[CopyPlan] = None
    random_positions_max_length: int = 0


@dataclass(frozen=True)
class AbacusPlan:
    """--abacus: the largest id of the tables, the largest training offset."""

    max_id: int = 128
    max_offset: int = 99


@dataclass(frozen=True)
class CouplingPlan:
    """--position-coupling: the task whose layout couples the ids, the largest id."""

    task: str
    max_id: int = 64


@dataclass(frozen=True)
class DigitPositionPlan:
    """The digit-aware positions of an encoder-decoder model, built by the model (coupling's
    table is shared by both stacks): Abacus, position coupling; None: off."""

    abacus: Optional[AbacusPlan] = None
    coupling: Optional[CouplingPlan] = None


@dataclass(frozen=True)
class VariantPlan:
    """What ``parse_options`` returns: the plan of every stack, ``positions`` (``--rel-pos``
    itself, before the per-role overrides: the tagging model's attention parent head), and the
    model's ``digit_positions``."""

    encoder: EncoderPlan
    decoder: DecoderPlan
    positions: PositionPlan
    digit_positions: DigitPositionPlan = DigitPositionPlan()

    def attention(self, role):
        """The AttentionPlan of a role: encoder, decoder, cross or graph (None without
        --graph-encoder)."""
        graph = self.encoder.graph
        return {
            "encoder": self.encoder.self_attention,
            "decoder": self.decoder.self_attention,
            "cross": self.decoder.cross_attention,
            "graph": graph.attention if graph is not None else None,
        }[role]


# The settings of each attention type, from the options (None: the type has none).
ATTENTION_SETTINGS = ChoiceRegistry("--attention-type", ENCODER_ATTENTION_TYPES)
ATTENTION_SETTINGS.register("multihead", lambda options: None)


@ATTENTION_SETTINGS.register("compositional")
def compositional_settings(options):
    return CompositionalPlan(
        options.num_searches,
        options.num_retrievals,
        options.compositional_attn_dim,
        options.retrieval_qk_dim,
        options.retrieval_scoring,
        options.retrieval_mlp_hidden,
        options.retrieval_query_from_search,
        options.retrieval_gumbel,
        options.retrieval_gumbel_temperature,
        options.retrieval_gumbel_in_eval,
        options.retrieval_gumbel_search,
    )


@ATTENTION_SETTINGS.register("geometric")
def geometric_settings(options):
    return GeometricPlan(normalize=not options.geometric_attention_unnormalized)


ATTENTION_SETTINGS.check_complete()


def position_plan(options, scheme, causal=False):
    return PositionPlan(
        scheme,
        causal,
        options.rel_pos_radius,
        options.rel_pos_bias_per_head,
        options.t5_num_buckets,
        options.t5_max_distance,
        options.rope_base,
        options.fire_mlp_hidden,
        options.cope_max_pos,
        options.fire_threshold,
    )


def attention_plan(options, role):
    kind = options.attention_type_for(role)
    return AttentionPlan(
        kind,
        position_plan(options, options.rel_pos_for(role), causal=role == "decoder"),
        residual_logits=options.realformer,
        settings=ATTENTION_SETTINGS[kind](options),
    )


def build_plan(options):
    """The VariantPlan of checked options (a VariantConfig)."""
    graph = None
    if options.graph_encoder:
        graph = GraphPlan(
            attention_plan(options, "graph"),
            options.graph_fusion,
            options.graph_half_dim,
            options.graph_shared_qkv,
        )
    encoder = EncoderPlan(
        attention_plan(options, "encoder"),
        options.absolute_positions("encoder"),
        options.share_encoder_layers,
        graph,
        options.copy_gate_drop if options.encoder_copy_gate else None,
        options.random_positions_max_length,
    )
    copy = None
    if options.copy_decoder:
        copy = CopyPlan(options.copy_projection, options.copy_projection_dim)
    decoder = DecoderPlan(
        attention_plan(options, "decoder"),
        attention_plan(options, "cross"),
        options.absolute_positions("decoder"),
        options.share_decoder_layers,
        copy,
        options.random_positions_max_length,
    )
    return VariantPlan(
        encoder, decoder, position_plan(options, options.rel_pos), digit_position_plan(options)
    )


def digit_position_plan(options):
    abacus = coupling = None
    if options.abacus:
        abacus = AbacusPlan(options.abacus_max_id, options.abacus_max_offset)
    if options.position_coupling:
        coupling = CouplingPlan(options.position_coupling, options.position_coupling_max_id)
    return DigitPositionPlan(abacus, coupling)


# The options only the encoder-decoder model builds (parse_options(digit_positions=True)).
DIGIT_POSITION_OPTIONS = {"abacus": "--abacus", "position_coupling": "--position-coupling"}


def parse_options(args, architecture=None, unavailable=None, digit_positions=False):
    """How every model kind reads its variant options, once, before anything is built:
    ``architecture(args)`` fills what the command line left unset (the model kind's base
    architecture), the options are read and checked, an option the model kind has no place for
    is refused (``unavailable``: option name -> its one-line error), and fairseq's
    --no-token-positional-embeddings is set when no side keeps absolute positions. ``args``: a
    parsed namespace or a hydra config (missing options take their defaults). Returns the
    VariantPlan: the only thing the builders read. ``digit_positions``: whether the model kind
    builds --abacus and --position-coupling (the encoder-decoder model); others refuse them."""
    if architecture is not None:
        architecture(args)
    options = VariantConfig.from_args(args)
    refused = dict(unavailable or {})
    if not digit_positions:
        for name, flag in DIGIT_POSITION_OPTIONS.items():
            refused.setdefault(name, f"{flag} is available for the encoder-decoder model only")
    for name, message in refused.items():
        if getattr(options, name):
            raise PluginConfigError(message)
    options.set_position_embeddings(args)
    return build_plan(options)
