"""The attention types of ``--attention-type`` (and its per-role overrides), and the one function
that builds the attention of a role from its AttentionPlan (``variant_config.py``).

Adding an attention type is one module file with a ``from_plan(plan, spec)`` factory (``plan``:
the role's AttentionPlan, whose ``settings`` are the type's own), its name in
``option_choices.py`` (the option's vocabulary) and one line in ``ATTENTION_FACTORIES``. Modules
check their own shapes (``split_width``); this builder, which knows the role, turns their errors
into a one-line error that names the flags.
"""

from dataclasses import dataclass

from fairseq_plugins.option_choices import (
    ATTENTION_TYPES,
    ENCODER_ATTENTION_TYPES,
    ChoiceRegistry,
)
from plugin_tools.errors import PluginConfigError

from .biased_attention import AttentionShapeError
from .compositional_attention import CompositionalAttention
from .geometric_attention import GeometricAttention
from .sdpa_multihead_attention import build_multihead_attention

# The module factory of every name of --encoder-attention-type (a superset of --attention-type's).
ATTENTION_FACTORIES = ChoiceRegistry("--encoder-attention-type", ENCODER_ATTENTION_TYPES)
ATTENTION_FACTORIES.register("multihead", build_multihead_attention)
ATTENTION_FACTORIES.register("compositional", CompositionalAttention.from_plan)
ATTENTION_FACTORIES.register("geometric", GeometricAttention.from_plan)
ATTENTION_FACTORIES.check_complete()

ATTENTION_ROLES = ("encoder", "decoder", "cross", "graph")


@dataclass
class AttentionSpec:
    """One attention of a layer. role: encoder / decoder (self-attention), cross (decoder to
    encoder), graph (the parts of a Graph-Transformer encoder layer: queries and keys/values from
    the same positions, different states)."""

    role: str
    embed_dim: int
    num_heads: int
    dropout: float
    kdim: int | None = None
    inner_dim: int | None = None  # Graph-Transformer half dimension
    q_noise: float = 0.0
    qn_block_size: int = 8

    @property
    def side(self):
        return "decoder" if self.role in ("decoder", "cross") else "encoder"

    @property
    def self_attention(self):
        return self.role in ("encoder", "decoder")

    @property
    def encoder_decoder_attention(self):
        return self.role == "cross"

    def module_kwargs(self):
        """The constructor arguments every attention module takes alike."""
        return dict(
            dropout=self.dropout,
            self_attention=self.self_attention,
            encoder_decoder_attention=self.encoder_decoder_attention,
            kdim=self.kdim,
            vdim=self.kdim,
            q_noise=self.q_noise,
            qn_block_size=self.qn_block_size,
        )


def build_attention(plan, spec):
    """The attention module of ``spec.role`` that its AttentionPlan ``plan`` chooses."""
    name = plan.kind
    if name not in (ENCODER_ATTENTION_TYPES if spec.role == "encoder" else ATTENTION_TYPES):
        raise PluginConfigError(
            f"attention type {name!r} is for the encoder's self-attention only "
            f"(--encoder-attention-type {name}; not with --graph-encoder)"
        )
    try:
        return ATTENTION_FACTORIES[name](plan, spec)
    except AttentionShapeError as error:
        raise PluginConfigError(describe_shape_error(error, plan.settings, spec)) from None
    except ValueError as error:  # the modules' own checks of a single option name its flag
        raise PluginConfigError(str(error)) from None


def describe_shape_error(error, settings, spec):
    """The one-line error of a width that the heads, searches or retrievals do not divide;
    ``settings``: the attention type's (searches and retrievals given or not)."""
    side, heads_flag = spec.side, f"--{spec.side}-attention-heads"
    given = {
        "searches": getattr(settings, "num_searches", None),
        "retrievals": getattr(settings, "num_retrievals", None),
    }
    flag = heads_flag if given.get(error.parts_name) is None else f"--num-{error.parts_name}"
    if error.parts < 1:
        return f"{flag} must be >= 1 (got {error.parts})"
    half = spec.inner_dim not in (None, spec.embed_dim)
    role = "encoder" if spec.role == "graph" else spec.role
    if error.parts_name == "heads":
        if half:
            return (
                f"--graph-half-dim needs d/2 = {spec.embed_dim / 2} divisible by "
                f"{heads_flag} {error.parts}"
            )
        return f"--{side}-embed-dim {spec.embed_dim} is not divisible by {heads_flag} {error.parts}"
    if error.parts_name == "searches":
        source = f"--{side}-embed-dim / 2, --graph-half-dim" if half else f"--{side}-embed-dim"
        return (
            f"{flag} {error.parts} (the number of searches) does not divide the {role} attention "
            f"width {error.width} ({source})"
        )
    return (
        f"{flag} {error.parts} (the number of retrievals) does not divide the {role} retrieval "
        f"value width {error.width} (--compositional-attn-dim, default: the attention width)"
    )
