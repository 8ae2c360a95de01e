"""Every value of ``--rel-pos`` in one registry, ``POSITION_SCHEMES`` (the seed papers' rel-e/b/eb
label tables are ``relative_positions.py``'s, FIRE's ``fire_bias.py``'s), and the schemes beyond
the seed papers (docs/method.md §5): ALiBi, the T5 bucketed relative bias, rotary embeddings
(RoPE), no positions at all (NoPE), FIRE's learned function of normalised distances, and CoPE's
contextual positions (``contextual_positions.py``: not a bias from positions but a term computed
from the logits; the attention keeps it apart from ``relative_positions``).

Every scheme sees the positions that ``BiasedAttention`` gives the seed papers' relative positions:
in self-attention, keys ``0 .. Tk-1`` and queries the last ``Tq`` of them (incremental decoding
appends to the key cache); with ``--rel-pos-cross`` (rel2), decoder step ``i`` against encoder token
``j`` counted from the first non-padding token. Only differences ``i - j`` matter, so left padding
changes nothing. FIRE alone also reads the query's own position (``absolute_queries``): where a
key padding mask is given, self-attention counts its positions from each sentence's first real
token instead (``BiasedAttention._relative_positions``).

- **ALiBi** (Press et al. 2022): ``logits_hij += -m_h |i - j|``, no parameters. Slopes, for H heads
  a power of two, ``m_h = 2^(-8h/H)``, h = 1..H (8 heads: 1/2, 1/4, ..., 1/256); otherwise the
  paper's rule: the slopes of the largest power of two P < H, then every other slope of 2P. In a
  causal self-attention the keys j > i are masked, so ``-m|i - j|`` is the paper's ``-m (i - j)``;
  in encoder self-attention (and rel2 cross-attention, our extension) it is the symmetric variant.
- **T5 bias** (Raffel et al. 2020): ``logits_hij += b[bucket(j - i), h]``, one learned scalar per
  head and bucket. ``bucket``: bidirectional (encoder, cross) splits the N buckets in two halves by
  the sign of j - i (j > i: the upper half); causal (decoder self-attention) uses all N for
  ``n = max(i - j, 0)``. Within a half of M buckets, distances ``n < M/2`` have a bucket each, larger
  ones share ``M/2 + floor(log(n / (M/2)) / log(max_distance / (M/2)) * (M - M/2))``, capped at
  M - 1: every distance, however long, has a bucket (no lookup out of range). The paper shares one
  table across the layers of a stack; here each attention has its own (as rel-b), and
  ``--share-*-layers`` ties them. Tables start at zero (the paper does not say).
- **RoPE** (Su et al. 2021): queries and keys rotated by their position before the dot product:
  each pair ``(x_2c, x_2c+1)`` of a head is turned by the angle ``p * theta_c``,
  ``theta_c = base^(-2c/d_h)``, so that ``R(i) q . R(j) k = q . R(j - i) k``: a relative position
  inside q.k, which the fused kernel computes unchanged. The cache keeps keys unrotated; every step
  rotates them by their position (as cheap as the attention itself), so beam reordering and rel2's
  per-sentence encoder positions need nothing special.
- **NoPE** (Kazemnejad et al. 2023): no position information; no module (``None``) and no absolute
  position embeddings on that side.

Bias schemes add to the scaled logits q.k / sqrt(d_h) (they are not divided by sqrt(d_h)).
"""

import math

import torch
import torch.nn as nn

from fairseq_plugins.option_choices import ALL_REL_POS_MODES, ChoiceRegistry

from .contextual_positions import ContextualPositions
from .fire_bias import FireBias
from .relative_positions import build_relative_positions

# Every scheme of --rel-pos in one place: name -> builder(plan, head_dim, num_heads) of the
# position module of one attention (None: no module).
POSITION_SCHEMES = ChoiceRegistry("--rel-pos", ALL_REL_POS_MODES)


def build_position_scheme(plan, head_dim, num_heads):
    """The position module of one attention (a PositionPlan: the scheme and its settings), or
    None ("none", "nope")."""
    return POSITION_SCHEMES[plan.scheme](plan, head_dim, num_heads)


def no_positions(plan, head_dim, num_heads):
    return None


POSITION_SCHEMES.register("none", no_positions)
POSITION_SCHEMES.register("nope", no_positions)


@POSITION_SCHEMES.register("e")
@POSITION_SCHEMES.register("b")
@POSITION_SCHEMES.register("eb")
def _label_table(plan, head_dim, num_heads):
    """The seed papers' relative positions (relative_positions.py)."""
    return build_relative_positions(
        plan.scheme, plan.radius, head_dim, num_heads, plan.bias_per_head
    )


def alibi_slopes(num_heads):
    """The paper's head slopes m_1 .. m_H (a list of floats)."""
    if num_heads < 1:
        raise ValueError(f"ALiBi needs at least one head (got {num_heads})")
    power = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * h / power) for h in range(1, power + 1)]
    if power < num_heads:  # every other slope of 2P, from the first
        slopes += [2.0 ** (-8.0 * h / (2 * power)) for h in range(1, 2 * power + 1, 2)]
    return slopes[:num_heads]


class _BiasScheme(nn.Module):
    """A scheme that adds a bias depending on positions only. The attention's interface: labels
    from positions, then ``forward(q, labels, scaling)`` -> a bias broadcastable to (B, H, Tq, Tk)."""

    rotates = False  # q and k unchanged
    banded = False  # not the diagonal band path of RelativePositionBias (labels are not clipped)
    embeddings = None  # no q-dependent term: the bias needs no gradient through q
    absolute_queries = False  # depends on i - j only


@POSITION_SCHEMES.register("alibi")
def _alibi(plan, head_dim, num_heads):
    return AlibiBias(num_heads)


class AlibiBias(_BiasScheme):
    def __init__(self, num_heads):
        super().__init__()
        # A buffer that is not saved: checkpoints stay those of a model without positions.
        slopes = torch.tensor(alibi_slopes(num_heads), dtype=torch.float64)
        self.register_buffer("slopes", slopes, persistent=False)
        self.bias = None  # no learned table

    def labels(self, query_positions, key_positions):
        """Distances |i - j| (..., Tq, Tk)."""
        return (query_positions.unsqueeze(-1) - key_positions.unsqueeze(-2)).abs()

    def forward(self, q, labels, scaling=None):
        """-m_h |i - j|, (B or 1, H, Tq, Tk) in q's dtype. ``scaling`` unused (see the module)."""
        if labels.dim() == 2:
            labels = labels.unsqueeze(0)
        slopes = self.slopes.to(device=q.device, dtype=q.dtype).view(1, -1, 1, 1)
        return labels.unsqueeze(1).to(q.dtype) * -slopes


def t5_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """The T5 bucket of ``relative_position`` = j - i (key minus query), long tensor."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    exact = num_buckets // 2
    # float32 as T5 (mesh TensorFlow, HF, x-transformers): the same bucket at every boundary.
    scaled = torch.log(distance.clamp(min=1).float() / exact) / math.log(max_distance / exact)
    large = exact + (scaled * (num_buckets - exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(distance < exact, distance, large)


@POSITION_SCHEMES.register("t5")
def _t5(plan, head_dim, num_heads):
    return T5RelativeBias(
        num_heads, plan.t5_num_buckets, plan.t5_max_distance, bidirectional=not plan.causal
    )


class T5RelativeBias(_BiasScheme):
    def __init__(self, num_heads, num_buckets=32, max_distance=128, bidirectional=True):
        super().__init__()
        if num_buckets < (4 if bidirectional else 2):
            raise ValueError(
                f"--t5-num-buckets must be >= {4 if bidirectional else 2} (got {num_buckets})"
            )
        exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
        if max_distance <= exact:
            raise ValueError(
                f"--t5-max-distance must exceed the exact buckets' range {exact} "
                f"(got {max_distance})"
            )
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.bidirectional = bidirectional
        self.bias = nn.Parameter(torch.zeros(num_buckets, num_heads))

    def labels(self, query_positions, key_positions):
        """Buckets (..., Tq, Tk) of j - i."""
        relative = key_positions.unsqueeze(-2) - query_positions.unsqueeze(-1)
        return t5_bucket(relative, self.bidirectional, self.num_buckets, self.max_distance)

    def forward(self, q, labels, scaling=None):
        """b[bucket, h] as (B or 1, H, Tq, Tk) in q's dtype; ``scaling`` unused."""
        if labels.dim() == 2:
            labels = labels.unsqueeze(0)
        return self.bias.to(q.dtype)[labels].permute(0, 3, 1, 2)


@POSITION_SCHEMES.register("rope")
def _rope(plan, head_dim, num_heads):
    return RotaryPositions(head_dim, plan.rope_base)


class RotaryPositions(nn.Module):
    rotates = True
    banded = False
    embeddings = None
    bias = None
    absolute_queries = False

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"--rel-pos rope needs an even head width d_h (got {head_dim})")
        if base <= 1:
            raise ValueError(f"--rope-base must be > 1 (got {base})")
        self.head_dim, self.base = head_dim, float(base)

    def angles(self, positions):
        """(..., T, d_h/2) angles p * theta_c in float64 (exact enough at any length)."""
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.float64, device=positions.device)
        theta = self.base ** (-exponents / self.head_dim)
        return positions.to(torch.float64).unsqueeze(-1) * theta

    def rotate(self, x, positions):
        """x (B, H, T, d_h) rotated by positions (T,) or (B, T)."""
        angles = self.angles(positions)
        if angles.dim() == 3:  # (B, T, d/2): per sentence (rel2 encoder keys)
            angles = angles.unsqueeze(1)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]
        return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)

    def rotate_query_key(self, q, k, query_positions, key_positions):
        return self.rotate(q, query_positions), self.rotate(k, key_positions)


@POSITION_SCHEMES.register("fire")
def _fire(plan, head_dim, num_heads):
    """FIRE (fire_bias.py): one MLP per attention, as the T5 tables (tied by layer sharing)."""
    return FireBias(num_heads, mlp_hidden=plan.fire_mlp_hidden, init_threshold=plan.fire_threshold)


@POSITION_SCHEMES.register("cope")
def _cope(plan, head_dim, num_heads):
    """CoPE (contextual_positions.py): one table of head width per attention, shared by its
    heads (a compositional attention's searches); decoder self-attention only, of the attention
    types in COPE_ATTENTION_TYPES (checked by the options)."""
    return ContextualPositions(head_dim, plan.cope_max_pos)


def is_contextual(scheme):
    """Whether a built scheme is CoPE, which the attention applies to its logits
    (``BiasedAttention.contextual_positions``) instead of as a bias from positions."""
    return isinstance(scheme, ContextualPositions)


POSITION_SCHEMES.check_complete()
