"""The statistics and rules of the studies (studies/study_stats.py):
the across-seed paired t-test, Holm's correction, the learning-rate choice, the LM stopping rule
and the per-word perplexity of a subword model. Fast: no fairseq."""

import math

import pytest
from scipy import stats

from studies.study_stats import (
    choose_lr,
    holm,
    last_gain,
    paired_t_test,
    stop_after,
    word_perplexity,
)


def test_paired_t_test_by_hand_and_against_scipy():
    a, b = [28.1, 27.6, 28.4], [29.0, 28.0, 29.5]
    mean, sd, t, df, p = paired_t_test(a, b)
    # by hand: differences 0.9, 0.4, 1.1; mean 0.8; sd sqrt(((0.1)^2 + 0.4^2 + 0.3^2) / 2)
    assert mean == pytest.approx(0.8)
    assert sd == pytest.approx(math.sqrt((0.01 + 0.16 + 0.09) / 2))
    assert t == pytest.approx(0.8 / (sd / math.sqrt(3)))
    assert df == 2
    ref = stats.ttest_rel(b, a)
    assert t == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    # the sign follows B - A; the p-value is two-sided, so symmetric
    assert paired_t_test(b, a)[2] == pytest.approx(-t) and paired_t_test(b, a)[4] == pytest.approx(
        p
    )


def test_paired_t_test_degenerate_and_bad_input():
    assert paired_t_test([1.0, 2.0], [2.0, 3.0])[4] == 0.0  # the same gain on every seed
    assert paired_t_test([1.0, 2.0], [1.0, 2.0])[4] == 1.0
    with pytest.raises(ValueError, match="at least 2 seeds"):
        paired_t_test([1.0], [2.0])
    with pytest.raises(ValueError, match="3 scores against 2"):
        paired_t_test([1.0, 2.0, 3.0], [2.0, 3.0])


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 times 4, 3, 2, 1 = 0.04, 0.06, 0.06, 0.5 (kept non-decreasing)
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    # 0.001 * 3, 0.04 * 2 = 0.08, then 0.045 * 1 = 0.045 raised to 0.08 (non-decreasing)
    assert holm([0.04, 0.045, 0.001]) == pytest.approx([0.08, 0.08, 0.003])
    assert holm([0.6, 0.9]) == [1.0, 1.0]  # capped at 1
    assert holm([]) == []
    try:  # statsmodels, when installed, as a second reference
        from statsmodels.stats.multitest import multipletests
    except ImportError:
        return
    ps = [0.003, 0.2, 0.04, 0.011, 0.6]
    assert holm(ps) == pytest.approx(list(multipletests(ps, method="holm")[1]))


def test_choose_lr_lowest_validation_perplexity_and_edges():
    assert choose_lr({"0.001": 210.0, "0.002": 190.5, "0.004": 201.0}) == ("0.002", False)
    assert choose_lr({"0.004": 180.0, "0.001": 210.0, "0.002": 190.0}) == ("0.004", True)
    assert choose_lr({"2e-3": 190.0, "0.001": 190.0}) == ("0.001", True)  # tie: the smaller
    with pytest.raises(ValueError, match="no finished run"):
        choose_lr({})


def test_stopping_rule():
    assert not stop_after([300.0])  # never before the second epoch
    assert not stop_after([300.0, 250.0])  # -16.7%: keep going
    assert stop_after([300.0, 298.0])  # -0.67% < 1%
    assert stop_after([300.0, 310.0])  # worse
    assert not stop_after([300.0, 296.9])  # -1.03%
    assert not stop_after([300.0, 250.0, 220.0, 200.0])  # still -9%
    assert stop_after([300.0, 250.0, 220.0, 200.0, 190.0])  # the cap (5 epochs)
    assert stop_after([300.0, 250.0, 220.0, 200.0], max_epochs=4)
    assert not stop_after([300.0, 299.0], min_epochs=3)


def test_last_gain():
    assert last_gain([300.0]) is None
    assert last_gain([300.0, 240.0]) == pytest.approx(0.2)
    assert last_gain([300.0, 330.0]) == pytest.approx(-0.1)


def test_word_perplexity_renormalises_the_total_log_likelihood():
    # 1200 subword tokens at 7 bits each = 8400 bits over 1000 words: 8.4 bits a word
    assert word_perplexity(7.0, 1200, 1000) == pytest.approx(2**8.4)
    assert word_perplexity(7.0, 1000, 1000) == pytest.approx(2**7)  # word-level: unchanged


def _significance(scores_by_system, p_bs):
    """A significance JSON of bleu-significance.py for one seed: BLEU and chrF rows."""
    metrics = {}
    for metric, offset in (("BLEU", 0.0), ("chrF", 25.0)):
        rows = []
        for i, (name, score) in enumerate(scores_by_system.items()):
            row = {"system": name, "score": score + offset}
            if i:
                row.update(delta=score - next(iter(scores_by_system.values())), p_bs=p_bs[name])
            rows.append(row)
        metrics[metric] = {"rows": rows}
    return {"metrics": metrics}


def test_nmt_across_seed_family_holm_and_verdicts():
    """The NMT study's across-seed family: every system against the baseline and every
    non-stock system against the wide baseline, on BLEU and chrF; Holm over all of them; the
    reading says "better" only where the adjusted p-value is below 0.05."""
    from studies import study_report

    names = ["base", "base-baseline-wide", "comp", "graph"]
    per_seed = [  # comp: +1.0 on every seed (+- 0.1); graph: noise around the baseline
        {"base": 28.0, "base-baseline-wide": 28.2, "comp": 29.0, "graph": 28.5},
        {"base": 27.5, "base-baseline-wide": 27.4, "comp": 28.6, "graph": 27.0},
        {"base": 28.3, "base-baseline-wide": 28.5, "comp": 29.2, "graph": 28.6},
    ]
    sig = {
        s: _significance(per_seed[i], dict.fromkeys(names[1:], 0.01)) for i, s in enumerate("123")
    }
    entries = study_report.nmt_across_seed_entries(sig, list("123"), names)
    pairs = [(b, a, m) for b, a, m, *_ in entries]
    expected = [
        (b, a, m)
        for m in ("BLEU", "chrF")
        for a, b in [("base", n) for n in names[1:]]
        + [("base-baseline-wide", "comp")]
        + [("base-baseline-wide", "graph")]
    ]
    assert pairs == expected
    table_text, reading = study_report.across_seed_tests(entries, 3)
    p_raw = [paired_t_test(a, b)[4] for _, _, _, a, b, _ in entries]
    adjusted = holm(p_raw)
    for sentence, p_adj, (b, a, m, *_) in zip(reading, adjusted, entries):
        assert sentence.startswith(f"- {b}, {m} ")
        assert f"Holm-adjusted over the 10 comparisons p = {p_adj:.4f}" in sentence
        if p_adj < 0.05:
            assert f"better than {a}" in sentence or f"worse than {a}" in sentence
        else:
            assert f"not distinguishable from {a} at 3 seeds" in sentence
    comp_vs_base = reading[names.index("comp") - 1]
    assert "better than base" in comp_vs_base  # +1.0, sd 0.1 over 3 seeds
    graph_vs_base = reading[names.index("graph") - 1]
    assert "not distinguishable from base at 3 seeds" in graph_vs_base
    assert table_text.count("\n") == len(entries) + 1


def test_per_seed_bootstrap_holm():
    from studies import study_report

    m = _significance({"base": 28.0, "a": 29.0, "b": 28.1}, {"a": 0.01, "b": 0.4})["metrics"]
    adjusted = study_report.seed_holm(m)
    # family: (BLEU a, BLEU b, chrF a, chrF b) = 0.01, 0.4, 0.01, 0.4
    assert adjusted == pytest.approx(
        {("BLEU", "a"): 0.04, ("BLEU", "b"): 0.8, ("chrF", "a"): 0.04, ("chrF", "b"): 0.8}
    )
