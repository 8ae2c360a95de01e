"""The parent head of the COGS tagging model (Ontañón et al. 2022, section 4.5.1; the official
``cogs_tagging.ipynb``, docs/official-code.md O1.4 and O2.2).

Every head maps the encoder output H (B, T, d) to logits (B, T, C) over parent classes, turns gold
absolute parents (-1: none) into class targets and predicted classes back into absolute parents.
Classes are the official ones (O1.4):

- ``absolute``: one Linear(d, L + 2); class 0 is the padding class, class p + 2 the parent p
  (class 1: no parent).
- ``relative``: one Linear(d, 2L); class 0 is the padding class, class (p - i) + L the offset of
  the parent p of token i (offset 0, the token itself: no parent).
- ``attention``: a new single-head attention without values. q = Linear(d, d)(H),
  k = Linear(d, d)(H), logits_ij = (q_i . k_j [+ q_i . e_ij] [+ b_ij]) / sqrt(d), padded keys
  masked; the relative terms (a table of 2R + 1 vectors of dim **d**, a scalar per label) follow
  the encoder's ``--rel-pos`` / ``--rel-pos-radius`` and are the head's own parameters. The class of
  key j is j (the official code rolls the softmax by one so that key j is class j + 1 and class 0
  is padding; that is the same distribution). No parent = the token itself.

L (the longest sentence of the data set, the task's ``longest``) fixes the size of the linear
heads; a predicted class outside the sentence (or the padding class) decodes to
:data:`INVALID_PARENT`, which no gold row holds.
"""

import math

import torch
import torch.nn as nn

from fairseq_plugins.option_choices import PARENT_HEADS, unknown_choice

from .numerics import at_least_float32, mask_value
from .relative_positions import build_relative_positions

IGNORE = -100  # target class of padding positions (F.cross_entropy's ignore_index)
NO_PARENT = -1
INVALID_PARENT = -2


def _positions(like):
    bsz, length = like.shape[:2]
    return torch.arange(length, device=like.device).unsqueeze(0).expand(bsz, length)


class LinearParentHead(nn.Module):
    """absolute or relative: one Linear over the official parent vocabulary."""

    def __init__(self, kind, embed_dim, longest):
        super().__init__()
        if kind not in ("absolute", "relative"):
            raise ValueError(f"--parent-head: unknown linear head {kind!r}")
        if longest < 1:
            raise ValueError(f"the longest sentence must be >= 1 token (got {longest})")
        self.kind = kind
        self.longest = longest
        self.num_classes = longest + 2 if kind == "absolute" else 2 * longest
        self.proj = nn.Linear(embed_dim, self.num_classes)

    def forward(self, features, padding_mask):
        return self.proj(features)

    def targets(self, parents, padding_mask):
        """Class targets (B, T) from absolute parents (B, T); IGNORE at padding."""
        if self.kind == "absolute":
            classes = parents + 2
        else:
            i = _positions(parents)
            classes = torch.where(parents == NO_PARENT, 0, parents - i) + self.longest
        return classes.masked_fill(padding_mask, IGNORE)

    def decode(self, classes, padding_mask):
        """Absolute parents (B, T) from predicted classes; INVALID_PARENT where none can be."""
        lengths = (~padding_mask).sum(1, keepdim=True)
        i = _positions(classes)
        if self.kind == "absolute":
            parents = classes - 2
            bad = (classes == 0) | (parents >= lengths)
        else:
            offset = classes - self.longest
            parents = torch.where(offset == 0, NO_PARENT, i + offset)
            bad = (classes == 0) | ((offset != 0) & ((parents < 0) | (parents >= lengths)))
        return parents.masked_fill(bad, INVALID_PARENT)


class AttentionParentHead(nn.Module):
    """The weights of a new single-head attention point at the parent (see the module doc)."""

    kind = "attention"

    def __init__(self, embed_dim, rel_pos="none", rel_pos_radius=16):
        super().__init__()
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.scaling = 1.0 / math.sqrt(embed_dim)
        # one "head" of the full width d (official: Embedding(2R+1, d) and Embedding(2R+1, 1))
        self.rel_pos = build_relative_positions(rel_pos, rel_pos_radius, embed_dim, 1)

    def forward(self, features, padding_mask):
        """Logits (B, T, T): row i is token i's distribution over parent positions j."""
        q = self.q_proj(features)
        k = self.k_proj(features)
        logits = at_least_float32(torch.bmm(q, k.transpose(1, 2))) * self.scaling
        if self.rel_pos is not None:
            positions = torch.arange(features.size(1), device=features.device)
            labels = self.rel_pos.labels(positions, positions)
            bias = self.rel_pos(q.unsqueeze(1), labels, self.scaling)  # (B or 1, 1, T, T)
            logits = logits + at_least_float32(bias.squeeze(1))
        if padding_mask is not None and padding_mask.any():
            logits = logits.masked_fill(padding_mask.unsqueeze(1), mask_value(logits.dtype))
        return logits

    def targets(self, parents, padding_mask):
        i = _positions(parents)
        return torch.where(parents == NO_PARENT, i, parents).masked_fill(padding_mask, IGNORE)

    def decode(self, classes, padding_mask):
        i = _positions(classes)
        lengths = (~padding_mask).sum(1, keepdim=True)
        parents = torch.where(classes == i, NO_PARENT, classes)
        return parents.masked_fill(classes >= lengths, INVALID_PARENT)


def build_parent_head(kind, embed_dim, longest, positions):
    """The parent head of ``--parent-head KIND``; the attention head takes its relative-position
    mode and radius from ``positions`` (the PositionPlan of --rel-pos)."""
    if kind == "attention":
        return AttentionParentHead(embed_dim, positions.scheme, positions.radius)
    if kind in ("absolute", "relative"):
        return LinearParentHead(kind, embed_dim, longest)
    raise ValueError(unknown_choice("--parent-head", kind, PARENT_HEADS))
