"""The end-to-end run shared by the position-option tests (test_position_options_*.py): a small
compgen model trained for two updates by fairseq-train, then decoded by fairseq-generate's beam
search."""

import sys

import torch
from conftest import ROOT, fairseq_preprocess, run, train_then_generate

import fairseq_plugins  # noqa: F401  (safe globals: fairseq checkpoints load with weights_only)

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
    return torch.load(save / "checkpoint_last.pt", weights_only=True)


def compgen_bin(task, folder):
    """scripts/compgen-data.py TASK (300 train, 100 valid, 100 test sentences) in FOLDER/raw,
    binarized with a joined dictionary into FOLDER/bin; returns FOLDER/bin."""
    raw, binarized = folder / "raw", folder / "bin"
    sizes = ["--train", "300", "--valid", "100", "--test", "100"]
    run([sys.executable, ROOT / "scripts" / "compgen-data.py", task, raw] + sizes)
    fairseq_preprocess(raw, binarized)
    return binarized
