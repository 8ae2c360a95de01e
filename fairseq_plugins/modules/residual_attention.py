"""RealFormer residual attention, as the official ``seq2seq.ipynb`` of Ontañón et al. has it
(docs/official-code.md A1, docs/method.md §2.11; ``--realformer``).

Each attention stream carries its pre-softmax logits from layer to layer: layer l attends with

    Z_l = (Q_l K_l^T + E_l) / sqrt(d_h) + mask + Z_(l-1),   Z_0 = 0,

E_l the relative-position terms the layer computes; Z_l (scaled, masked, relative terms and the
incoming carry included) is what the next layer adds. Three independent streams: encoder
self-attention, decoder self-attention, decoder-to-encoder attention; the copy attention has none.
Compositional attention carries its search logits, (B, S, Tq, Tk).

The carry lives for one forward pass of a stack (the encoder or decoder resets it before and after);
an incremental decoding step carries the current query rows only, which is all the next layer of
that step needs, so nothing is kept between steps (and beam reordering has nothing to reorder).
"""

from plugin_tools.errors import PluginConfigError

from .biased_attention import BiasedAttention
from .numerics import mask_value


class ResidualLogits:
    """The carried logits of one attention stream, shared by its attentions of every layer."""

    def __init__(self):
        self.logits = None

    def reset(self):
        self.logits = None

    def add(self, logits):
        """``logits`` plus the previous layer's carry (none at the first layer); the sum becomes
        the carry of the next layer. Masked entries would add up layer after layer (the official
        code's -1e9 per layer) and overflow: they are held at the mask value, where their weight
        is 0 all the same."""
        if self.logits is not None:
            if self.logits.shape != logits.shape:
                raise RuntimeError(
                    f"--realformer: carried logits {tuple(self.logits.shape)} do not fit this "
                    f"layer's {tuple(logits.shape)} (same heads and keys needed in every layer)"
                )
            logits = (logits + self.logits).clamp(min=mask_value(logits.dtype))
        self.logits = logits
        return logits


def share_residual_logits(attentions):
    """One ResidualLogits carried through ``attentions`` (one stream, in layer order)."""
    carry = ResidualLogits()
    for attention in attentions:
        if not isinstance(attention, BiasedAttention):
            raise PluginConfigError(
                f"--realformer needs multihead or compositional attention in every layer "
                f"(got {type(attention).__name__}; see --encoder-attention-type)"
            )
        attention.residual_logits = carry
    return carry
