"""Abacus ids and position coupling (modules/digit_positions.py) on our compgen formats: hand-written
ids of small examples, a per-sentence re-statement of Cho et al.'s id lists (their
``AdditionDatasetWithCoupledPositions`` / ``CopyDatasetWithCoupledPositions`` in our formats) on
generated data, padding invariance, incremental steps against full sequences, the random offsets
and the embedding tables (float64)."""

import random

import pytest
import torch
from fairseq.data import Dictionary

from fairseq_plugins.modules.digit_positions import (
    AbacusEmbedding,
    CouplingSymbols,
    PositionCoupling,
    PositionIdEmbedding,
    abacus_ids,
    coupled_source_ids,
    coupled_target_ids,
    coupled_target_ids_at_step,
    digit_indices,
    draw_coupling_start,
    run_index,
    source_length,
)
from plugin_tools import compgen_data

SYMBOLS = [str(d) for d in range(10)] + ["[SEP]", "#", "-"]


@pytest.fixture(scope="module")
def dictionary():
    d = Dictionary()
    for s in SYMBOLS:
        d.add_symbol(s)
    return d


def encode(d, line):
    """A source as fairseq binarizes it: the tokens, then </s>."""
    return [d.index(t) for t in line.split()] + [d.eos()]


def decoder_input(d, line):
    """prev_output_tokens of a target: </s> first, the tokens, no final </s>."""
    return [d.eos()] + [d.index(t) for t in line.split()]


def batch(rows, pad, left=True):
    """(B, T) long of token lists padded to the longest (left: as fairseq pads sources)."""
    width = max(len(r) for r in rows)
    padded = [
        ([pad] * (width - len(r)) + r) if left else (r + [pad] * (width - len(r))) for r in rows
    ]
    return torch.tensor(padded, dtype=torch.long)


def ones(n):
    return torch.ones(n, dtype=torch.long)


# -- Abacus ids -----------------------------------------------------------------------------------
def test_abacus_ids_by_hand_left_padded_with_eos(dictionary):
    d = dictionary
    rows = [
        encode(d, "# # - 3 6 7 [SEP] # # 1 4 9 1"),
        encode(d, "0 0 5 [SEP] 0 4 2"),
    ]
    src = batch(rows, d.pad())
    digits = digit_indices(d)
    #           pads  #  #  -  3  6  7 SEP #  #  1  4  9  1 </s>
    from_end = [
        [0, 0, 0, 3, 2, 1, 0, 0, 0, 4, 3, 2, 1, 0],
        [0, 0, 0, 0, 0, 0, 3, 2, 1, 0, 3, 2, 1, 0],
    ]
    from_start = [
        [0, 0, 0, 1, 2, 3, 0, 0, 0, 1, 2, 3, 4, 0],
        [0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 1, 2, 3, 0],
    ]
    assert abacus_ids(src, digits, count_from_end=True).tolist() == from_end
    assert abacus_ids(src, digits, count_from_end=False).tolist() == from_start
    # the offset goes to the digits alone
    shifted = abacus_ids(src, digits, count_from_end=True, offset=5)
    assert shifted.tolist() == [[x + 5 if x else 0 for x in row] for row in from_end]


def test_abacus_add_source_columns_are_significances(dictionary):
    """add: every number is one run of 12 digits (zero padding), so from the end the id is the
    column's significance, the same in both operands."""
    d = dictionary
    src, _ = compgen_data.gen_add(random.Random(3), False, 0)
    ids = abacus_ids(torch.tensor([encode(d, " ".join(src))]), digit_indices(d), True)[0]
    expected = list(range(12, 0, -1)) + [0] + list(range(12, 0, -1)) + [0]
    assert ids.tolist() == expected


def run_index_reference(mask, from_end):
    """Per row, by a plain loop: 1-based index within each maximal run of Trues."""
    out = []
    for row in mask.tolist():
        row = row[::-1] if from_end else row
        ids, count = [], 0
        for bit in row:
            count = count + 1 if bit else 0
            ids.append(count)
        out.append(ids[::-1] if from_end else ids)
    return out


@pytest.mark.parametrize("from_end", [False, True])
def test_run_index_matches_a_loop_on_random_masks(from_end):
    gen = torch.Generator().manual_seed(0)
    mask = torch.rand(16, 23, generator=gen) < 0.6
    assert run_index(mask, from_end).tolist() == run_index_reference(mask, from_end)


def test_abacus_padding_invariance(dictionary):
    d = dictionary
    rng = random.Random(5)
    rows = [encode(d, " ".join(compgen_data.gen_addneg(rng, False, i)[0])) for i in range(6)]
    rows += [encode(d, " ".join(compgen_data.gen_reverse(rng, False, i)[0])) for i in range(6)]
    digits = digit_indices(d)
    for from_end in (False, True):
        ids = abacus_ids(batch(rows, d.pad()), digits, from_end, offset=3)
        for row, alone in zip(ids, rows):
            single = abacus_ids(torch.tensor([alone]), digits, from_end, offset=3)[0]
            assert row[row.numel() - len(alone) :].tolist() == single.tolist()
            assert row[: row.numel() - len(alone)].eq(0).all()


def test_abacus_decoder_ids_from_the_start_are_causal_from_the_end_are_not(dictionary):
    """Incremental decoding sees the prefix: counting from the run's start, the last id of each
    prefix is the full sequence's id; counting from the end it is not (why the decoder cannot)."""
    d = dictionary
    tgt = torch.tensor([decoder_input(d, "# # 1 1 2 4"), decoder_input(d, "0 0 9 9 9 8")])
    digits = digit_indices(d)
    full = abacus_ids(tgt, digits, False, offset=7)
    steps = [abacus_ids(tgt[:, : t + 1], digits, False, offset=7)[:, -1] for t in range(7)]
    assert torch.equal(torch.stack(steps, 1), full)
    full_end = abacus_ids(tgt, digits, True)
    steps_end = [abacus_ids(tgt[:, : t + 1], digits, True)[:, -1] for t in range(7)]
    assert not torch.equal(torch.stack(steps_end, 1), full_end)


def abacus(d, max_id=40, max_offset=10, from_end=True, dim=6, seed=0):
    torch.manual_seed(seed)
    return AbacusEmbedding(digit_indices(d), dim, max_id, max_offset, from_end).double()


def test_abacus_offset_train_and_eval(dictionary):
    module = abacus(dictionary, max_offset=4)
    module.eval()
    assert [module.sample_offset() for _ in range(20)] == [0] * 20
    module.train()
    draws = [module.sample_offset(torch.Generator().manual_seed(s)) for s in range(200)]
    again = [module.sample_offset(torch.Generator().manual_seed(s)) for s in range(200)]
    assert draws == again  # seeded
    assert set(draws) == {0, 1, 2, 3, 4}  # 0 .. max_offset inclusive, as random.randint(0, max_k)
    assert abacus(dictionary, max_offset=0).train().sample_offset() == 0


def test_abacus_embedding_output_and_gradients(dictionary):
    d = dictionary
    module = abacus(d, max_id=12, dim=5)
    src = batch([encode(d, "1 2 [SEP] 3"), encode(d, "7 [SEP] 4 4 5")], d.pad())
    ids = module.ids(src, offset=2)
    assert ids.tolist() == [[0, 4, 3, 0, 3, 0], [3, 0, 5, 4, 3, 0]]
    out = module(src, offset=2)
    assert out.dtype == torch.float64 and out.shape == (2, 6, 5)
    weight = module.table.weight
    torch.testing.assert_close(out, weight[ids])
    assert out[ids.eq(0)].abs().max() == 0  # non-digits, </s> and padding: zero vectors
    # d(sum of out * w)/d table row r = w summed over the tokens with id r
    w = torch.randn(2, 6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (out * w).sum().backward()
    expected = torch.zeros_like(weight)
    expected.index_add_(0, ids.flatten(), w.reshape(-1, 5))
    expected[0] = 0  # the padding row gets no gradient
    torch.testing.assert_close(weight.grad, expected)


def test_position_id_embedding_initialisation():
    torch.manual_seed(0)
    table = PositionIdEmbedding(400, 64, "--x")
    assert table.weight[0].abs().max() == 0
    assert abs(float(table.weight[1:].std()) - 64**-0.5) < 0.01


# -- position coupling ----------------------------------------------------------------------------
def coupling_reference(task, src, tgt, s):
    """Cho et al.'s per-example id lists, written for our formats (their `=`: our source </s> and
    decoder step 0): (source ids incl. </s>, decoder input ids incl. the leading </s>)."""
    if task in ("add", "addneg"):
        sep = src.index("[SEP]")
        a, b = src[:sep], src[sep + 1 :]
        width = max(len(a), len(b))
        end = s + width + 1
        source = list(range(end - len(a), end)) + [end] + list(range(end - len(b), end)) + [end]
        assert len(tgt) == width  # our sums are written in the operands' width
        return source, [end] + list(range(end - len(tgt), end))
    n = len(src)
    if task == "reverse":
        return list(range(s, s + n + 1)), [s + n] + list(range(s, s + n))[::-1]
    return list(range(s + 1, s + n + 1)) + [s], [s] + 2 * list(range(s + 1, s + n + 1))


def examples(task, count, seed):
    gen = compgen_data.GENERATORS[task]
    rng = random.Random(seed)
    return [gen(rng, i % 2 == 1, i) for i in range(count)]  # easy and hard (longer) examples


@pytest.mark.parametrize("task", ["add", "addneg", "reverse", "dup"])
def test_coupled_ids_match_cho_et_al_on_generated_batches(dictionary, task):
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    pairs = examples(task, 12, seed=11)
    src = batch([encode(d, " ".join(s)) for s, _ in pairs], d.pad())
    tgt = batch([decoder_input(d, " ".join(t)) for _, t in pairs], d.pad(), left=False)
    start = torch.arange(1, len(pairs) + 1)  # a different start in every sentence
    got_src = coupled_source_ids(task, src, sym, start)
    got_tgt = coupled_target_ids(task, src, tgt, sym, start)
    for b, (s, t) in enumerate(pairs):
        ref_src, ref_tgt = coupling_reference(task, s, t, int(start[b]))
        n_src, n_tgt = len(ref_src), len(ref_tgt)
        assert got_src[b, -n_src:].tolist() == ref_src
        assert got_src[b, :-n_src].eq(0).all()  # left padding
        assert got_tgt[b, :n_tgt].tolist() == ref_tgt
        assert got_tgt[b, n_tgt:].eq(0).all()  # right padding


def test_coupled_ids_by_hand(dictionary):
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    # add: W = 3, start 1, end = 5; `- 4` right-aligned with the columns of `1 2 3`
    src = batch([encode(d, "1 2 3 [SEP] 0 4 5"), encode(d, "1 [SEP] - 4")], d.pad())
    assert coupled_source_ids("addneg", src, sym, ones(2)).tolist() == [
        [2, 3, 4, 5, 2, 3, 4, 5],
        [0, 0, 0, 3, 4, 2, 3, 4],  # W = 2, end = 4: `1` and `4` share the units column 3
    ]
    tgt = batch([decoder_input(d, "1 6 8"), decoder_input(d, "- 3")], d.pad(), left=False)
    assert coupled_target_ids("addneg", src, tgt, sym, ones(2)).tolist() == [
        [5, 2, 3, 4],
        [4, 2, 3, 0],
    ]
    # reverse `3 4 5` -> `5 4 3`: the target's k-th token has the id of source token n+1-k
    src = batch([encode(d, "3 4 5"), encode(d, "7")], d.pad())
    tgt = batch([decoder_input(d, "5 4 3"), decoder_input(d, "7")], d.pad(), left=False)
    assert coupled_source_ids("reverse", src, sym, ones(2)).tolist() == [[1, 2, 3, 4], [0, 0, 1, 2]]
    assert coupled_target_ids("reverse", src, tgt, sym, ones(2)).tolist() == [
        [4, 3, 2, 1],
        [2, 1, 0, 0],
    ]
    # dup `3 4 5` -> `3 4 5 3 4 5`, start 2
    tgt = batch([decoder_input(d, "3 4 5 3 4 5"), decoder_input(d, "7 7")], d.pad(), left=False)
    start = torch.tensor([2, 2])
    assert coupled_source_ids("dup", src, sym, start).tolist() == [[3, 4, 5, 2], [0, 0, 3, 2]]
    assert coupled_target_ids("dup", src, tgt, sym, start).tolist() == [
        [2, 3, 4, 5, 3, 4, 5],
        [2, 3, 3, 0, 0, 0, 0],
    ]


@pytest.mark.parametrize("task", ["add", "addneg", "reverse", "dup"])
def test_coupled_ids_padding_invariance(dictionary, task):
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    pairs = examples(task, 8, seed=2)
    rows = [encode(d, " ".join(s)) for s, _ in pairs]
    targets = [decoder_input(d, " ".join(t)) for _, t in pairs]
    start = torch.tensor([1, 4, 2, 9, 3, 3, 7, 1])
    src, tgt = batch(rows, d.pad()), batch(targets, d.pad(), left=False)
    got_src = coupled_source_ids(task, src, sym, start)
    got_tgt = coupled_target_ids(task, src, tgt, sym, start)
    right = coupled_source_ids(task, batch(rows, d.pad(), left=False), sym, start)
    for b, (row, target) in enumerate(zip(rows, targets)):
        alone, s = torch.tensor([row]), start[b : b + 1]
        single = coupled_source_ids(task, alone, sym, s)[0].tolist()
        assert got_src[b, -len(row) :].tolist() == single
        assert right[b, : len(row)].tolist() == single  # right padding: the same ids
        single_tgt = coupled_target_ids(task, alone, torch.tensor([target]), sym, s)[0]
        assert got_tgt[b, : len(target)].tolist() == single_tgt.tolist()


@pytest.mark.parametrize("task", ["add", "addneg", "reverse", "dup"])
def test_incremental_steps_equal_the_full_sequence(dictionary, task):
    """Step t from the source and t alone == column t of the full decoder input, including steps
    past the target's end (a hypothesis that did not stop: id 0)."""
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    pairs = examples(task, 6, seed=7)
    src = batch([encode(d, " ".join(s)) for s, _ in pairs], d.pad())
    longest = max(len(t) for _, t in pairs) + 3
    # every hypothesis runs `longest` steps (no padding): what beam search feeds the decoder
    tgt = torch.tensor(
        [decoder_input(d, " ".join(t + ["5"] * (longest - len(t)))) for _, t in pairs]
    )
    start = torch.tensor([1, 2, 3, 5, 8, 13])
    full = coupled_target_ids(task, src, tgt, sym, start)
    steps = [coupled_target_ids_at_step(task, src, sym, start, t) for t in range(tgt.size(1))]
    assert torch.equal(torch.stack(steps, 1), full)
    assert full[:, -1].eq(0).all()  # past every target: no position
    # the module's vectors of each prefix end with the full sequence's vector of that step
    torch.manual_seed(0)
    coupling = PositionCoupling(task, sym, 4, 64).double().eval()
    whole = coupling.target(src, tgt, start)
    for t in range(tgt.size(1)):
        torch.testing.assert_close(coupling.target(src, tgt[:, : t + 1], start)[:, -1], whole[:, t])


@pytest.mark.parametrize("task", ["add", "reverse", "dup"])
def test_coupling_start_train_and_eval(dictionary, task):
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    pairs = examples(task, 64, seed=4)
    src = batch([encode(d, " ".join(s)) for s, _ in pairs], d.pad())
    max_id = 30
    assert draw_coupling_start(task, src, sym, max_id, training=False).eq(1).all()
    draw = draw_coupling_start(task, src, sym, max_id, True, torch.Generator().manual_seed(3))
    again = draw_coupling_start(task, src, sym, max_id, True, torch.Generator().manual_seed(3))
    assert torch.equal(draw, again)  # seeded
    assert len(set(draw.tolist())) > 1  # one draw per sentence
    ids = coupled_source_ids(task, src, sym, draw)
    assert int(ids.max()) <= max_id
    # the start shifts every id of a sentence by start - 1 (source and target)
    base = coupled_source_ids(task, src, sym, ones(len(pairs)))
    nonzero = base.gt(0)
    torch.testing.assert_close(ids[nonzero], (base + draw.view(-1, 1) - 1)[nonzero])
    # over many draws, every start in 1 .. max_id - span + 1 occurs, and no other
    one = src[:1]
    span = int(coupled_source_ids(task, one, sym, ones(1)).max())
    gen = torch.Generator().manual_seed(0)
    starts = {int(draw_coupling_start(task, one, sym, max_id, True, gen)) for _ in range(600)}
    assert starts == set(range(1, max_id - span + 2))


def test_position_coupling_module_output_and_gradients(dictionary):
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    torch.manual_seed(0)
    coupling = PositionCoupling("reverse", sym, 3, 10).double()
    src = batch([encode(d, "3 4 5"), encode(d, "7")], d.pad())
    tgt = batch([decoder_input(d, "5 4 3"), decoder_input(d, "7")], d.pad(), left=False)
    start = torch.tensor([1, 6])
    out_src, out_tgt = coupling.source(src, start), coupling.target(src, tgt, start)
    weight = coupling.table.weight
    torch.testing.assert_close(out_src, weight[torch.tensor([[1, 2, 3, 4], [0, 0, 6, 7]])])
    torch.testing.assert_close(out_tgt, weight[torch.tensor([[4, 3, 2, 1], [7, 6, 0, 0]])])
    (out_src.sum() + 2 * out_tgt.sum()).backward()
    # shared table: row 3 is source token 3 (sentence 1) and target step 2 (sentence 1)
    counts = torch.tensor([0, 3, 3, 3, 3, 0, 3, 3, 0, 0, 0], dtype=torch.float64)
    torch.testing.assert_close(weight.grad, counts.view(-1, 1).expand(-1, 3))


# -- errors ---------------------------------------------------------------------------------------
def one_line(excinfo, flag):
    message = str(excinfo.value)
    assert "\n" not in message and flag in message, message


def test_errors_name_the_flags(dictionary):
    d, sym = dictionary, CouplingSymbols.from_dictionary(dictionary)
    module = abacus(d, max_id=3)
    with pytest.raises(ValueError) as e:
        module(torch.tensor([encode(d, "1 2 3 4")]))
    one_line(e, "--abacus-max-id 3")
    with pytest.raises(ValueError) as e:
        AbacusEmbedding(digit_indices(d), 4, 10, -1, True)
    one_line(e, "--abacus-max-offset")
    with pytest.raises(ValueError) as e:
        digit_indices(Dictionary(), "target")
    one_line(e, "--abacus: the target dictionary has none of the digits")
    with pytest.raises(ValueError) as e:
        PositionIdEmbedding(0, 4, "--abacus-max-id")
    one_line(e, "--abacus-max-id")
    src = torch.tensor([encode(d, "1 2 [SEP] 3")])
    with pytest.raises(ValueError) as e:
        PositionCoupling("cart", sym, 4, 10)
    one_line(e, "--position-coupling")
    with pytest.raises(ValueError) as e:
        source_length("add", torch.tensor([encode(d, "1 2 3")]), sym)
    one_line(e, "--position-coupling add")
    with pytest.raises(ValueError) as e:
        source_length("dup", src, sym)
    one_line(e, "--position-coupling dup")
    no_sep = Dictionary()
    no_sep.add_symbol("1")
    with pytest.raises(ValueError) as e:
        source_length(
            "add", torch.tensor([encode(no_sep, "1 1")]), CouplingSymbols.from_dictionary(no_sep)
        )
    one_line(e, "--position-coupling add")
    with pytest.raises(ValueError) as e:
        draw_coupling_start("add", src, sym, 3, training=False)
    one_line(e, "--position-coupling-max-id 3")
    coupling = PositionCoupling("add", sym, 4, 6)
    with pytest.raises(ValueError) as e:
        coupling.source(src, torch.tensor([5]))
    one_line(e, "--position-coupling-max-id 6")
