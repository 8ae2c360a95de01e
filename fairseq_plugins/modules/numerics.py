"""Numerics shared by every module: the masking value and softmax in at least float32.

fp16/bf16 activations are promoted to float32 for softmax (as fairseq does); float32 and float64
stay as they are, so float64 reference checks are exact.
"""

import torch
import torch.nn.functional as F


def mask_value(dtype):
    """Additive mask for excluded positions: finite, so that a fully masked row (all padding)
    gives a uniform, not NaN, distribution, and two added masks (causal + padding) cannot
    overflow to -inf."""
    return torch.finfo(dtype).min / 4


def at_least_float32(x):
    return x if x.dtype in (torch.float32, torch.float64) else x.float()


def softmax_fp32(logits, dim=-1):
    """Softmax computed in at least float32, returned in the dtype of ``logits``."""
    if logits.dtype in (torch.float32, torch.float64):
        return F.softmax(logits, dim=dim)
    return F.softmax(logits, dim=dim, dtype=torch.float32).to(logits.dtype)
