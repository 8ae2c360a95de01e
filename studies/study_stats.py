"""The statistics and the rules of the real-data studies, pure Python (scipy only
for the t distribution's tail, imported where it is needed):

- :func:`paired_t_test`: the across-seed test of two systems, paired by training seed (the same
  seed gives both systems the same batch order), two-sided;
- :func:`holm`: Holm's step-down correction of a family of p-values (adjusted p-values);
- :func:`choose_lr`: the learning rate of a sweep with the lowest validation perplexity;
- :func:`stop_after`: the stopping rule of the LM seeds (per-epoch validation perplexity);
- :func:`word_perplexity`: a subword model's perplexity renormalised to words.
"""

import math
import statistics

# The LM stopping rule (stated in configs/lm/wikitext2-study-baseline.sh and the
# report): train epoch by epoch; stop after epoch e >= MIN_EPOCHS once the validation perplexity
# improved by less than MIN_GAIN (relative) over epoch e - 1, and at MAX_EPOCHS at the latest.
MIN_GAIN = 0.01
MIN_EPOCHS = 2
MAX_EPOCHS = 5


def paired_t_test(a, b):
    """Paired t-test of B against A (lists of one score per seed, same seed order): (mean of
    B - A, standard deviation of the differences, t, degrees of freedom, two-sided p). With
    identical differences (zero spread) p is 0 for a nonzero mean and 1 for a zero mean."""
    if len(a) != len(b):
        raise ValueError(f"paired test: {len(a)} scores against {len(b)}")
    if len(a) < 2:
        raise ValueError("paired test: needs at least 2 seeds")
    diffs = [y - x for x, y in zip(a, b)]
    n = len(diffs)
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs)
    if sd == 0:
        return (
            mean,
            0.0,
            math.copysign(math.inf, mean) if mean else 0.0,
            n - 1,
            (0.0 if mean else 1.0),
        )
    t = mean / (sd / math.sqrt(n))
    from scipy.special import stdtr  # the Student t CDF

    p = 2 * stdtr(n - 1, -abs(t))
    return mean, sd, t, n - 1, float(p)


def holm(pvalues):
    """Holm's step-down adjusted p-values, in the input order: sort ascending, multiply the
    k-th smallest (k from 0) by m - k, keep them non-decreasing, cap at 1. A hypothesis is
    rejected at level alpha exactly when its adjusted p-value is <= alpha."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def choose_lr(valid_ppl):
    """{lr (text): validation perplexity} -> (the lr with the lowest perplexity, whether it lies
    at an edge of the grid, so that a wider sweep could do better). Ties: the smaller lr."""
    if not valid_ppl:
        raise ValueError("learning-rate sweep: no finished run")
    lrs = sorted(valid_ppl, key=float)
    best = min(lrs, key=lambda lr: (valid_ppl[lr], float(lr)))
    return best, len(lrs) > 1 and best in (lrs[0], lrs[-1])


def stop_after(ppl_by_epoch, min_gain=MIN_GAIN, min_epochs=MIN_EPOCHS, max_epochs=MAX_EPOCHS):
    """Whether training stops after the last epoch of PPL_BY_EPOCH (validation perplexity at the
    end of epochs 1, 2, ...): at MAX_EPOCHS, or from MIN_EPOCHS on once the last epoch improved
    the perplexity by less than MIN_GAIN relative to the epoch before (or made it worse)."""
    e = len(ppl_by_epoch)
    if e >= max_epochs:
        return True
    if e < max(min_epochs, 2):
        return False
    before, last = ppl_by_epoch[-2], ppl_by_epoch[-1]
    return (before - last) / before < min_gain


def word_perplexity(loss_base2, scored_tokens, words):
    """Perplexity per word of a model whose LOSS_BASE2 is the mean negative log2-likelihood over
    SCORED_TOKENS subword tokens of a text of WORDS words (both counting one end-of-line token
    per line): the total log-likelihood is the same, only the unit it is divided by changes."""
    return 2 ** (loss_base2 * scored_tokens / words)


def last_gain(ppl_by_epoch):
    """The relative improvement of the last epoch over the one before (None for one epoch)."""
    if len(ppl_by_epoch) < 2:
        return None
    return (ppl_by_epoch[-2] - ppl_by_epoch[-1]) / ppl_by_epoch[-2]


def mean_sd(values):
    """(mean, sample standard deviation; 0 for one value)."""
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0
