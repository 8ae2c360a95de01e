"""Randomized positions (modules/randomized_positions.py): the sampling of Ruoss et al. (ACL 2023),
an ordered uniform subset of 0 .. L-1, checked on its distribution; placement under padding;
decoding step by step (with beam reordering) against one draw for the whole target."""

import itertools
import math

import pytest
import torch

from fairseq_plugins.modules.position_schemes import AlibiBias
from fairseq_plugins.modules.randomized_positions import (
    RandomizedPositions,
    sorted_random_subsets,
)


def padding_mask(lengths, width, left=False):
    columns = torch.arange(width).unsqueeze(0)
    lengths = torch.tensor(lengths).unsqueeze(1)
    return columns < width - lengths if left else columns >= lengths


def test_subsets_are_increasing_in_range_and_of_each_sentences_length():
    lengths = [5, 1, 9, 0, 9]
    subsets = sorted_random_subsets(lengths, 12, torch.Generator().manual_seed(0))
    assert subsets.shape == (5, 9) and subsets.dtype == torch.long
    for row, n in zip(subsets.tolist(), lengths):
        chosen = row[:n]
        assert all(0 <= p < 12 for p in chosen)
        assert all(a < b for a, b in zip(chosen, chosen[1:]))  # sorted, without repeats
        assert row[n:] == [12] * (9 - n)


def test_subsets_are_uniform_over_all_ordered_subsets():
    """The paper's distribution: every n-subset of 0 .. L-1 equally likely (here L = 6, n = 3:
    20 subsets), within 5 standard deviations of the expected count."""
    draws = 20000
    subsets = sorted_random_subsets([3] * draws, 6, torch.Generator().manual_seed(1))
    counts = {s: 0 for s in itertools.combinations(range(6), 3)}
    for row in subsets.tolist():
        counts[tuple(row)] += 1
    expected = draws / len(counts)
    sd = math.sqrt(draws * (1 / 20) * (19 / 20))
    assert set(counts) == set(itertools.combinations(range(6), 3))
    assert all(abs(c - expected) < 5 * sd for c in counts.values()), counts
    # the full range 0 .. L-1 is used: the first position is spread, not always 0
    first = subsets[:, 0].bincount(minlength=6).tolist()
    assert first[:4] == pytest.approx([10000, 6000, 3000, 1000], rel=0.08) and first[4:] == [0, 0]


@pytest.mark.parametrize("left", [False, True])
def test_padding_changes_nothing_for_the_real_tokens(left):
    """Left or right padding, or none: the k-th real token of a sentence gets the k-th position of
    that sentence's draw (the draw depends on the lengths and the generator only)."""
    module = RandomizedPositions(50, fill=0)
    lengths = [7, 4, 1]
    mask = padding_mask(lengths, 7, left=left)
    padded = module(mask, generator=torch.Generator().manual_seed(2))
    expected = sorted_random_subsets(lengths, 50, torch.Generator().manual_seed(2))
    for b, n in enumerate(lengths):
        real = padded[b][~mask[b]]
        assert real.tolist() == expected[b, :n].tolist()
        assert padded[b][mask[b]].eq(0).all()
    unpadded = module(torch.zeros(1, 4, dtype=torch.bool), torch.Generator().manual_seed(3))
    again = module(padding_mask([4], 9, left=True), torch.Generator().manual_seed(3))
    assert again[0, 5:].tolist() == unpadded[0].tolist()
    # a relative scheme sees the differences of the sampled positions, per sentence
    alibi = AlibiBias(2)
    bias = alibi(torch.zeros(1, 2, 1, 1), alibi.labels(padded, padded))
    p = padded[0].tolist()
    assert bias[0, 1, 6, 2] == pytest.approx(-(2.0**-8) * abs(p[6] - p[2]))


def test_decoding_step_by_step_equals_one_draw_and_follows_the_beams():
    module = RandomizedPositions(40)
    bsz, budget = 3, 10
    full = module.decoding_positions({}, bsz, 10, budget, "cpu", torch.Generator().manual_seed(4))
    assert full.shape == (bsz, 10)
    state, gen = {}, torch.Generator().manual_seed(4)
    for t in range(4):  # the key positions so far, the step's query last
        prefix = module.decoding_positions(state, bsz, 1, budget, "cpu", gen)
        assert prefix.tolist() == full[:, : t + 1].tolist()
    order = torch.tensor([2, 2, 0])  # beam search reorders the hypotheses mid-way
    module.reorder_incremental_state(state, order)
    for t in range(4, 10):
        prefix = module.decoding_positions(state, bsz, 1, budget, "cpu", gen)
        assert prefix.tolist() == full.index_select(0, order)[:, : t + 1].tolist()
    # the draw is the budget's: an ordered subset of `budget` positions per hypothesis
    assert (full.diff(dim=1) > 0).all() and full.max() < 40
    # the incremental state keeps one tensor per sentence, not one per step
    (saved,) = state.values()
    assert saved["positions"].shape == (bsz, budget) and int(saved["steps"]) == 10


def test_bad_sizes_name_their_flag():
    with pytest.raises(ValueError, match="--random-positions-max-length must be >= 1 \\(got 0\\)"):
        RandomizedPositions(0)
    module = RandomizedPositions(8)
    with pytest.raises(
        ValueError, match="--random-positions-max-length 8 is shorter than a sequence of 9"
    ):
        module(torch.zeros(2, 9, dtype=torch.bool))
    with pytest.raises(ValueError, match="budget .* --random-positions-max-length 8 \\(got 9\\)"):
        module.decoding_positions({}, 2, 1, 9, "cpu")
    state = {}
    module.decoding_positions(state, 2, 3, 3, "cpu")
    with pytest.raises(ValueError, match="decoder step 4 is past the 3 sampled random positions"):
        module.decoding_positions(state, 2, 1, 3, "cpu")
