"""Build plugin models in-process from command-line style arguments, without data on disk."""

import shlex
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


def parse_training_args(task, arch_args):
    """What fairseq-train's parser makes of ``--task TASK`` and ARCH_ARGS (a list like
    ['--arch', 'compgen_abs', '--rel-pos', 'e']) with the plugin registered; no data on disk."""
    utils.import_user_module(SimpleNamespace(user_dir=USER_DIR))
    parser = options.get_training_parser(default_task=task)
    argv = ["/nonexistent", "--task", task, "--user-dir", USER_DIR]
    return options.parse_args_and_arch(parser, argv + list(arch_args))


def parse_lm_config(arch, train_args):
    """parse_training_args for a language model: ARCH and a config's TRAIN_ARGS (one string)."""
    return parse_training_args("language_modeling", ["--arch", arch] + shlex.split(train_args))


def build(arch_args, dictionary=None, target_dictionary=None, lm=False):
    """arch_args: list like ['--arch', 'compgen_abs', '--rel-pos', 'e']."""
    dictionary = dictionary or toy_dictionary()
    args = parse_training_args("language_modeling" if lm else "translation", arch_args)
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

    task = task or tagging_task()
    args = parse_training_args("cogs_tagging", arch_args)
    torch.manual_seed(0)
    return TaggingTransformerModel.build_model(args, task), args, task


def decode_incrementally(model, src, lengths, tgt, state=None):
    """Log-probabilities of every target step of an encoder-decoder, one decoder call per step."""
    enc = model.encoder(src, lengths)
    state, steps = {} if state is None else state, []
    for t in range(tgt.size(1)):
        out = model.decoder(tgt[:, : t + 1], enc, incremental_state=state)
        steps.append(model.get_normalized_probs(out, log_probs=True)[:, -1:])
    return torch.cat(steps, 1)


def assert_decodes_incrementally_with_beam_reordering(model):
    """On batch(): step-by-step decoding equals the full forward; and two hypotheses of one
    sentence, reordered after 2 steps as beam search does, score their third step as a full
    forward of the reordered prefixes."""
    src, lengths, tgt = batch()
    with torch.no_grad():
        full = full_log_probs(model, src, lengths, tgt)
        torch.testing.assert_close(
            decode_incrementally(model, src, lengths, tgt), full, atol=2e-5, rtol=1e-5
        )
        src2, len2, tgt2 = src[1:2].expand(2, -1), lengths[1:2].expand(2), tgt[:2].clone()
        state = {}
        decode_incrementally(model, src2, len2, tgt2[:, :2], state)
        order = torch.tensor([1, 1])
        model.decoder.reorder_incremental_state_scripting(state, order)
        enc = model.encoder.reorder_encoder_out(model.encoder(src2, len2), order)
        tgt2 = tgt2.index_select(0, order)
        out = model.decoder(tgt2[:, :3], enc, incremental_state=state)
        expected = full_log_probs(model, src2, len2, tgt2[:, :3])[:, -1:]
        got = model.get_normalized_probs(out, log_probs=True)
        torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-5)


# RealFormer (--realformer) models: incremental decoding and padding invariance are checked with
# the other variants (test_variant_models), the carries themselves in test_realformer.
REALFORMER_VARIANTS = {
    "multihead": "--arch variant_transformer --realformer".split(),
    "multihead-rel2-eb-copy-shared": (
        "--arch variant_transformer --realformer --rel-pos eb --rel-pos-cross --rel-pos-radius 2 "
        "--copy-decoder --share-encoder-layers --share-decoder-layers"
    ).split(),
    "compositional-rel-b-shared": (
        "--arch variant_transformer --realformer --attention-type compositional --num-retrievals "
        "2 --retrieval-qk-dim 8 --rel-pos b --share-decoder-layers"
    ).split(),
}


def non_padding_rows(embedding):
    """An embedding's rows other than padding's."""
    weight, pad = embedding.weight, embedding.padding_idx
    return torch.cat([weight[:pad], weight[pad + 1 :]])


def embedding_std(embedding):
    """Std of an embedding's rows other than padding's."""
    return non_padding_rows(embedding).std().item()


def assert_keras_defaults(embedding, linears):
    """EMBEDDING as Keras's default Embedding (uniform in [-0.05, 0.05], padding row zero) and
    LINEARS as its default Dense (Glorot-uniform weight, zero bias): modules/keras_init.py."""
    import math

    rows = non_padding_rows(embedding)
    assert rows.abs().max() <= 0.05 and embedding.weight[embedding.padding_idx].abs().max() == 0
    assert abs(rows.std().item() - 0.1 / math.sqrt(12)) < 0.5 * 0.1 / math.sqrt(12)  # uniform's
    for linear in linears:
        fan_out, fan_in = linear.weight.shape
        assert linear.weight.abs().max() <= math.sqrt(6 / (fan_in + fan_out))
        assert linear.bias is None or linear.bias.abs().max() == 0
