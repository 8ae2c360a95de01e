"""Build plugin models in-process from command-line style arguments, without data on disk."""

from types import SimpleNamespace

import torch
from conftest import USER_DIR
from fairseq import options, utils
from fairseq.data import Dictionary
from fairseq.models import build_model


def toy_dictionary(size=20):
    d = Dictionary()
    for i in range(size):
        d.add_symbol(f"w{i}")
    return d


def build(arch_args, dictionary=None, target_dictionary=None, lm=False):
    """arch_args: list like ['--arch', 'compgen_abs', '--rel-pos', 'e']."""
    utils.import_user_module(SimpleNamespace(user_dir=USER_DIR))
    dictionary = dictionary or toy_dictionary()
    task = "language_modeling" if lm else "translation"
    parser = options.get_training_parser(default_task=task)
    args = options.parse_args_and_arch(
        parser, ["/nonexistent", "--task", task, "--user-dir", USER_DIR] + arch_args
    )
    fake_task = SimpleNamespace(
        source_dictionary=dictionary,
        target_dictionary=target_dictionary or dictionary,
    )
    if lm:
        from fairseq_plugins.models.variant_transformer_lm import VariantTransformerLanguageModel

        return VariantTransformerLanguageModel.build_model(args, fake_task), args
    return build_model(args, fake_task), args


# Tiny encoder-decoder sizes and a batch with left padding, shared by the model tests.
TINY = ["--encoder-embed-dim", "32", "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64"]
TINY += [
    "--decoder-ffn-embed-dim",
    "64",
    "--encoder-attention-heads",
    "4",
    "--decoder-attention-heads",
    "4",
]
TINY += ["--encoder-layers", "3", "--decoder-layers", "2", "--dropout", "0"]


def batch():
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 24, (3, 7), generator=g)
    src[1, :2] = 1  # left padding, as fairseq batches sources
    src[2, :4] = 1
    src[:, -1] = 2  # eos
    tgt = torch.randint(4, 24, (3, 5), generator=g)
    tgt[:, 0] = 2  # prev_output_tokens start with eos
    return src, (src != 1).sum(1), tgt


def full_log_probs(model, src, lengths, tgt):
    out = model(src, lengths, tgt)
    return model.get_normalized_probs(out, log_probs=True)


def assert_padding_invariant(model):
    """Each padded sentence of batch() scores the same alone, without its padding."""
    src, lengths, tgt = batch()
    with torch.no_grad():
        batched = full_log_probs(model, src, lengths, tgt)
        for b in (1, 2):
            real = src[b : b + 1, src.size(1) - lengths[b] :]
            alone = full_log_probs(model, real, lengths[b : b + 1], tgt[b : b + 1])
            torch.testing.assert_close(batched[b : b + 1], alone, atol=2e-5, rtol=1e-5)


def tiny_model(arch_args, std=0.2):
    """A TINY model of ARCH_ARGS, seeded, its weights randomized (std), in evaluation mode."""
    from attention_testing import randomize

    torch.manual_seed(0)
    model, _ = build(arch_args + TINY)
    return randomize(model, std=std).eval()
