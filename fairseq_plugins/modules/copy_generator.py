"""Copy decoder output (METHOD.md section 2; Ontañón et al. 2022).

p_vocab = softmax(W y_i); p_copy from one single-head attention whose query is W_c y_i, keys the
last encoder layer's outputs (no projection), scale 1/sqrt(d), values the one-hot source tokens
(scatter-added into the vocabulary); gate w = sigmoid(w_g . y_i + b); p = (1 - w) p_vocab + w p_copy.
The official code does not mask source padding; we do. Returns log p (clamped), so fairseq's beam
search and criteria work unchanged.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

LOG_PROB_FLOOR = 1e-10


class CopyGenerator(nn.Module):
    def __init__(self, embed_dim, encoder_dim):
        super().__init__()
        self.copy_query = nn.Linear(embed_dim, encoder_dim)
        self.gate = nn.Linear(embed_dim, 1)
        self.scaling = 1.0 / math.sqrt(encoder_dim)

    def copy_attention(self, features, encoder_out, encoder_padding_mask):
        """Attention of decoder features (B, T, C) over encoder outputs (S, B, C): (B, T, S)."""
        query = self.copy_query(features)
        keys = encoder_out.transpose(0, 1)  # (B, S, C)
        logits = torch.bmm(query, keys.transpose(1, 2)).float() * self.scaling
        if encoder_padding_mask is not None:
            # Finite (like the fused attention's masks): a fully padded source row gives a
            # uniform, not NaN, distribution.
            logits = logits.masked_fill(
                encoder_padding_mask.unsqueeze(1), torch.finfo(logits.dtype).min
            )
        return F.softmax(logits, dim=-1)

    def gate_weight(self, features):
        return torch.sigmoid(self.gate(features).float())  # (B, T, 1)

    def forward(self, logits, features, encoder_out, encoder_padding_mask, src_tokens):
        """Log-probabilities (B, T, V) of the mixture."""
        p_vocab = F.softmax(logits.float(), dim=-1)
        attn = self.copy_attention(features, encoder_out, encoder_padding_mask)
        p_copy = torch.zeros_like(p_vocab)
        index = src_tokens.unsqueeze(1).expand(-1, attn.size(1), -1)
        p_copy.scatter_add_(2, index, attn)
        w = self.gate_weight(features)
        p = (1.0 - w) * p_vocab + w * p_copy
        return torch.log(p.clamp(min=LOG_PROB_FLOOR))
