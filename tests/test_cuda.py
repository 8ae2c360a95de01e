"""On a CUDA device (every test here is marked ``cuda``; without CUDA they are skipped under one
summary line, and ``scripts/gpu-check.sh`` runs them on a GPU host):

- every attention type x relative positions (none, e, b, eb, rel2-eb) x copy decoder x graph
  fusion, as a whole tiny model: forward (evaluation) and one training step's gradients on CUDA in
  float32, float16 and bfloat16 equal to float32 on CPU within the tolerance of attention_testing
  (float32: 1e-4; half dtypes: 8 machine epsilons; gradients: 4 times that, relative to the
  largest gradient), and incremental decoding on CUDA (with a beam reordering) equal to the full
  pass on CUDA;
- every attention kind's fused and explicit paths, with rows long enough for the in-place band
  bias, forward and backward against CPU float32;
- the language model and the COGS tagging model, likewise.

The checks (tests/device_checks.py) take the device as an argument, so tests/test_gpu_check.py
runs one of each on CPU to keep them working on machines without a GPU.
"""

import pytest
import torch
from attention_testing import KINDS
from device_checks import (
    CONFIGS,
    check_attention_paths,
    check_incremental_decoding,
    check_language_model,
    check_model_matches_cpu,
    check_tagging_model,
)

pytestmark = pytest.mark.cuda

DEVICE = "cuda"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["fp32", "fp16", "bf16"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_model_on_cuda_matches_cpu(config, dtype):
    check_model_matches_cpu(CONFIGS[config], DEVICE, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_incremental_decoding_on_cuda_equals_full_pass(config, dtype):
    check_incremental_decoding(CONFIGS[config], DEVICE, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "explicit"])
@pytest.mark.parametrize("kind", KINDS)
def test_attention_paths_on_cuda_match_cpu(kind, need_weights, dtype):
    check_attention_paths(kind, need_weights, DEVICE, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_language_model_on_cuda(dtype):
    check_language_model(DEVICE, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_tagging_model_on_cuda(dtype):
    check_tagging_model(DEVICE, dtype)
