"""Abacus embeddings and position coupling as options (--abacus, --position-coupling TASK):
parsing and errors, the built model's embeddings against a re-statement on its own tables,
incremental decoding with a beam reorder against full passes, padding invariance, state-dict
keys, training and evaluation draws, and one run through fairseq-train and fairseq-generate."""

import model_testing
import pytest
import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.data import Dictionary
from fairseq.modules import SinusoidalPositionalEmbedding
from model_testing import (
    TINY,
    assert_decodes_incrementally_with_beam_reordering,
    assert_padding_invariant,
    build,
    toy_dictionary,
)

from fairseq_plugins.modules.digit_positions import (
    DigitPositionVectors,
    coupled_source_ids,
    coupled_target_ids,
    coupling_span,
    source_length,
)
from plugin_tools.errors import PluginConfigError

SYMBOLS = [str(d) for d in range(10)] + ["[SEP]", "#", "-"]
MODEL = ["--arch", "variant_transformer"]
VARIANTS = {
    "abacus-sinusoidal": ["--abacus"],
    "abacus-learned": ["--abacus", "--encoder-learned-pos", "--decoder-learned-pos"],
    "coupling-abacus-rel2-t5": ["--abacus", "--position-coupling", "add"]
    + ["--rel-pos", "t5", "--rel-pos-cross"],
    "coupling-geometric": ["--position-coupling", "add", "--encoder-attention-type", "geometric"],
}
# compgen-style sources (as fairseq binarizes them: the tokens, then </s>) of each task
SOURCES = {
    "add": ["0 1 2 3 [SEP] 0 0 4 5", "1 2 [SEP] 3 4", "7 [SEP] 8"],
    "addneg": ["# - 1 2 [SEP] 0 3 4 5", "- 2 [SEP] 3 4", "7 [SEP] - 8"],
    "reverse": ["1 2 3 4 5 6", "7 8 9", "0 1"],
    "dup": ["1 2 3 4 5 6", "7 8 9", "0 1"],
}


def digit_dictionary(symbols=SYMBOLS):
    d = Dictionary()
    for s in symbols:
        d.add_symbol(s)
    return d


def digit_batch(task="add"):
    """model_testing.batch()'s shape on digit sentences: 3 sources, the last two left-padded,
    and decoder inputs </s> + 4 digits."""
    d = digit_dictionary()
    rows = [[d.index(t) for t in line.split()] + [d.eos()] for line in SOURCES[task]]
    width = max(len(r) for r in rows)
    src = torch.tensor([[d.pad()] * (width - len(r)) + r for r in rows])
    g = torch.Generator().manual_seed(1)
    tgt = torch.randint(d.index("0"), d.index("9") + 1, (3, 5), generator=g)
    tgt[:, 0] = d.eos()
    return src, src.ne(d.pad()).sum(1), tgt


def digit_model(options):
    """A TINY digit model of OPTIONS (tiny_model's seed and randomized weights), in eval()."""
    from attention_testing import randomize

    torch.manual_seed(0)
    model, _ = build(MODEL + options + TINY, digit_dictionary())
    return randomize(model, std=0.2).eval()


def one_line_error(options, start, dictionary=None, target_dictionary=None, lm=False):
    with pytest.raises(PluginConfigError) as error:
        build(options, dictionary or digit_dictionary(), target_dictionary, lm=lm)
    message = str(error.value)
    assert message.startswith(start) and "\n" not in message, message


def test_options_parse_into_the_built_modules():
    model, args = build(
        MODEL + ["--abacus", "--position-coupling", "dup"] + TINY, digit_dictionary()
    )
    encoder, decoder = model.encoder, model.decoder
    assert (args.abacus_max_id, args.abacus_max_offset, args.position_coupling_max_id) == (
        128,
        99,
        64,
    )
    assert encoder.abacus.table.max_id == decoder.abacus.table.max_id == 128
    assert encoder.abacus.max_offset == 99
    assert encoder.abacus.count_from_end and not decoder.abacus.count_from_end
    assert encoder.coupling is decoder.coupling
    assert (encoder.coupling.task, encoder.coupling.table.max_id) == ("dup", 64)
    for stack in (encoder, decoder):  # coupling replaces the absolute positions
        assert isinstance(stack.embed_positions, DigitPositionVectors)
    plan = model.encoder.plan  # the plan's slices of the stacks are unchanged
    assert not plan.absolute_positions and not model.decoder.plan.absolute_positions
    custom = ["--abacus", "--abacus-max-id", "40", "--abacus-max-offset", "7"]
    custom += ["--position-coupling", "add", "--position-coupling-max-id", "20"]
    model, _ = build(MODEL + custom + TINY, digit_dictionary())
    assert model.decoder.abacus.table.max_id == 40 and model.encoder.abacus.max_offset == 7
    assert model.decoder.coupling.table.max_id == 20
    off, _ = build(MODEL + TINY, digit_dictionary())
    for stack in (off.encoder, off.decoder):
        assert stack.abacus is None and stack.coupling is None and stack.digit_draws is None
        assert isinstance(stack.embed_positions, SinusoidalPositionalEmbedding)
        assert not stack.embed_positions._forward_hooks


def test_bad_values_and_combinations_are_one_line_errors_naming_the_flag():
    one_line_error(MODEL + ["--position-coupling", "cart"], "--position-coupling: unknown value")
    one_line_error(MODEL + ["--abacus", "--abacus-max-id", "0"], "--abacus-max-id must be >= 1")
    one_line_error(MODEL + ["--abacus-max-offset", "-1"], "--abacus-max-offset must be >= 0")
    one_line_error(
        MODEL + ["--position-coupling-max-id", "0"], "--position-coupling-max-id must be >= 1"
    )
    random = ["--position-coupling", "add", "--random-positions-max-length", "40"]
    one_line_error(MODEL + random, "--position-coupling is not available with --random-pos")
    one_line_error(
        MODEL + ["--abacus"],
        "--abacus: the source dictionary has none of the digits",
        toy_dictionary(),
    )
    one_line_error(
        MODEL + ["--abacus"],
        "--abacus: the target dictionary has none of the digits",
        target_dictionary=toy_dictionary(),
    )
    no_sep = digit_dictionary([s for s in SYMBOLS if s != "[SEP]"])
    for task in ("add", "addneg"):
        one_line_error(
            MODEL + ["--position-coupling", task],
            f"--position-coupling {task}: the source dictionary has no [SEP]",
            no_sep,
        )
    build(MODEL + ["--position-coupling", "reverse"] + TINY, no_sep)  # no [SEP] needed
    markers = digit_dictionary(SYMBOLS + [f"P{k}" for k in range(1, 13)])
    one_line_error(
        MODEL + ["--position-coupling", "add"],
        "--position-coupling add: the source dictionary has --alignment-tokens markers",
        markers,
    )
    dims = ["--encoder-embed-dim", "32", "--decoder-embed-dim", "16"]
    one_line_error(
        MODEL + ["--position-coupling", "add"] + dims,
        "--position-coupling add needs equal encoder and decoder embedding dimensions",
    )
    for flag in ("--abacus", "--position-coupling add"):
        one_line_error(
            ["--arch", "variant_transformer_lm"] + flag.split(),
            f"{flag.split()[0]} is available for the encoder-decoder model only",
            lm=True,
        )


def layer_inputs(model):
    """Forward pre-hooks recording the input x (T, B, D) of each stack's first layer: the
    embeddings after positions (dropout is 0 in TINY); returns the dict they fill."""
    seen = {}
    for name, stack in (("encoder", model.encoder), ("decoder", model.decoder)):
        stack.layers[0].register_forward_pre_hook(
            lambda module, args, name=name: seen.__setitem__(name, args[0].transpose(0, 1))
        )
    return seen


def abacus_restated(tokens, digits, from_end, offset):
    """Abacus ids by a plain loop: a digit's 1-based index in its run of digits (from the
    run's start or end) plus ``offset``, 0 for every other token."""
    ids = torch.zeros_like(tokens)
    for b, row in enumerate(tokens.tolist()):
        order = range(len(row) - 1, -1, -1) if from_end else range(len(row))
        count = 0
        for i in order:
            count = count + 1 if row[i] in digits else 0
            ids[b, i] = count + offset if count else 0
    return ids


def sinusoids(tokens, dim, pad=1):
    table = SinusoidalPositionalEmbedding.get_embedding(tokens.size(1) + pad + 1, dim, pad)
    return F.embedding(utils.make_positions(tokens, pad), table, pad)


@pytest.mark.parametrize("task", ["add", "addneg", "reverse", "dup"])
@pytest.mark.parametrize("training", [False, True])
def test_embeddings_equal_the_restatement_on_the_models_tables(task, training):
    """The first layers' inputs: scaled token embeddings + Abacus rows (ids re-stated by a
    loop, the encoder's draw of the offset) + coupled rows (the module's ids, tested against
    Cho et al.'s lists in test_digit_positions.py, at the encoder's starts); with
    ``--abacus`` alone, + fairseq's sinusoids."""
    d = digit_dictionary()
    digits = {d.index(s) for s in SYMBOLS[:10]}
    src, lengths, tgt = digit_batch(task)
    for options in (["--abacus"], ["--abacus", "--position-coupling", task]):
        model = digit_model(options).double().train(training)
        seen = layer_inputs(model)
        torch.manual_seed(5)
        with torch.no_grad():
            encoder_out = model.encoder(src, lengths)
            model.decoder(tgt, encoder_out)
        offset = int(encoder_out["abacus_offset"][0])
        assert (offset > 0) == training  # 0 at evaluation; this seed's training draw is not
        symbols = model.encoder.coupling.symbols if len(options) > 1 else None
        for name, tokens in (("encoder", src), ("decoder", tgt)):
            stack = getattr(model, name)
            ids = abacus_restated(tokens, digits, name == "encoder", offset)
            expected = stack.embed_scale * stack.embed_tokens(tokens)
            expected = expected + stack.abacus.table.weight[ids]
            if symbols is None:
                expected = expected + sinusoids(tokens, expected.size(-1)).double()
            else:
                start = encoder_out["coupling_start"][0]
                if name == "encoder":
                    coupled = coupled_source_ids(task, src, symbols, start)
                else:
                    coupled = coupled_target_ids(task, src, tgt, symbols, start)
                expected = expected + stack.coupling.table.weight[coupled]
            real = tokens.ne(d.pad()).unsqueeze(-1)  # the encoder zeroes its padding
            torch.testing.assert_close(seen[name] * real, expected * real)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_decoding_equals_the_full_pass_with_beams_and_padding_changes_nothing(variant, monkeypatch):
    """At evaluation (offset 0, starts 1): model_testing's incremental-decoding and padding
    checks on digit sentences of the add task (model_testing.batch's shape)."""
    model = digit_model(VARIANTS[variant]).double()
    monkeypatch.setattr(model_testing, "batch", digit_batch)
    assert_decodes_incrementally_with_beam_reordering(model)
    assert_padding_invariant(model)


def test_training_draws_follow_the_beams_through_reorder_encoder_out():
    """In training (random offset and starts), step-by-step decoding on one encoder_out equals
    the full pass on it. Beam search: the encoder runs once per sentence and its output is
    repeated for 2 beams; after 2 steps the beams are reordered and one finished sentence
    dropped (fairseq's shrinking batch): the next step equals the full pass of the reordered
    prefixes on the reordered encoder_out, whose starts moved with their sentences and whose
    offset stayed."""
    model = digit_model(VARIANTS["coupling-abacus-rel2-t5"]).double().train()
    src, lengths, tgt = digit_batch()

    def log_probs(out):
        return model.get_normalized_probs(out, log_probs=True)

    torch.manual_seed(3)
    with torch.no_grad():
        encoder_out = model.encoder(src, lengths)
        start = encoder_out["coupling_start"][0]
        assert len(set(start.tolist())) == 3  # three different starts in this draw
        full = log_probs(model.decoder(tgt, encoder_out))
        state, steps = {}, []
        for t in range(tgt.size(1)):
            steps.append(log_probs(model.decoder(tgt[:, : t + 1], encoder_out, state))[:, -1:])
        torch.testing.assert_close(torch.cat(steps, 1), full, atol=2e-5, rtol=1e-5)

        beams = torch.tensor([0, 0, 1, 1, 2, 2])
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, beams)
        hypotheses = torch.cat([tgt, tgt.flip(1)]).index_select(0, torch.tensor([0, 3, 1, 4, 2, 5]))
        hypotheses[:, 0] = tgt[0, 0]  # </s> first
        state = {}
        for t in range(2):
            model.decoder(hypotheses[:, : t + 1], encoder_out, incremental_state=state)
        order = torch.tensor([1, 1, 4, 5])  # sentence 1 finished, sentence 0's beam 1 twice
        model.decoder.reorder_incremental_state_scripting(state, order)
        reordered = model.encoder.reorder_encoder_out(encoder_out, order)
        assert reordered["coupling_start"][0].tolist() == start[[0, 0, 2, 2]].tolist()
        assert reordered["abacus_offset"] is encoder_out["abacus_offset"]
        prefix = hypotheses.index_select(0, order)[:, :3]
        got = log_probs(model.decoder(prefix, reordered, incremental_state=state))
        expected = log_probs(model.decoder(prefix, reordered))[:, -1:]
        torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-5)


def test_draws_are_random_in_training_and_fixed_at_evaluation():
    model = digit_model(["--abacus", "--position-coupling", "add"])
    src, lengths, tgt = digit_batch()
    span = coupling_span("add", source_length("add", src, model.encoder.coupling.symbols))
    with torch.no_grad():
        outs = [model.encoder(src, lengths) for _ in range(2)]
        for out in outs:
            assert int(out["abacus_offset"][0]) == 0
            assert out["coupling_start"][0].tolist() == [1, 1, 1]
        torch.testing.assert_close(outs[0]["encoder_out"][0], outs[1]["encoder_out"][0])
        first = model(src, lengths, tgt)[0]
        torch.testing.assert_close(model(src, lengths, tgt)[0], first)

        model.train()
        torch.manual_seed(0)
        outs = [model.encoder(src, lengths) for _ in range(30)]
    offsets = [int(out["abacus_offset"][0]) for out in outs]
    starts = torch.stack([out["coupling_start"][0] for out in outs])
    assert all(0 <= k <= 99 for k in offsets) and len(set(offsets)) > 10  # one per batch
    assert bool((starts >= 1).all()) and bool((starts <= 64 - span + 1).all())
    assert len({tuple(row) for row in starts.tolist()}) == 30  # per sentence, per forward


@pytest.mark.parametrize(
    "options, added, removed",
    [
        (["--abacus"], ["encoder.abacus.table.weight", "decoder.abacus.table.weight"], []),
        (
            ["--abacus", "--encoder-learned-pos", "--decoder-learned-pos"],
            ["encoder.abacus.table.weight", "decoder.abacus.table.weight"],
            [],
        ),
        (
            ["--position-coupling", "add", "--encoder-learned-pos", "--decoder-learned-pos"],
            ["encoder.coupling.table.weight", "decoder.coupling.table.weight"],
            ["encoder.embed_positions.weight", "decoder.embed_positions.weight"],
        ),
    ],
)
def test_state_dict_keys(options, added, removed):
    """The options add their tables (coupling's one table under both stacks, as fairseq's
    shared embeddings) and coupling removes the absolute tables it replaces; the rest stays."""
    learned = [o for o in options if o.endswith("learned-pos")]
    off, _ = build(MODEL + learned + TINY, digit_dictionary())
    on = digit_model(options)
    keys = set(on.state_dict())
    assert keys == (set(off.state_dict()) - set(removed)) | set(added)
    assert set(removed) <= set(off.state_dict())
    if "--position-coupling" in options:
        state = on.state_dict()
        assert state[added[0]].data_ptr() == state[added[1]].data_ptr()
    again = digit_model(options)
    again.load_state_dict(on.state_dict())  # strict: the keys round-trip
    for name, tensor in again.state_dict().items():
        assert torch.equal(tensor, on.state_dict()[name]), name


@pytest.mark.slow
def test_digit_positions_train_and_generate_through_fairseqs_clis(tmp_path):
    from position_options_testing import compgen_bin, train_and_generate

    data = compgen_bin("add", tmp_path / "data")
    options = ["--abacus", "--position-coupling", "add"]
    checkpoint = train_and_generate(data, tmp_path / "ckpt", options)
    model_cfg = checkpoint["cfg"]["model"]
    assert model_cfg.abacus and model_cfg.position_coupling == "add"
    for key in ("encoder.abacus.table.weight", "decoder.coupling.table.weight"):
        assert key in checkpoint["model"]


def test_abacus_adds_to_the_randomized_positions():
    """With --random-positions-max-length the absolute embedding's output is first replaced by
    the sampled positions' sinusoids (their hook), then the Abacus vectors are added (ours)."""
    model = digit_model(["--abacus", "--random-positions-max-length", "40"])
    encoder = model.encoder
    src, _, _ = digit_batch()
    positions = torch.tensor([[0, 3, 5, 6, 9, 20, 21, 22, 30, 39]]).expand(3, -1)
    positions = positions.masked_fill(src.eq(1), 0)
    with encoder.sampled_positions.drawn(positions), encoder.digit_draws.drawn(src, 7, None):
        got = encoder.embed_positions(src)
    table = SinusoidalPositionalEmbedding.get_embedding(42, 32, 1)
    expected = F.embedding((positions + 2).masked_fill(src.eq(1), 1), table, 1)
    digits = {digit_dictionary().index(s) for s in SYMBOLS[:10]}
    expected = expected + encoder.abacus.table.weight[abacus_restated(src, digits, True, 7)]
    torch.testing.assert_close(got, expected)
