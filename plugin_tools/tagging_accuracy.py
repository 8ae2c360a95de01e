"""The two COGS tagging metrics, overall and per COGS category (Ontañón et al. 2022, Table 5).

- ``accuracy``: the official metric (``cogs_tagging.ipynb``): a sentence is correct iff all five
  predicted tag rows equal the gold rows at every token.
- ``lf_accuracy``: the logical form rebuilt from the predicted rows equals the COGS target.

Both are fractions 0..1 over sentences (the official averages over fixed batches of 64 and drops
the last partial batch; we count every sentence once).
"""

from collections import OrderedDict


def _entry():
    return {"accuracy": 0.0, "lf_accuracy": 0.0, "correct": 0, "lf_correct": 0, "total": 0}


def _finish(entry):
    entry["accuracy"] = entry["correct"] / entry["total"]
    entry["lf_accuracy"] = entry["lf_correct"] / entry["total"]
    return entry


def score_tagging(records):
    """records: iterable of (category, tags exact: bool, LF exact: bool).

    Returns {"accuracy", "lf_accuracy", "correct", "lf_correct", "total", "categories":
    {category: the same keys}} with the categories in first-seen order.
    """
    total = _entry()
    per = OrderedDict()
    for category, tags_ok, lf_ok in records:
        for entry in (total, per.setdefault(category, _entry())):
            entry["correct"] += int(bool(tags_ok))
            entry["lf_correct"] += int(bool(lf_ok))
            entry["total"] += 1
    if not total["total"]:
        raise ValueError("nothing to score (no sentences)")
    _finish(total)
    total["categories"] = {name: _finish(entry) for name, entry in per.items()}
    return total


def format_table(scores, title=""):
    """Plain-text table: one line per category, then `all`."""
    rows = [(name, c) for name, c in scores["categories"].items()] + [("all", scores)]
    width = max(len(name) for name, _ in rows)
    lines = [f"{title}{'category':<{width}}  {'n':>5}  {'accuracy':>8}  {'lf_accuracy':>11}"]
    for name, c in rows:
        lines.append(
            f"{title}{name:<{width}}  {c['total']:>5}  {c['accuracy']:>8.4f}  {c['lf_accuracy']:>11.4f}"
        )
    return "\n".join(lines)
