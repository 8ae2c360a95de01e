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


def tiny_model(arch_args, std=0.2, lm=False):
    """A TINY model of ARCH_ARGS (a language model: ARCH_ARGS alone), seeded, its weights
    randomized (std), in evaluation mode."""
    from attention_testing import randomize

    torch.manual_seed(0)
    model, _ = build(arch_args if lm else arch_args + TINY, lm=lm)
    return randomize(model, std=std).eval()


# Whole models of the numerical-safety and dtype tests (with TINY).
MODELS = {
    "stock": ["--arch", "variant_transformer"],
    "compositional-rel2-eb-copy": ["--arch", "compgen_rel2_eb_c", "--attention-type"]
    + ["compositional", "--num-searches", "2", "--num-retrievals", "2", "--rel-pos-radius", "1"],
    "graph-self-gate-half": ["--arch", "graph_transformer", "--graph-fusion", "self-gate"]
    + ["--graph-half-dim", "--rel-pos", "b"],
}


def assert_lm_decodes_incrementally(model, length):
    """A language model's step-by-step log-probabilities (incremental state) equal those of one
    full forward, on random tokens of ``length``."""
    tokens = torch.randint(4, 20, (2, length))
    with torch.no_grad():
        full = model.get_normalized_probs(model(tokens), log_probs=True)
        state, steps = {}, []
        for t in range(length):
            out = model.decoder(tokens[:, : t + 1], incremental_state=state)
            steps.append(model.get_normalized_probs(out, log_probs=True)[:, -1:])
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=2e-5, rtol=1e-5)


# -- the COGS tagging model (tagging_transformer) on a stand-in task --------------------------------
COGS_E0 = "A rose was helped by a dog ."
COGS_E2 = "The girl offered the weapon beside a machine to a chicken ."
TAGGING_TINY = ["--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32"]
TAGGING_TINY += ["--encoder-attention-heads", "2", "--dropout", "0"]


def tagging_task(longest=12):
    """A stand-in for the cogs_tagging task: the words of COGS_E0 and COGS_E2, small tag
    vocabularies, the task's own scoring methods."""
    src = Dictionary()
    for w in (COGS_E0 + " " + COGS_E2).split():
        src.add_symbol(w)
    tag_dicts = {}
    for row, values in {
        "role": ["_", "agent", "theme", "recipient", "PREP", "PP_NOUN"],
        "category": ["_", "CNOUN", "PNOUN", "VERB"],
        "noun_type": ["_", "DEF", "INDEF"],
        "verb_name": ["_", "help", "offer"],
    }.items():
        d = Dictionary()
        for v in values:
            d.add_symbol(v)
        tag_dicts[row] = d
    from fairseq_plugins.tasks.cogs_tagging import CogsTaggingTask

    task = SimpleNamespace(source_dictionary=src, tag_dicts=tag_dicts, longest=longest)
    for name in ("score", "predicted_rows", "gold_rows"):  # the task's own scoring code
        setattr(task, name, getattr(CogsTaggingTask, name).__get__(task))
    return task


def build_tagging(arch_args, task=None):
    """(tagging_transformer model, args, task) of ARCH_ARGS, built as fairseq-train builds it."""
    from fairseq_plugins.models.tagging_transformer import TaggingTransformerModel

    utils.import_user_module(SimpleNamespace(user_dir=USER_DIR))
    task = task or tagging_task()
    parser = options.get_training_parser(default_task="cogs_tagging")
    args = options.parse_args_and_arch(
        parser, ["/nonexistent", "--task", "cogs_tagging", "--user-dir", USER_DIR] + arch_args
    )
    torch.manual_seed(0)
    return TaggingTransformerModel.build_model(args, task), args, task
