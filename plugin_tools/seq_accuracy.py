"""Sequence-level accuracy: a hypothesis counts only if every token equals the reference.

Used by ``scripts/seq-accuracy.py`` and by the ``translation_accuracy`` task. Sequences are
compared as lists of whitespace-separated tokens, so spacing differences do not matter; nothing
else is normalised (case, `<unk>`: fairseq-generate writes unknown reference tokens as `<<unk>>`,
which never matches). Accuracies are fractions in 0..1, the scale of the paper's tables.
"""

import re
from collections import OrderedDict

_GEN_LINE = re.compile(r"^([HTS])-(\d+)\t(.*)$")


def tokens(line):
    return line.split()


def is_correct(hyp, ref):
    return tokens(hyp) == tokens(ref)


def score(hyps, refs, categories=None):
    """Exact-match accuracy of aligned hypothesis/reference strings.

    Returns {"accuracy", "correct", "total"} and, when categories (one label per example) are
    given, "categories": {label: {"accuracy", "correct", "total"}} in first-seen order.
    """
    hyps, refs = list(hyps), list(refs)
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if not refs:
        raise ValueError("nothing to score (no references)")
    hits = [is_correct(h, r) for h, r in zip(hyps, refs)]
    out = {"accuracy": sum(hits) / len(hits), "correct": sum(hits), "total": len(hits)}
    if categories is not None:
        categories = list(categories)
        if len(categories) != len(refs):
            raise ValueError(f"{len(categories)} category labels but {len(refs)} references")
        per = OrderedDict()
        for hit, cat in zip(hits, categories):
            c = per.setdefault(cat, {"accuracy": 0.0, "correct": 0, "total": 0})
            c["correct"] += int(hit)
            c["total"] += 1
        for c in per.values():
            c["accuracy"] = c["correct"] / c["total"]
        out["categories"] = dict(per)
    return out


def is_generate_output(lines):
    """True if the lines look like fairseq-generate output (S-/T-/H- lines)."""
    return any(_GEN_LINE.match(line) for line in lines)


def parse_generate_output(lines):
    """(hyps, refs, srcs): dicts id -> text from fairseq-generate output, lines in any order.

    The first H- line of an id is its best hypothesis (fairseq prints n-best in order); H- lines
    are `H-id<TAB>score<TAB>tokens`. Other lines (D-, P-, logging) are ignored.
    """
    hyps, refs, srcs = {}, {}, {}
    for line in lines:
        m = _GEN_LINE.match(line.rstrip("\n"))
        if not m:
            continue
        kind, idx, rest = m.group(1), int(m.group(2)), m.group(3)
        if kind == "H":
            parts = rest.split("\t", 1)
            hyps.setdefault(idx, parts[1] if len(parts) == 2 else "")
        elif kind == "T":
            refs[idx] = rest
        else:
            srcs[idx] = rest
    return hyps, refs, srcs


def align(hyps, refs, missing_as_wrong=False):
    """Lists (hyps, refs) in id order 0..N-1 from id -> text dicts.

    refs must cover ids 0..N-1 (the test set in file order). A reference without a hypothesis is
    an error, or an empty (wrong) hypothesis with missing_as_wrong.
    """
    n = len(refs)
    if sorted(refs) != list(range(n)):
        raise ValueError("reference ids are not 0..N-1 (incomplete generate output?)")
    extra = sorted(set(hyps) - set(refs))
    if extra:
        raise ValueError(f"hypotheses for ids without a reference, e.g. {extra[0]}")
    missing = [i for i in range(n) if i not in hyps]
    if missing and not missing_as_wrong:
        raise ValueError(
            f"{len(missing)} of {n} references have no hypothesis (e.g. id {missing[0]}); "
            "were inputs skipped for length?"
        )
    return [hyps.get(i, "\0missing") for i in range(n)], [refs[i] for i in range(n)]
