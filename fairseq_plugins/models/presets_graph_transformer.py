"""Graph-Transformer presets (Duan and Zhao; our reading of the paper, see docs/method.md §3):
multi-order-graph encoder layers from layer 2 on, fairseq's standard decoder.
Fusion (``--graph-fusion``, default weight-gate) and ``--graph-half-dim`` stay options.
"""

from fairseq.models import register_model_architecture
from fairseq.models.transformer import base_architecture

from .variant_transformer import variant_base_architecture


def _graph(args):
    args.graph_encoder = True
    variant_base_architecture(args)


@register_model_architecture("variant_transformer", "graph_transformer")
def graph_transformer(args):
    _graph(args)


@register_model_architecture("variant_transformer", "graph_transformer_iwslt_de_en")
def graph_transformer_iwslt_de_en(args):
    # Paper's De-En setting: 6+6 layers, d=512, ffn 1024, 4 heads, dropout 0.3.
    for side in ("encoder", "decoder"):
        setattr(args, f"{side}_embed_dim", getattr(args, f"{side}_embed_dim", 512))
        setattr(args, f"{side}_ffn_embed_dim", getattr(args, f"{side}_ffn_embed_dim", 1024))
        setattr(args, f"{side}_attention_heads", getattr(args, f"{side}_attention_heads", 4))
        setattr(args, f"{side}_layers", getattr(args, f"{side}_layers", 6))
    args.dropout = getattr(args, "dropout", 0.3)
    _graph(args)


@register_model_architecture("variant_transformer", "graph_transformer_wmt_en_de")
def graph_transformer_wmt_en_de(args):
    # Paper's En-De/En-Fr/En-Ro setting: d=512, ffn 2048, 8 heads, dropout 0.1.
    args.dropout = getattr(args, "dropout", 0.1)
    base_architecture(args)
    _graph(args)
