"""Presets of "Making Transformers Solve Compositional Tasks" (Ontañón et al. 2022), named after
the paper's table rows.

- Sizes: ``compgen_{small,large}_{2,4,6}[s]``: small d=64/ffn 256/4 heads, large d=128/ffn 512/8
  heads, l encoder and l decoder layers, ``s`` = weight sharing across layers.
- Compositional attention (Mittal et al.) on these tasks, new rows of ours:
  ``compgen_comp_rel2_eb_c`` (every attention compositional, S = R = 4, rel2-eb, copy decoder)
  and its shared-layer twin ``compgen_comp_rel2_eb_cs``.
- Positions on the small 2-layer model: ``compgen_abs``, ``compgen_rel_{e,b,eb}`` (self-attention)
  and ``compgen_rel2_{e,b,eb}`` (also decoder-to-encoder), each with ``_c`` for the copy decoder.
- Position schemes and the Neural Data Router (docs/method.md §5, §6), on the small 2-layer
  model with the copy decoder: ``compgen_{alibi,t5,rope,fire}_c``
  (the scheme in encoder and decoder self-attention), ``compgen_{alibi,t5,rope,fire}2_c`` (also
  in the decoder-to-encoder attention, as rel2), ``compgen_comp_{alibi,t5,rope,fire}_c`` (the
  same with compositional attention everywhere), ``compgen_rel_eb_nope_c`` (NoPE decoder, rel-eb
  encoder), ``compgen_rel_eb_cope_c`` (CoPE decoder, rel-eb encoder), ``compgen_fire_rand_c``
  (FIRE reading randomized positions), ``compgen_rel2_eb_abacus_c`` and
  ``compgen_rel2_eb_coupled_{add,addneg,reverse,dup}_c`` (rel2-eb-c with Abacus ids or position
  coupling for that column's format) and ``compgen_ndr_c``
  (Neural Data Router encoder, 4 shared layers; rel2-eb decoder).
- COGS as sequence tagging (section 4.5.1, Table 5; the encoder-only ``tagging_transformer``,
  docs/official-code.md O2): ``cogs_tagging_base`` (the notebook's "base": small-2,
  sinusoidal absolute positions, absolute parent head), ``cogs_tagging_rel_eb`` and
  ``cogs_tagging_rel_eb_s`` (rel-eb small-2 and small-2s with the absolute parent head: not
  columns of Table 5, which has abs small-2 and rel-eb small-2s with the attention head; they
  are the tagging twins of the grid's rel-eb and small-2s rows) and ``cogs_tagging_tuned`` (the notebook's "tuned": small-2s, rel-eb radius 16, attention parent
  head; the paper's 0.784 row). ``--parent-head`` overrides the head of any of them. The
  notebook's two models (base, tuned) default to ``--tagging-init official`` (the notebook's
  Keras initialisation of embeddings and tag heads), the twins to fairseq's.
The paper's training defaults are post-norm and dropout 0.1. All options still combine: e.g.
``--arch compgen_large_6s --rel-pos eb --rel-pos-cross --copy-decoder``.
"""

from fairseq.models import register_model_architecture

from .tagging_transformer import tagging_base_architecture
from .variant_transformer import variant_base_architecture

SIZES = {"small": (64, 256, 4), "large": (128, 512, 8)}


def compgen_shape(args, size, layers):
    dim, ffn, heads = SIZES[size]
    for side in ("encoder", "decoder"):
        setattr(args, f"{side}_embed_dim", getattr(args, f"{side}_embed_dim", dim))
        setattr(args, f"{side}_ffn_embed_dim", getattr(args, f"{side}_ffn_embed_dim", ffn))
        setattr(args, f"{side}_attention_heads", getattr(args, f"{side}_attention_heads", heads))
        setattr(args, f"{side}_layers", getattr(args, f"{side}_layers", layers))
    args.dropout = getattr(args, "dropout", 0.1)


def _register(
    name, size, layers, shared=False, rel_pos=None, cross=False, copy=False, attention=None
):
    @register_model_architecture("variant_transformer", name)
    def arch(args):
        compgen_shape(args, size, layers)
        if attention and getattr(args, "attention_type", None) is None:
            args.attention_type = attention
        if shared:
            args.share_encoder_layers = args.share_decoder_layers = True
        if rel_pos and getattr(args, "rel_pos", None) is None:
            args.rel_pos = rel_pos
        if cross:
            args.rel_pos_cross = True
        if copy:
            args.copy_decoder = True
        variant_base_architecture(args)

    arch.__name__ = name


for _size in SIZES:
    for _layers in (2, 4, 6):
        _register(f"compgen_{_size}_{_layers}", _size, _layers)
        _register(f"compgen_{_size}_{_layers}s", _size, _layers, shared=True)

for _copy in (False, True):
    _suffix = "_c" if _copy else ""
    _register(f"compgen_abs{_suffix}", "small", 2, copy=_copy)
    for _mode in ("e", "b", "eb"):
        _register(f"compgen_rel_{_mode}{_suffix}", "small", 2, rel_pos=_mode, copy=_copy)
        _register(
            f"compgen_rel2_{_mode}{_suffix}", "small", 2, rel_pos=_mode, cross=True, copy=_copy
        )

_register(
    "compgen_comp_rel2_eb_c",
    "small",
    2,
    rel_pos="eb",
    cross=True,
    copy=True,
    attention="compositional",
)
_register(
    "compgen_comp_rel2_eb_cs",
    "small",
    2,
    shared=True,
    rel_pos="eb",
    cross=True,
    copy=True,
    attention="compositional",
)


# The position schemes of the length-generalisation literature and the Neural Data Router
# on the small-2 model, each with the copy decoder (as the best seed row, rel2-eb-c).
for _scheme in ("alibi", "t5", "rope", "fire"):
    _register(f"compgen_{_scheme}_c", "small", 2, rel_pos=_scheme, copy=True)
    _register(
        f"compgen_comp_{_scheme}_c",
        "small",
        2,
        rel_pos=_scheme,
        copy=True,
        attention="compositional",
    )
    # "2" as in rel2: the scheme in the decoder-to-encoder attention too (--rel-pos-cross)
    _register(f"compgen_{_scheme}2_c", "small", 2, rel_pos=_scheme, cross=True, copy=True)


def _register_decoder_scheme(name, scheme):
    """rel-eb-c with SCHEME instead of rel-eb in the decoder's self-attention: rel-eb encoder,
    no relative cross-attention, copy decoder, small-2."""

    @register_model_architecture("variant_transformer", name)
    def arch(args):
        if getattr(args, "rel_pos", None) is None:
            args.rel_pos = "eb"
        if getattr(args, "decoder_rel_pos", None) is None:
            args.decoder_rel_pos = scheme
        args.copy_decoder = True
        compgen_shape(args, "small", 2)
        variant_base_architecture(args)

    arch.__name__ = name


@register_model_architecture("variant_transformer", "compgen_fire_rand_c")
def compgen_fire_rand_c(args):
    """compgen_fire_c with randomized positions (Ruoss et al. 2023): FIRE reads positions drawn
    as a sorted random subset of 0..255 instead of 0..T-1, the combination Zhou et al. (2024)
    use for length generalisation on addition. 256 is about five times the longest test
    sequence of the algorithmic columns (Dup's 48-token targets), as Ruoss et al.'s range is
    several times their longest test length."""
    if getattr(args, "random_positions_max_length", None) in (None, 0):
        args.random_positions_max_length = 256
    if getattr(args, "rel_pos", None) is None:
        args.rel_pos = "fire"
    args.copy_decoder = True
    compgen_shape(args, "small", 2)
    variant_base_architecture(args)


def _register_digit_positions(name, abacus=False, coupling=None):
    """rel2-eb-c with input-side digit positions added (one factor): Abacus ids (McLeish et al.
    2024) or position coupling (Cho et al. 2024), which needs the column's format (COUPLING)."""

    @register_model_architecture("variant_transformer", name)
    def arch(args):
        if abacus:
            args.abacus = True
        if coupling and getattr(args, "position_coupling", None) is None:
            args.position_coupling = coupling
        args.rel_pos = getattr(args, "rel_pos", None) or "eb"
        args.rel_pos_cross = args.copy_decoder = True
        compgen_shape(args, "small", 2)
        variant_base_architecture(args)

    arch.__name__ = name


_register_digit_positions("compgen_rel2_eb_abacus_c", abacus=True)
for _task in ("add", "addneg", "reverse", "dup"):
    _register_digit_positions(f"compgen_rel2_eb_coupled_{_task}_c", coupling=_task)


# NoPE in the decoder (Kazemnejad et al. 2023): no position information at all there (no
# absolute embeddings, no relative terms, no rel2); CoPE (Golovneva et al. 2024), defined for
# causal attention only, in the decoder's self-attention.
_register_decoder_scheme("compgen_rel_eb_nope_c", "nope")
_register_decoder_scheme("compgen_rel_eb_cope_c", "cope")


@register_model_architecture("variant_transformer", "compgen_ndr_c")
def compgen_ndr_c(args):
    """The Neural Data Router's encoder (one copy-gated layer with geometric attention, shared
    over 4 layers, no other positions) under the best seed row's decoder (2 layers, rel2-eb, copy
    decoder), small widths."""
    args.encoder_layers = getattr(args, "encoder_layers", 4)
    if getattr(args, "encoder_attention_type", None) is None:
        args.encoder_attention_type = "geometric"
    args.encoder_copy_gate = args.share_encoder_layers = True
    if getattr(args, "rel_pos", None) is None:
        args.rel_pos = "eb"
    if getattr(args, "encoder_rel_pos", None) is None:
        args.encoder_rel_pos = "nope"
    args.rel_pos_cross = args.copy_decoder = True
    compgen_shape(args, "small", 2)
    variant_base_architecture(args)


def _register_tagging(name, rel_pos=None, shared=False, parent_head="absolute", init="fairseq"):
    @register_model_architecture("tagging_transformer", name)
    def arch(args):
        compgen_shape(args, "small", 2)
        if shared:
            args.share_encoder_layers = True
        if rel_pos and getattr(args, "rel_pos", None) is None:
            args.rel_pos = rel_pos
        if getattr(args, "parent_head", None) is None:
            args.parent_head = parent_head
        if getattr(args, "tagging_init", None) is None:
            args.tagging_init = init
        tagging_base_architecture(args)

    arch.__name__ = name


# The notebook's two models get the notebook's initialisation (with it the tuned model
# reproduces Table 5: docs/compgen-results.md); the grid's tagging twins keep fairseq's.
_register_tagging("cogs_tagging_base", init="official")
_register_tagging("cogs_tagging_rel_eb", rel_pos="eb")
_register_tagging("cogs_tagging_rel_eb_s", rel_pos="eb", shared=True)
_register_tagging(
    "cogs_tagging_tuned", rel_pos="eb", shared=True, parent_head="attention", init="official"
)
