"""The Neural Data Router (Csordás, Irie and Schmidhuber, ICLR 2022) as options of the variant
encoder (docs/method.md §6): the copy-gated layer here (``--encoder-copy-gate``), geometric
attention in geometric_attention.py (``--encoder-attention-type geometric``), one layer shared
across depth (``--share-encoder-layers``).

Copy-gated layer (the NDR layer, post-norm), input h, output h':

    a  = LN_1(h + drop(Attention(h)))
    u  = LN_2(W_2 drop(relu(W_1 a + b_1)) + b_2)
    g  = sigmoid(G_2 drop(relu(G_1 a + e_1)) + e_2),   e_2 = -3 at initialisation (gate closed)
    h' = g * u + (1 - g) * h

``g`` is one gate per position and channel (G_1, G_2: d x d); in training each position's gate is
set to 0 with probability ``--copy-gate-drop`` (the official ``ndr.drop_gate``, default 0). The
paper's model shares one such layer across depth (``--share-encoder-layers``) and uses no other
positional encoding (``--rel-pos nope`` on the encoder side, or none of the bias schemes).
Initialisation as the official code: Xavier-uniform, gain relu on W_1 and G_1, tanh on W_2,
sigmoid (1) on G_2; attention projections Xavier with the official fans.
"""

import torch
import torch.nn as nn

from plugin_tools.errors import PluginConfigError

from .variant_layers import VariantEncoderLayer


class CopyGateEncoderLayer(VariantEncoderLayer):
    """fairseq's encoder layer with the NDR copy gate (module docstring): its attention (any
    ``--encoder-attention-type``), ``self_attn_layer_norm`` = LN_1, fc1/fc2 = W_1/W_2,
    ``final_layer_norm`` = LN_2, and the gate network G_1/G_2."""

    def __init__(self, cfg, attention, gate_drop=0.0, return_fc=False):
        """``attention``: the AttentionPlan of the self-attention; ``gate_drop``:
        --copy-gate-drop."""
        if cfg.encoder.normalize_before:
            raise PluginConfigError(
                "--encoder-copy-gate is the NDR's post-norm layer: drop --encoder-normalize-before"
            )
        super().__init__(cfg, attention, return_fc=return_fc)
        dim = self.embed_dim
        self.gate_drop = gate_drop
        self.gate_fc1 = nn.Linear(dim, dim)
        self.gate_fc2 = nn.Linear(dim, dim)
        self.reset_gate_parameters()

    def reset_gate_parameters(self):
        relu, tanh = nn.init.calculate_gain("relu"), nn.init.calculate_gain("tanh")
        nn.init.xavier_uniform_(self.fc1.weight, gain=relu)
        nn.init.xavier_uniform_(self.fc2.weight, gain=tanh)
        nn.init.xavier_uniform_(self.gate_fc1.weight, gain=relu)
        nn.init.xavier_uniform_(self.gate_fc2.weight, gain=nn.init.calculate_gain("sigmoid"))
        nn.init.constant_(self.gate_fc2.bias, -3.0)

    def forward(self, x, encoder_padding_mask, attn_mask=None):
        if attn_mask is not None:  # as fairseq's layer: a bool mask becomes a large negative
            attn_mask = attn_mask.masked_fill(
                attn_mask.to(torch.bool), -1e8 if x.dtype == torch.float32 else -1e4
            )
        attended, _ = self.self_attn(
            query=x,
            key=x,
            value=x,
            key_padding_mask=encoder_padding_mask,
            need_weights=False,
            attn_mask=attn_mask,
        )
        merged = self.self_attn_layer_norm(x + self.dropout_module(attended))
        hidden = self.dropout_module(self.activation_fn(self.fc1(merged)))
        fc_result = self.fc2(hidden)
        update = self.final_layer_norm(fc_result)
        gate_hidden = self.dropout_module(torch.relu(self.gate_fc1(merged)))
        gate = torch.sigmoid(self.gate_fc2(gate_hidden))
        if self.training and self.gate_drop > 0:
            closed = torch.rand(gate.shape[:-1] + (1,), device=gate.device) < self.gate_drop
            gate = gate.masked_fill(closed, 0.0)
        out = x * (1 - gate) + update * gate
        if self.return_fc and not torch.jit.is_scripting():
            return out, fc_result
        return out
