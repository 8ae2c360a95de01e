"""COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1, Table 5): an encoder-only
Transformer with five heads that tag every input token (parent, role, category, noun determiner,
verb name); the logical form is rebuilt from the tags (``plugin_tools/cogs_tags.py``).

The official model (``cogs_tagging.ipynb``, docs/official-code.md O2):

- the encoder is :class:`VariantTransformerEncoder`, so relative positions, compositional
  attention, layer sharing and graph layers combine with tagging; post-norm, embeddings scaled by
  sqrt(d), dropout on embeddings and sublayers (fairseq's defaults, as the official);
- role, category, noun determiner and verb name: one Linear(d, |tag vocabulary|) each, read from
  the final encoder output, no dropout;
- parent: ``--parent-head {absolute,relative,attention}`` (``modules/parent_heads.py``);
- ``--tagging-init official`` initialises the token embeddings and the four tag heads as the
  notebook's Keras layers are by default (embeddings uniform in [-0.05, 0.05]; heads Glorot-uniform
  with zero biases) instead of fairseq's (embeddings normal with std d^-0.5, 4.3 times larger at
  d = 64; heads PyTorch's Linear default; ``modules/keras_init.py``). The encoder's layers keep
  fairseq's initialisation.

Registered as ``tagging_transformer`` (task ``cogs_tagging``, criterion ``cogs_tagging``); the
paper's rows are architectures in ``presets_compositional_generalization.py``. The output is a
dict {row: logits (B, T, C)} plus the padding mask.
"""

import torch
import torch.nn as nn
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import FairseqEncoderModel, register_model, register_model_architecture
from fairseq.models.transformer import (
    Embedding,
    TransformerConfig,
    TransformerModel,
    base_architecture,
)

from fairseq_plugins.modules.keras_init import keras_default_init
from fairseq_plugins.modules.parent_heads import build_parent_head
from fairseq_plugins.option_choices import LAYER_INITS, PARENT_HEADS
from fairseq_plugins.variant_config import VariantConfig, parse_options, set_variant_defaults
from plugin_tools.cogs_tags import ROWS, TAG_ROWS
from plugin_tools.errors import PluginConfigError

from .variant_transformer import VariantTransformerEncoder


@register_model("tagging_transformer")
class TaggingTransformerModel(FairseqEncoderModel):
    """Encoder-only Transformer with the five COGS tagging heads."""

    def __init__(self, encoder, parent_head, tag_heads):
        super().__init__(encoder)
        self.parent_head = parent_head
        self.tag_heads = tag_heads  # nn.ModuleDict: row -> Linear

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        gen_parser_from_dataclass(parser, VariantConfig(), delete_default=True)
        parser.add_argument(
            "--parent-head",
            choices=PARENT_HEADS,
            help="parent head: absolute index, relative offset, or the weights of a new "
            "one-head attention (default absolute)",
        )
        parser.add_argument(
            "--tagging-longest",
            type=int,
            metavar="L",
            help="longest sentence L, sizes the absolute/relative parent heads "
            "(default: the task's data, all splits)",
        )
        parser.add_argument(
            "--tagging-init",
            choices=LAYER_INITS,
            help="initialisation of the token embeddings and tag heads: fairseq's, or the "
            "official notebook's Keras defaults (default fairseq)",
        )

    @classmethod
    def build_model(cls, args, task):
        plan = parse_options(
            args,
            tagging_base_architecture,
            unavailable={"copy_decoder": "--copy-decoder: the tagging model has no decoder"},
        )
        if args.tagging_longest is None:
            args.tagging_longest = task.longest  # stored in the checkpoint's args
        cfg = TransformerConfig.from_namespace(args)
        src_dict = task.source_dictionary
        embed = Embedding(len(src_dict), cfg.encoder.embed_dim, src_dict.pad())
        encoder = VariantTransformerEncoder(cfg, src_dict, embed, plan.encoder)
        dim = cfg.encoder.embed_dim
        try:
            parent = build_parent_head(args.parent_head, dim, args.tagging_longest, plan.positions)
        except ValueError as e:
            raise PluginConfigError(str(e)) from None
        heads = nn.ModuleDict({row: nn.Linear(dim, len(task.tag_dicts[row])) for row in TAG_ROWS})
        if args.tagging_init == "official":
            keras_default_init([embed], heads.values())
        return cls(encoder, parent, heads)

    def forward(self, src_tokens, src_lengths=None, **kwargs):
        """{"parent": (B, T, C_parent), row: (B, T, |vocab|) for the four tag rows,
        "padding_mask": (B, T)}, all logits."""
        out = self.encoder(src_tokens, src_lengths)
        features = out["encoder_out"][0].transpose(0, 1)  # (B, T, d)
        padding_mask = src_tokens.eq(self.encoder.padding_idx)
        logits = {"parent": self.parent_head(features, padding_mask)}
        for row in TAG_ROWS:
            logits[row] = self.tag_heads[row](features)
        logits["padding_mask"] = padding_mask
        return logits

    def get_normalized_probs(self, net_output, log_probs, sample=None):
        """{row: (log-)probabilities} of the five heads."""
        fn = torch.log_softmax if log_probs else torch.softmax
        return {row: fn(net_output[row].float(), dim=-1) for row in ROWS}

    def targets(self, sample):
        """{row: class targets (B, T)} with IGNORE (-100) at padding; the parent targets in the
        classes of this model's parent head."""
        padding_mask = sample["net_input"]["src_tokens"].eq(self.encoder.padding_idx)
        longest = getattr(self.parent_head, "longest", None)
        if longest is not None and padding_mask.size(1) > longest:
            raise PluginConfigError(
                f"a sentence of {padding_mask.size(1)} tokens is longer than the {longest} that "
                f"the {self.parent_head.kind} parent head was built for (--tagging-longest)"
            )
        target = sample["target"]
        out = {"parent": self.parent_head.targets(target["parent"], padding_mask)}
        for row in TAG_ROWS:
            out[row] = target[row].masked_fill(padding_mask, -100)
        return out

    @torch.no_grad()
    def predict(self, net_output):
        """Argmax of every head: {"parent": absolute parents (-1 none, -2 invalid), row: tag
        indices}, each (B, T); padding positions are left as predicted (callers strip them)."""
        padding_mask = net_output["padding_mask"]
        out = {"parent": self.parent_head.decode(net_output["parent"].argmax(-1), padding_mask)}
        for row in TAG_ROWS:
            out[row] = net_output[row].argmax(-1)
        return out

    def max_positions(self):
        return self.encoder.max_positions()


@register_model_architecture("tagging_transformer", "tagging_transformer")
def tagging_base_architecture(args):
    if getattr(args, "parent_head", None) is None:
        args.parent_head = "absolute"
    if not hasattr(args, "tagging_longest"):
        args.tagging_longest = None
    if getattr(args, "tagging_init", None) is None:
        args.tagging_init = "fairseq"
    set_variant_defaults(args)
    base_architecture(args)
