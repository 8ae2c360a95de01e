"""FIRE, functional interpolation for relative positions (Li et al., ICLR 2024): a learned
function of the normalised distance as an additive attention bias, one value per head.

    b_h(i, j) = f_theta(psi(i - j) / psi(max(L, i)))_h,    psi(x) = log(c x + 1)

with ``f_theta`` an MLP 1 -> hidden -> heads with ReLU (the paper: 32 hidden units), ``c > 0``
and the threshold ``L`` learned. The parametrisation follows the code in the paper's appendix:
``psi(x) = log(|c x| + 1)`` (c starts at 0.1), ``L = |s * L0|`` with the fixed ``L0`` (512)
times a learned multiplier ``s`` (starts at 1), and ``eps`` (1e-6) added to the normaliser.
``i`` is the query's position counted from 0, so the normaliser is ``psi(max(L, i))``: "progressive
interpolation", distances divided by the query's own range once it exceeds L.

The paper defines causal attention (j <= i). For keys after the query (encoder self-attention,
cross-attention) the appendix code's ``|c (i - j)|`` would mirror j > i onto j < i; here the input
keeps the sign of i - j (``sign(i - j) psi(|i - j|) / psi(max(L, i))``), so the bias can tell left
from right. On j <= i both are the paper's formula.

Unlike the other bias schemes, the bias depends on the query's absolute position i once i > L:
where left padding shifts positions, they must be counted from the first real token (as rel2
counts encoder positions), or padding changes the bias.

The interface is the bias schemes' of ``position_schemes.py``: ``labels(query_positions,
key_positions)`` (here the normalised distances, which depend on c and L, so they are formed on
every forward) then ``forward(q, labels, scaling)`` -> (B or 1, H, Tq, Tk), added to the scaled
logits (not divided by sqrt(d_h)). Per-sentence positions (left-padded sources, rel2
cross-attention) give a ``DistinctPairs`` instead of a (B, Tq, Tk) table: sentences with the same
padding share their (i, j) pairs, so the MLP runs once per distinct pair and its hidden
activations, saved for backward, are (pairs, hidden) rather than (B, Tq, Tk, hidden).

While every query position is below L (at the default L0 = 512: every sentence shorter than 513
tokens), psi(max(L, i)) is psi(L) for every query and the bias is a function of i - j alone, as
any relative bias: the MLP then runs once per distance (at most Tq + Tk - 1 of them, a
``DistinctPairs`` indexed by i - j) instead of once per pair. The values are the same; only the
number of MLP rows, and of hidden activations saved for backward, changes (for T = 512, 1,023 rows
instead of 262,144).
"""

from typing import NamedTuple

import torch
import torch.nn as nn


class DistinctPairs(NamedTuple):
    """FIRE's labels for per-sentence positions: the normalised distance of every distinct
    (query position, key position) pair, ``values`` (N,), and ``index`` (B, Tq, Tk) into them."""

    values: torch.Tensor
    index: torch.Tensor


class FireBias(nn.Module):
    rotates = False  # q and k unchanged
    banded = False  # labels are not clipped to a radius: no band path
    embeddings = None  # no q-dependent term
    bias = None  # no table (the MLP's parameters need a gradient all the same)
    absolute_queries = True  # the normaliser reads the query's position i: count from real tokens

    def __init__(self, num_heads, mlp_hidden=32, init_c=0.1, init_threshold=512.0, eps=1e-6):
        super().__init__()
        if num_heads < 1:
            raise ValueError(f"--encoder/decoder-attention-heads must be >= 1 (got {num_heads})")
        if mlp_hidden < 1:
            raise ValueError(f"--fire-mlp-hidden must be >= 1 (got {mlp_hidden})")
        if init_c <= 0 or init_threshold <= 0:
            raise ValueError(f"FIRE needs c > 0 and L > 0 (got c={init_c}, L={init_threshold})")
        self.num_heads = num_heads
        self.mlp = nn.Sequential(
            nn.Linear(1, mlp_hidden), nn.ReLU(), nn.Linear(mlp_hidden, num_heads)
        )
        self.c = nn.Parameter(torch.tensor(float(init_c)))
        self.threshold_scale = nn.Parameter(torch.tensor(1.0))
        self.init_threshold = float(init_threshold)  # L0: fixed, so no state-dict entry
        self.eps = eps

    def psi(self, x):
        """log(|c x| + 1) of x >= 0, in x's dtype."""
        return torch.log1p((self.c.to(x.dtype) * x).abs())

    def threshold(self):
        """The learned L = |s * L0|."""
        return (self.threshold_scale * self.init_threshold).abs()

    def labels(self, query_positions, key_positions):
        """Normalised distances from positions (..., Tq) and (..., Tk): a (Tq, Tk) table from
        (Tq,) and (Tk,) (self-attention); ``DistinctPairs`` where either is counted per sentence,
        (B, T) or (1, T)."""
        integer = not (query_positions.is_floating_point() or key_positions.is_floating_point())
        if integer and key_positions.numel() > 0 and self.below_threshold(query_positions):
            return self.by_distance(query_positions, key_positions)
        if query_positions.dim() == 1 and key_positions.dim() == 1:
            return self.normalised_distance(query_positions.unsqueeze(-1), key_positions)
        queries, keys = torch.broadcast_tensors(
            query_positions.unsqueeze(-1), key_positions.unsqueeze(-2)
        )  # (B, Tq, Tk)
        if queries.is_floating_point() or keys.is_floating_point():  # no pair codes: every entry
            return DistinctPairs(
                self.normalised_distance(queries, keys).flatten(), _arange_as(queries)
            )
        # One integer code per (i, j): torch.unique sorts the codes, and the pairs are decoded
        # from the sorted codes (unique's values carry no gradient; c and L need one).
        low_query, low_key = queries.min(), keys.min()
        span = keys.max() - low_key + 1
        codes, index = torch.unique(
            (queries - low_query) * span + (keys - low_key), return_inverse=True
        )
        values = self.normalised_distance(codes // span + low_query, codes % span + low_key)
        return DistinctPairs(values, index)

    def below_threshold(self, query_positions):
        """Every query position < L, so that psi(max(L, i)) = psi(L) for all of them (strictly
        below: at i = L the maximum's gradient would be shared with i). One host sync on GPU."""
        return query_positions.numel() > 0 and bool(query_positions.max() < self.threshold())

    def by_distance(self, query_positions, key_positions):
        """``DistinctPairs`` over the distances i - j (integer positions, every query below L):
        one value per distance from the smallest to the largest, indexed by (i - j) - smallest,
        as (B or 1, Tq, Tk)."""
        distance = query_positions.unsqueeze(-1) - key_positions.unsqueeze(-2)
        distance = distance if distance.dim() == 3 else distance.unsqueeze(0)
        low, high = torch.stack(torch.aminmax(distance)).tolist()  # one host sync on GPU
        distances = torch.arange(low, high + 1, device=distance.device)
        # a query at 0 (below L: normalised by psi(L)) and a key at -d are at distance d
        values = self.normalised_distance(torch.zeros_like(distances), -distances)
        return DistinctPairs(values, distance - low)

    def normalised_distance(self, query_positions, key_positions):
        """sign(i - j) psi(|i - j|) / (psi(max(L, i)) + eps), broadcast over the two position
        tensors. In at least float32: a half precision log of a position thousands long would
        lose the distances of neighbours."""
        dtype = torch.promote_types(self.c.dtype, torch.float32)
        queries = query_positions.to(dtype)
        distance = queries - key_positions.to(dtype)
        normaliser = self.psi(torch.maximum(queries, self.threshold().to(dtype))) + self.eps
        return distance.sign() * self.psi(distance.abs()) / normaliser

    def forward(self, q, labels, scaling=None):
        """f_theta(labels) as (B or 1, H, Tq, Tk) in q's dtype; ``scaling`` unused (the bias is
        added to the scaled logits as it is)."""
        weight_dtype = self.mlp[0].weight.dtype
        if isinstance(labels, DistinctPairs):
            per_pair = self.mlp(labels.values.unsqueeze(-1).to(weight_dtype))  # (N, H)
            return per_pair[labels.index].permute(0, 3, 1, 2).to(q.dtype)
        if labels.dim() == 2:
            labels = labels.unsqueeze(0)
        bias = self.mlp(labels.unsqueeze(-1).to(weight_dtype))  # (B or 1, Tq, Tk, H)
        return bias.permute(0, 3, 1, 2).to(q.dtype)


def _arange_as(tensor):
    """0 .. numel - 1 in ``tensor``'s shape: the identity index."""
    return torch.arange(tensor.numel(), device=tensor.device).view(tensor.shape)
