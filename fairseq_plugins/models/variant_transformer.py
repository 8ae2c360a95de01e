"""The plugin's encoder-decoder model family: fairseq's Transformer with every variant option
(attention type, relative positions, copy decoder, layer sharing, Graph-Transformer encoder layers,
randomized positions, Abacus embeddings and position coupling).

Registered as ``variant_transformer``; the named presets (``presets_*.py``) are architectures of
this one model. The options are parsed and checked once, in ``build_model``, into a frozen
VariantPlan (``variant_config.py``); the encoder gets its EncoderPlan, the decoder its DecoderPlan,
and each layer the AttentionPlans of its own attentions.
"""

import contextlib
import contextvars

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

from fairseq_plugins.modules.biased_attention import BiasedAttention
from fairseq_plugins.modules.copy_generator import CopyGenerator
from fairseq_plugins.modules.digit_positions import (
    AbacusEmbedding,
    CouplingSymbols,
    DigitDraws,
    DigitPositionVectors,
    PositionCoupling,
    digit_indices,
)
from fairseq_plugins.modules.graph_encoder import build_graph_encoder_layer, run_graph_layers
from fairseq_plugins.modules.keras_init import keras_default_init, keras_default_tables
from fairseq_plugins.modules.layer_sharing import tie_parameters
from fairseq_plugins.modules.neural_data_router import CopyGateEncoderLayer
from fairseq_plugins.modules.randomized_positions import (
    RandomizedPositions,
    SampledPositions,
    embed_at_sampled_positions,
)
from fairseq_plugins.modules.relative_positions import RelativePositionBias
from fairseq_plugins.modules.residual_attention import share_residual_logits
from fairseq_plugins.modules.variant_layers import (
    VariantDecoderLayer,
    VariantEncoderLayer,
    wrap_layer,
)
from fairseq_plugins.option_choices import SEQ2SEQ_INITS
from fairseq_plugins.variant_config import VariantConfig, parse_options, set_variant_defaults
from plugin_tools.errors import PluginConfigError


class VariantTransformerEncoder(TransformerEncoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, plan, return_fc=False):
        """``plan``: the EncoderPlan."""
        # Read by build_encoder_layer, which fairseq calls inside super().__init__; fairseq builds
        # the layers in order, without an index (_layers_built).
        self.plan, self._layers_built = plan, 0
        super().__init__(cfg, dictionary, embed_tokens, return_fc=return_fc)
        # RealFormer: one carry through the self-attentions (reset around every forward)
        streams = [([layer.self_attn for layer in self.layers], plan.self_attention)]
        apply_stack_plan(self, plan, streams)
        self.random_positions = attach_random_positions(self, plan.random_positions_max_length)
        # --abacus, --position-coupling: built by the model (attach_digit_positions)
        self.abacus = self.coupling = self.digit_draws = None

    def build_encoder_layer(self, cfg):
        index = self._layers_built
        self._layers_built += 1
        plan = self.plan
        if plan.graph is not None:
            return build_graph_encoder_layer(
                index, cfg, plan.self_attention, plan.graph, self.return_fc
            )
        if plan.copy_gate_drop is not None:
            layer = CopyGateEncoderLayer(
                cfg, plan.self_attention, plan.copy_gate_drop, return_fc=self.return_fc
            )
            return wrap_layer(layer, cfg)
        layer = VariantEncoderLayer(cfg, plan.self_attention, return_fc=self.return_fc)
        return wrap_layer(layer, cfg)

    def forward(
        self, src_tokens, src_lengths=None, return_all_hiddens=False, token_embeddings=None
    ):
        positions = None
        if self.random_positions is not None:  # one draw for the embedding and every layer
            positions = self.random_positions(src_tokens.eq(self.padding_idx))
        offset, start = self.draw_digit_positions(src_tokens)
        with (
            reset_carries(self.carries),
            drawn_positions(self.sampled_positions, positions),
            drawn_digit_positions(self.digit_draws, src_tokens, offset, start),
        ):
            if self.plan.graph is not None:
                out = self.forward_graph(src_tokens, return_all_hiddens, token_embeddings)
            else:
                out = self.forward_scriptable(
                    src_tokens, src_lengths, return_all_hiddens, token_embeddings
                )
        out["src_tokens"] = [src_tokens]  # the copy decoder scatters onto source tokens
        if positions is not None:  # the keys of rel2 cross-attention
            out["src_positions"] = [positions]
        if self.digit_draws is not None:  # the decoder's Abacus / coupled ids use the same draws
            out["abacus_offset"] = [torch.tensor(offset)]
            if start is not None:
                out["coupling_start"] = [start]
        return out

    def draw_digit_positions(self, src_tokens):
        """(Abacus offset, coupling starts (B,) or None) of this batch: one offset per batch,
        one start per sentence, random in training only (the modules' ``training``)."""
        offset = 0 if self.abacus is None else self.abacus.sample_offset()
        start = None if self.coupling is None else self.coupling.draw_start(src_tokens)
        return offset, start

    # What the encoder adds to fairseq's encoder_out: one row per sentence (reordered with the
    # beams), or one value per batch (kept).
    SENTENCE_KEYS = ("src_positions", "coupling_start")
    BATCH_KEYS = ("abacus_offset",)

    def reorder_encoder_out(self, encoder_out, new_order):
        """fairseq's reordering, and the randomized positions' (``src_positions``) and coupling
        starts with it."""
        reordered = super().reorder_encoder_out(encoder_out, new_order)
        for key in self.SENTENCE_KEYS:
            if encoder_out.get(key):
                reordered[key] = [encoder_out[key][0].index_select(0, new_order)]
        for key in self.BATCH_KEYS:
            if encoder_out.get(key):
                reordered[key] = encoder_out[key]
        return reordered

    def forward_graph(self, src_tokens, return_all_hiddens=False, token_embeddings=None):
        """fairseq's forward_scriptable with the graph encoder's layer loop (run_graph_layers)."""
        padding_mask = src_tokens.eq(self.padding_idx)
        has_pads = bool(padding_mask.any())
        x, embedding = self.forward_embedding(src_tokens, token_embeddings)
        if has_pads:
            x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
        x = x.transpose(0, 1)
        x, states = run_graph_layers(
            self.layers, x, padding_mask if has_pads else None, return_all_hiddens
        )
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
        self, cfg, dictionary, embed_tokens, plan, no_encoder_attn=False, output_projection=None
    ):
        """``plan``: the DecoderPlan."""
        self.plan = plan  # read by build_decoder_layer, which fairseq calls inside __init__
        super().__init__(
            cfg,
            dictionary,
            embed_tokens,
            no_encoder_attn=no_encoder_attn,
            output_projection=output_projection,
        )
        # RealFormer: decoder self-attention and cross-attention carry separately
        streams = [([layer.self_attn for layer in self.layers], plan.self_attention)]
        if not no_encoder_attn:
            streams.append(([layer.encoder_attn for layer in self.layers], plan.cross_attention))
        apply_stack_plan(self, plan, streams)
        self.random_positions = attach_random_positions(self, plan.random_positions_max_length)
        # --abacus, --position-coupling: built by the model (attach_digit_positions)
        self.abacus = self.coupling = self.digit_draws = None
        # Decoding draws the positions of this many steps at the first (the target's length is
        # not known yet): the longest target the model takes.
        self.random_positions_budget = min(
            plan.random_positions_max_length, self.max_target_positions
        )
        if plan.copy is not None:
            if no_encoder_attn:
                raise PluginConfigError("--copy-decoder needs an encoder (not available for LMs)")
            self.copy_generator = CopyGenerator.from_plan(
                plan.copy, self.output_embed_dim, cfg.encoder.embed_dim, len(dictionary)
            )
        else:
            self.copy_generator = None

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        plan = self.plan
        layer = VariantDecoderLayer(cfg, plan.self_attention, plan.cross_attention, no_encoder_attn)
        return wrap_layer(layer, cfg)

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, **kw):
        positions = self.draw_positions(prev_output_tokens, incremental_state)
        encoder_positions = None
        if positions is not None and encoder_out is not None and encoder_out.get("src_positions"):
            encoder_positions = encoder_out["src_positions"][0]
        with (
            reset_carries(self.carries),
            drawn_positions(self.sampled_positions, positions, encoder_positions),
            self.encoder_digit_draws(encoder_out),
        ):
            return super().extract_features(
                prev_output_tokens, encoder_out, incremental_state, **kw
            )

    def encoder_digit_draws(self, encoder_out):
        """The context in which the Abacus / coupled vectors use the encoder's draws of this
        batch (and its source tokens) from ``encoder_out`` (nothing when off)."""
        if self.digit_draws is None:
            return contextlib.nullcontext()
        if encoder_out is None or not encoder_out.get("abacus_offset"):
            raise RuntimeError("--abacus / --position-coupling: the decoder needs the encoder_out")
        start = encoder_out["coupling_start"][0] if encoder_out.get("coupling_start") else None
        offset = int(encoder_out["abacus_offset"][0])
        return self.digit_draws.drawn(encoder_out["src_tokens"][0], offset, start)

    def draw_positions(self, prev_output_tokens, incremental_state):
        """Randomized positions of the target (B, T), or None when off: one subset per sentence
        of its own length in a full pass (the paper's training); in incremental decoding the
        positions of every step so far, from one subset of ``random_positions_budget`` drawn at
        the first step and reordered with the beams (fairseq's incremental state)."""
        if self.random_positions is None:
            return None
        if incremental_state is None:
            return self.random_positions(prev_output_tokens.eq(self.padding_idx))
        return self.random_positions.decoding_positions(
            incremental_state,
            prev_output_tokens.size(0),
            1,  # fairseq's incremental step: one new token, the cache holds the others
            self.random_positions_budget,
            prev_output_tokens.device,
        )

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
        if self.copy_generator is not None:
            return self.copy_generator.decoder_output(logits, x, encoder_out), extra
        return logits, extra

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        if self.copy_generator is not None:
            return CopyGenerator.normalized_probs(net_output, log_probs)
        return super().get_normalized_probs(net_output, log_probs, sample)


def apply_stack_plan(stack, plan, attention_streams):
    """What its plan (an EncoderPlan or DecoderPlan) changes in a built encoder / decoder stack:
    no absolute position embeddings where the side's self-attention has its own positions (e.g.
    --decoder-rel-pos nope), tied layers (--share-*-layers), and one ResidualLogits carry per
    stream of attentions whose AttentionPlan carries residual logits (--realformer) in
    ``stack.carries``; ``attention_streams``: (attentions in layer order, their AttentionPlan)."""
    if not plan.absolute_positions:
        stack.embed_positions = None
    if plan.share_layers:
        tie_parameters(stack.layers)
    stack.carries = [
        share_residual_logits(attentions)
        for attentions, attention in attention_streams
        if attention.residual_logits
    ]


def attach_random_positions(stack, max_length):
    """--random-positions-max-length L (0: off, returns None): the stack's RandomizedPositions,
    and ``stack.sampled_positions``, the positions of the current forward, handed to every
    attention of its layers and to its absolute position embedding (a forward hook)."""
    stack.sampled_positions = None
    if not max_length:
        return None
    sampled = SampledPositions()
    for module in stack.layers.modules():
        if isinstance(module, BiasedAttention):
            module.sampled_positions = sampled
    if stack.embed_positions is not None:
        try:
            embed_at_sampled_positions(stack.embed_positions, sampled, max_length)
        except ValueError as error:
            raise PluginConfigError(str(error)) from None
    stack.sampled_positions = sampled
    return RandomizedPositions(max_length)


def drawn_positions(sampled, positions, encoder_positions=None):
    """The context in which a stack's attentions read ``positions`` (nothing when off)."""
    if sampled is None or positions is None:
        return contextlib.nullcontext()
    return sampled.drawn(positions, encoder_positions)


def drawn_digit_positions(draws, src_tokens, offset, start):
    """The context in which a stack's Abacus / coupled vectors read this batch's draws."""
    if draws is None:
        return contextlib.nullcontext()
    return draws.drawn(src_tokens, offset, start)


def attach_digit_positions(model, plan, src_dict, tgt_dict):
    """--abacus and --position-coupling (``plan``: the DigitPositionPlan) on a built model: an
    AbacusEmbedding per stack (``encoder.abacus``, ``decoder.abacus``; the encoder counts digit
    runs from their end, the decoder from their start), one PositionCoupling shared by both
    (``encoder.coupling`` is ``decoder.coupling``), and each stack's DigitPositionVectors added
    where fairseq adds the absolute positions: installed as ``embed_positions`` where the stack
    has none, else added to its output (a forward hook, after the randomized positions' own)."""
    if plan.abacus is None and plan.coupling is None:
        return
    encoder, decoder = model.encoder, model.decoder
    dims = encoder.embed_tokens.embedding_dim, decoder.embed_dim
    try:
        if plan.abacus is not None:
            for stack, dictionary, side, dim in (
                (encoder, src_dict, "source", dims[0]),
                (decoder, tgt_dict, "target", dims[1]),
            ):
                stack.abacus = AbacusEmbedding(
                    digit_indices(dictionary, side),
                    dim,
                    plan.abacus.max_id,
                    plan.abacus.max_offset,
                    count_from_end=stack is encoder,
                )
        if plan.coupling is not None:
            task = plan.coupling.task
            if dims[0] != dims[1]:
                raise ValueError(
                    f"--position-coupling {task} needs equal encoder and decoder embedding "
                    f"dimensions (one table; got {dims[0]} and {dims[1]})"
                )
            # pad and eos are 1 and 2 in every fairseq dictionary: the source's symbols serve
            # the decoder too
            symbols = CouplingSymbols.for_task(task, src_dict)
            coupling = PositionCoupling(task, symbols, dims[0], plan.coupling.max_id)
            encoder.coupling = decoder.coupling = coupling
    except ValueError as error:
        raise PluginConfigError(str(error)) from None
    for stack, longest in (
        (encoder, encoder.max_source_positions),
        (decoder, decoder.max_target_positions),
    ):
        stack.digit_draws = DigitDraws()
        vectors = DigitPositionVectors(
            stack.abacus, stack.coupling, stack.digit_draws, stack is decoder, longest
        )
        if stack.embed_positions is None:
            stack.embed_positions = vectors
        else:
            vectors.add_to(stack.embed_positions)


@contextlib.contextmanager
def reset_carries(carries):
    """RealFormer carries start empty at the first layer and are not kept past the forward."""
    for carry in carries:
        carry.reset()
    try:
        yield
    finally:
        for carry in carries:
            carry.reset()


# The plugin's one hand-off that is not an argument: fairseq's build_model calls the classmethods
# build_encoder/build_decoder with (cfg, dictionary, embeddings) only, so the VariantPlan that
# build_model parsed reaches them through this variable, set for the duration of that one call,
# instead of being parsed again from cfg. (Passing it another way would mean re-implementing
# fairseq's TransformerModel.build_model: its embedding sharing, FSDP and activation-checkpointing
# logic.) Everything below the two classmethods is handed its slice as an argument.
_plan_being_built = contextvars.ContextVar("variant_plan_being_built", default=None)


def plan_being_built():
    plan = _plan_being_built.get()
    if plan is None:
        raise RuntimeError("build the encoder/decoder through VariantTransformerModel.build_model")
    return plan


def parse_variant_options(args, task):
    """The VariantPlan of a translation model, checked once; errors a user can fix are raised
    before anything is built or written."""
    plan = parse_options(args, variant_base_architecture, digit_positions=True)
    if plan.decoder.copy is not None and task.source_dictionary != task.target_dictionary:
        raise PluginConfigError(
            "--copy-decoder needs a joined source/target dictionary "
            "(run fairseq-preprocess with --joined-dictionary)"
        )
    return plan


@register_model("variant_transformer")
class VariantTransformerModel(TransformerModel):
    """Transformer with Compositional Attention, relative positions, copy decoder, layer sharing
    and Graph-Transformer encoder layers as orthogonal options."""

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        gen_parser_from_dataclass(parser, VariantConfig(), delete_default=True)
        parser.add_argument(
            "--seq2seq-init",
            choices=SEQ2SEQ_INITS,
            help="initialisation of the token embeddings and the output layers (output "
            "projection, copy decoder): fairseq's, or the official notebook's Keras defaults; "
            "official-dense: also every other linear layer (Glorot-uniform, zero bias) and the "
            "relative-position tables (uniform +-0.05), as the notebook (default fairseq)",
        )
        # The notebook path (docs/compgen.md, "The authors' notebook and our pipeline"); the
        # defaults leave the model as it was.
        parser.add_argument(
            "--layernorm-eps",
            type=float,
            metavar="EPS",
            help="epsilon of every LayerNorm of the model (default: fairseq's 1e-5; the "
            "authors' notebook: 1e-6)",
        )
        parser.add_argument(
            "--decoder-output-bias",
            action="store_true",
            help="give the (untied) output projection a bias, zero at the start, as the "
            "notebook's final Dense layer (fairseq's has none)",
        )
        parser.add_argument(
            "--copy-attend-padding",
            action="store_true",
            help="copy decoder: do not mask source padding in the copy attention, as the "
            "notebook (padded positions give their mass to the padding symbol); no effect "
            "without --copy-decoder",
        )

    @classmethod
    def build_model(cls, args, task):
        check_notebook_options(args)
        plan = parse_variant_options(args, task)
        token = _plan_being_built.set(plan)
        try:
            model = super().build_model(args, task)
        finally:
            _plan_being_built.reset(token)
        attach_digit_positions(
            model, plan.digit_positions, task.source_dictionary, task.target_dictionary
        )
        apply_notebook_options(model, args)
        init = getattr(args, "seq2seq_init", None)  # older checkpoints lack it
        if init in ("official", "official-dense"):
            official_seq2seq_init(model, dense=init == "official-dense")
        return model

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return VariantTransformerEncoder(cfg, src_dict, embed_tokens, plan_being_built().encoder)

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return VariantTransformerDecoder(
            cfg,
            tgt_dict,
            embed_tokens,
            plan_being_built().decoder,
            no_encoder_attn=cfg.no_cross_attention,
        )


def check_notebook_options(args):
    """One-line errors for bad values of the notebook-path options."""
    eps = getattr(args, "layernorm_eps", None)
    if eps is not None and not eps > 0:
        raise PluginConfigError(f"--layernorm-eps {eps}: must be a positive number")


def apply_notebook_options(model, args):
    """--layernorm-eps on every LayerNorm of MODEL, --decoder-output-bias (a zero bias on the
    untied output projection) and --copy-attend-padding on the copy decoder."""
    eps = getattr(args, "layernorm_eps", None)
    if eps is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.eps = eps
    decoder = model.decoder
    if getattr(args, "decoder_output_bias", False):
        projection = decoder.output_projection
        if not isinstance(projection, torch.nn.Linear) or projection.weight is getattr(
            decoder.embed_tokens, "weight", None
        ):
            raise PluginConfigError(
                "--decoder-output-bias needs an untied output projection (drop "
                "--share-decoder-input-output-embed / --share-all-embeddings)"
            )
        if projection.bias is None:
            projection.bias = torch.nn.Parameter(
                projection.weight.new_zeros(projection.out_features)
            )
    if getattr(args, "copy_attend_padding", False) and decoder.copy_generator is not None:
        decoder.copy_generator.attend_padding = True


def official_seq2seq_init(model, dense=False):
    """The layers seq2seq.ipynb builds from Keras layers, with Keras's defaults: the token
    embeddings, the output projection (when not tied to an embedding) and the copy decoder's
    Dense layers (query, gate and the optional V -> V projection). DENSE (official-dense): every
    other nn.Linear of the model too, and the relative-position tables (Keras Embeddings)."""
    decoder = model.decoder
    linears = []
    if isinstance(decoder.output_projection, torch.nn.Linear):
        linears.append(decoder.output_projection)
    if decoder.copy_generator is not None:
        linears += [m for m in decoder.copy_generator.modules() if isinstance(m, torch.nn.Linear)]
    if dense:
        linears += [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    keras_default_init([model.encoder.embed_tokens, decoder.embed_tokens], linears)
    if dense:
        keras_default_tables(
            [
                p
                for m in model.modules()
                if isinstance(m, RelativePositionBias)
                for p in (m.embeddings, m.bias)
            ]
        )


@register_model_architecture("variant_transformer", "variant_transformer")
def variant_base_architecture(args):
    set_variant_defaults(args)
    if getattr(args, "seq2seq_init", None) is None:
        args.seq2seq_init = "fairseq"
    base_architecture(args)
