"""The end-to-end run shared by the position-option tests (test_position_options_*.py): a small
compgen model trained for two updates by fairseq-train, then decoded by fairseq-generate's beam
search."""

import torch
from conftest import train_then_generate

TRAIN = ["--optimizer", "adam", "--lr", "5e-4", "--max-tokens", "400", "--max-update", "2"]
TRAIN += ["--no-progress-bar", "--log-interval", "1", "--no-epoch-checkpoints", "--cpu"]
GENERATE = ["--beam", "3", "--batch-size", "50", "--max-len-b", "6", "--cpu"]


def train_and_generate(data, save, options):
    """compgen_small_2 with OPTIONS trained on DATA (checkpoints in SAVE), then every test
    sentence decoded; returns the last checkpoint (loaded)."""
    _, hyps = train_then_generate(
        data, save, ["--arch", "compgen_small_2"] + options + TRAIN, GENERATE, updates=2
    )
    assert len(hyps) == 100  # every test sentence decoded
    return torch.load(save / "checkpoint_last.pt", weights_only=False)
