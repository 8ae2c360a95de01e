"""The authors' notebooks build their models from Keras layers and keep Keras's default
initialisation; fairseq's differs where it matters most for small models (COGS tagging
closed the gap to the paper with it):

- token embeddings: Keras ``Embedding`` draws uniform in [-0.05, 0.05] (std 0.029), fairseq normal
  with std d^-0.5 (0.125 at d = 64, 4.3 times larger);
- output layers: Keras ``Dense`` is Glorot-uniform with zero bias, PyTorch's ``Linear`` is uniform
  in +-1/sqrt(fan_in) with a random bias (fairseq's untied output projection: normal d^-0.5).

``--tagging-init official`` (tagging_transformer) and ``--seq2seq-init official``
(variant_transformer) apply them to the layers the notebook builds as such; the Transformer layers
keep fairseq's initialisation. ``--seq2seq-init official-dense`` (the notebook path,
docs/compgen.md) also re-draws every other ``nn.Linear`` of the model (the layers' attention
projections and feed-forward layers: the notebook's ``Dense``, Glorot-uniform with zero bias, where
fairseq draws q/k/v with gain 1/sqrt(2) and random biases and the feed-forward layers as PyTorch's
default) and the relative-position tables (the notebook's ``Embedding`` layers: uniform in
[-0.05, 0.05], where we draw the vectors normal d_h^-0.5 and the scalars zero).
"""

import torch
import torch.nn as nn

KERAS_EMBEDDING_RANGE = 0.05  # keras.layers.Embedding's default RandomUniform(-0.05, 0.05)


def keras_default_init(embeddings=(), linears=()):
    """Re-initialise EMBEDDINGS (nn.Embedding; the padding row stays zero: fairseq never reads it)
    and LINEARS (nn.Linear; Glorot-uniform weight, zero bias) as Keras's defaults. A module given
    twice (tied embeddings) is drawn once."""
    seen = set()
    with torch.no_grad():
        for embed in embeddings:
            if id(embed.weight) in seen:
                continue
            seen.add(id(embed.weight))
            nn.init.uniform_(embed.weight, -KERAS_EMBEDDING_RANGE, KERAS_EMBEDDING_RANGE)
            if embed.padding_idx is not None:
                embed.weight[embed.padding_idx].zero_()
        for linear in linears:
            if id(linear.weight) in seen:
                continue
            seen.add(id(linear.weight))
            nn.init.xavier_uniform_(linear.weight)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)


def keras_default_tables(tables):
    """Re-draw TABLES (parameters of Keras ``Embedding`` layers without padding, e.g. the relative
    position vectors and scalars) uniform in [-0.05, 0.05]; a tied table is drawn once."""
    seen = set()
    with torch.no_grad():
        for table in tables:
            if table is None or id(table) in seen:
                continue
            seen.add(id(table))
            nn.init.uniform_(table, -KERAS_EMBEDDING_RANGE, KERAS_EMBEDDING_RANGE)
