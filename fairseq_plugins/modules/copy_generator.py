"""Copy decoder output (docs/method.md §2.5; Ontañón et al. 2022).

p_vocab = softmax(W y_i); p_copy from one single-head attention whose query is W_c y_i, keys the
last encoder layer's outputs (no projection), scale 1/sqrt(d), values the one-hot source tokens
(scatter-added into the vocabulary); gate w = sigmoid(w_g . y_i + b); p = (1 - w) p_vocab + w p_copy.
The official code does not mask source padding; we do, unless ``attend_padding`` is set
(``--copy-attend-padding``, the notebook path: padded positions take part in the softmax and give
their mass to the padding symbol). The decoder's output is log p (clamped), and
its normalisation passes it through, so fairseq's beam search and criteria work unchanged.
Computed in at least float32 (as fairseq normalises its outputs), never below the input dtype.

Second copy decoder (the official ``COPY_DECODER2``; docs/official-code.md O3, docs/method.md
§2.6), chosen by
``--copy-projection``: the copy distribution is remapped V -> V and re-normalised before the mix,
p_copy' = softmax(Dense_V(p_copy)) (``full``) or softmax(Dense_V(Dense_r(p_copy))) (``low-rank``,
linear-linear with biases and no activation, r = ``--copy-projection-dim``, default the decoder
dim d as in the official, which factorises through d), then p = (1 - w) p_vocab + w p_copy'.
``none`` (the default) is the first copy decoder, unchanged (no extra parameters).
"""

import math

import torch
import torch.nn as nn

from fairseq_plugins.option_choices import COPY_PROJECTIONS, unknown_choice

from .numerics import at_least_float32, mask_value, softmax_fp32

LOG_PROB_FLOOR = 1e-10


def build_copy_projection(kind, vocab_size, rank):
    """The V -> V map of the second copy decoder, or None for ``none``."""
    if kind == "none":
        return None
    if kind == "full":
        return nn.Linear(vocab_size, vocab_size)
    if kind == "low-rank":
        if rank is None or rank < 1:
            raise ValueError(f"--copy-projection-dim must be >= 1 (got {rank})")
        return nn.Sequential(nn.Linear(vocab_size, rank), nn.Linear(rank, vocab_size))
    raise ValueError(unknown_choice("--copy-projection", kind, COPY_PROJECTIONS))


class CopyGenerator(nn.Module):
    attend_padding = False  # --copy-attend-padding (set on the built module)

    def __init__(self, embed_dim, encoder_dim, projection="none", vocab_size=None, rank=None):
        super().__init__()
        self.copy_query = nn.Linear(embed_dim, encoder_dim)
        self.gate = nn.Linear(embed_dim, 1)
        self.scaling = 1.0 / math.sqrt(encoder_dim)
        if projection != "none" and vocab_size is None:
            raise ValueError("--copy-projection needs the vocabulary size")
        projection_module = build_copy_projection(projection, vocab_size, rank)
        if projection_module is not None:  # `none` adds no submodule: old checkpoints load as-is
            self.copy_projection = projection_module
        else:
            self.copy_projection = None

    @classmethod
    def from_plan(cls, plan, embed_dim, encoder_dim, vocab_size):
        """The copy generator of a decoder with output width embed_dim and vocabulary size V;
        ``plan``: its CopyPlan (projection and low rank)."""
        rank = plan.projection_dim or embed_dim
        return cls(embed_dim, encoder_dim, plan.projection, vocab_size, rank)

    def copy_attention(self, features, encoder_out, encoder_padding_mask):
        """Attention of decoder features (B, T, C) over encoder outputs (S, B, C): (B, T, S)."""
        query = self.copy_query(features)
        keys = encoder_out.transpose(0, 1)  # (B, S, C)
        logits = at_least_float32(torch.bmm(query, keys.transpose(1, 2))) * self.scaling
        if encoder_padding_mask is not None:
            logits = logits.masked_fill(encoder_padding_mask.unsqueeze(1), mask_value(logits.dtype))
        return softmax_fp32(logits)

    def gate_weight(self, features):
        return torch.sigmoid(at_least_float32(self.gate(features)))  # (B, T, 1)

    def forward(self, logits, features, encoder_out, encoder_padding_mask, src_tokens):
        """Log-probabilities (B, T, V) of the mixture."""
        p_vocab = softmax_fp32(at_least_float32(logits))
        attn = self.copy_attention(features, encoder_out, encoder_padding_mask)
        p_copy = torch.zeros_like(p_vocab)
        index = src_tokens.unsqueeze(1).expand(-1, attn.size(1), -1)
        p_copy.scatter_add_(2, index, attn)
        if self.copy_projection is not None:  # second copy decoder: remap V -> V, re-normalise
            # p_copy is float32 (or float64); the projection runs in its weights' dtype (fp16 /
            # bf16 models) and its logits go back to at least float32 for the softmax.
            weight_dtype = next(self.copy_projection.parameters()).dtype
            remapped = self.copy_projection(p_copy.to(weight_dtype))
            p_copy = softmax_fp32(at_least_float32(remapped))
        w = self.gate_weight(features)
        p = (1.0 - w) * p_vocab + w * p_copy
        return torch.log(p.clamp(min=LOG_PROB_FLOOR))

    def decoder_output(self, logits, features, encoder_out):
        """The copy decoder's output: log p (B, T, V) from the output layer's logits, the decoder
        features and fairseq's encoder output dict (which carries the source tokens)."""
        padding = encoder_out["encoder_padding_mask"]
        mask = padding[0] if len(padding) > 0 and not self.attend_padding else None
        return self(
            logits,
            features,
            encoder_out["encoder_out"][0],
            mask,
            encoder_out["src_tokens"][0],
        )

    @staticmethod
    def normalized_probs(net_output, log_probs):
        """fairseq's get_normalized_probs for the copy decoder: the mixture already is a
        distribution, so its log (what the decoder returned) passes through."""
        out = at_least_float32(net_output[0])
        return out if log_probs else out.exp()
