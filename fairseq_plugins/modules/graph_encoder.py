"""Graph-Transformer encoder (Duan and Zhao, arXiv 2101.06397), as docs/method.md §3 reads
it. The paper's equations were lost and no public code exists: this is our reading.

Layer i >= 2 gets the previous representation P = X_(i-2) and the incremental one
I = X_(i-1) - X_(i-2). Parts: high H = Attn(I, I, I); middle M1 = Attn(I, P, P), M2 = Attn(P, I, I);
low L = W_l P (no attention: P P^T was attended in layer i-1). Fusion (sum, weight-gate or
self-gate), then the usual residual onto X_(i-1), layer norm and feed-forward block.

Our choices where the paper is silent: with pre-norm, P and I are each normalised by the layer's
attention layer norm; with half-dimension, the low part is Linear(d, d/2) then Linear(d/2, d).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from fairseq_plugins.option_choices import GRAPH_FUSIONS, ChoiceRegistry

from .numerics import softmax_fp32
from .variant_layers import VariantEncoderLayer, wrap_layer

NUM_PARTS = 4  # high, middle (I over P), middle (P over I), low

# --graph-fusion: name -> the fusion module class, built with the model width.
FUSIONS = ChoiceRegistry("--graph-fusion", GRAPH_FUSIONS)


@FUSIONS.register("weight-gate")
class WeightGateFusion(nn.Module):
    """g = softmax(W_g [H; M1; M2; L]) (4 weights per token), F = sum_k g_k Z_k."""

    def __init__(self, embed_dim):
        super().__init__()
        self.gate = nn.Linear(NUM_PARTS * embed_dim, NUM_PARTS)

    def weights(self, parts):
        # W_g [H; M1; M2; L] as the sum of the four column blocks of W_g applied to each part: the
        # (T, B, 4d) concatenation is never built.
        dim = parts[0].size(-1)
        w = self.gate.weight
        logits = F.linear(parts[0], w[:, :dim], self.gate.bias)
        for k in range(1, NUM_PARTS):
            logits = logits + F.linear(parts[k], w[:, k * dim : (k + 1) * dim])
        return softmax_fp32(logits)

    def forward(self, parts):
        # sum_k g_k Z_k without stacking the parts into a (T, B, 4, d) copy
        g = self.weights(parts)
        out = parts[0] * g[..., 0:1]
        for k in range(1, NUM_PARTS):
            out = torch.addcmul(out, parts[k], g[..., k : k + 1])
        return out


@FUSIONS.register("self-gate")
class SelfGateFusion(nn.Module):
    """The 4 parts as a length-4 sequence per token, one single-head self-attention over it:
    F = (1/4) sum_rows softmax(Z_q Z_k^T / sqrt(d)) Z_v."""

    def __init__(self, embed_dim):
        super().__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def mix(self, parts):
        z = torch.stack(parts, dim=-2)  # (T, B, 4, d)
        logits = torch.matmul(self.q_proj(z), self.k_proj(z).transpose(-1, -2))
        attn = softmax_fp32(logits * z.size(-1) ** -0.5)
        return torch.matmul(attn, self.v_proj(z))  # (T, B, 4, d): the 4x4 mix

    def forward(self, parts):
        return self.mix(parts).mean(dim=-2)


@FUSIONS.register("sum")
class SumFusion(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, parts):
        return parts[0] + parts[1] + parts[2] + parts[3]


FUSIONS.check_complete()


class GraphEncoderLayer(VariantEncoderLayer):
    attention_role = "graph"

    @property
    def attention_inner_dim(self):
        """d/2 with --graph-half-dim (the attention builder checks that the heads divide it)."""
        return self.embed_dim // 2 if self.graph_plan.half_dim else None

    def __init__(self, cfg, graph, return_fc=False):
        """``graph``: the GraphPlan (the parts' attention, fusion, half dimension, shared q/k/v)."""
        embed_dim = cfg.encoder.embed_dim
        self.graph_plan = graph  # read by attention_inner_dim, inside super().__init__
        super().__init__(cfg, graph.attention, return_fc=return_fc)
        # self.self_attn (built by fairseq's layer) is the high-order attention over I.
        self.mid_attn_incr_prev = self.build_attention(embed_dim, cfg)  # M1: q=I, k=v=P
        self.mid_attn_prev_incr = self.build_attention(embed_dim, cfg)  # M2: q=P, k=v=I
        if graph.shared_qkv:
            for attn in (self.mid_attn_incr_prev, self.mid_attn_prev_incr):
                attn.q_proj, attn.k_proj, attn.v_proj = (
                    self.self_attn.q_proj,
                    self.self_attn.k_proj,
                    self.self_attn.v_proj,
                )
        if graph.half_dim:
            self.low_proj = nn.Sequential(
                nn.Linear(embed_dim, embed_dim // 2), nn.Linear(embed_dim // 2, embed_dim)
            )
        else:
            self.low_proj = nn.Linear(embed_dim, embed_dim)
        self.fusion = FUSIONS[graph.fusion](embed_dim)

    def parts(self, prev, incr, encoder_padding_mask):
        """[H, M1, M2, L], each (T, B, d), from already normalised P and I."""
        kwargs = dict(key_padding_mask=encoder_padding_mask, need_weights=False)
        high, _ = self.self_attn(incr, incr, incr, **kwargs)
        mid_ip, _ = self.mid_attn_incr_prev(incr, prev, prev, **kwargs)
        mid_pi, _ = self.mid_attn_prev_incr(prev, incr, incr, **kwargs)
        return [high, mid_ip, mid_pi, self.low_proj(prev)]

    def forward(self, prev, incr, encoder_padding_mask):
        """prev = X_(i-2), incr = X_(i-1) - X_(i-2); returns X_i."""
        residual = prev + incr
        if self.normalize_before:
            prev, incr = self.self_attn_layer_norm(prev), self.self_attn_layer_norm(incr)
        fused = self.fusion(self.parts(prev, incr, encoder_padding_mask))
        x = self.residual_connection(self.dropout_module(fused), residual)
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        return self.feed_forward_block(x)


def build_graph_encoder_layer(index, cfg, self_attention, graph, return_fc=False):
    """Layer ``index`` (0-based) of a graph encoder: the first one is a standard encoder layer
    (``self_attention``: its AttentionPlan), every later one a GraphEncoderLayer (``graph``: the
    GraphPlan)."""
    if index == 0:
        layer = VariantEncoderLayer(cfg, self_attention, return_fc=return_fc)
    else:
        layer = GraphEncoderLayer(cfg, graph, return_fc=return_fc)
    return wrap_layer(layer, cfg)


def run_graph_layers(layers, x, padding_mask, return_all_hiddens=False):
    """Layer 1 is standard; layer i >= 2 gets P = X_(i-2) and I = X_(i-1) - X_(i-2).
    x: embedded input (T, B, d); returns the last layer's output and, if asked, every layer's."""
    states = [x] if return_all_hiddens else []
    prev = None
    for layer in layers:
        if prev is None:
            prev, x = x, layer(x, encoder_padding_mask=padding_mask)
        else:
            prev, x = x, layer(prev, x - prev, encoder_padding_mask=padding_mask)
        if return_all_hiddens:
            states.append(x)
    return x, states
