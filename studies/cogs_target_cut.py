"""COGS on the authors' notebook path, split by what the notebook does to the gen targets.

The notebook cuts every `[START] lf [END]` longer than its tensor length to its last 63 tokens
(docs/compgen.md, "The authors' notebook and our pipeline", row 9): 7,023 of the 21,000 gen
targets, all of cp_recursion and pp_recursion and part of most other categories, are trained on
and scored as their last 61 tokens. A notebook-path model's gen accuracy therefore mixes two
tasks: the lines whose targets are whole, the same task as on our path, and the cut lines, an
easier or harder one. This module scores the two apart from the notebook-path runs' final
generations, so that the notebook path's gain over ours can be read on the whole-target lines
alone.

`sync` keeps the counts in a committed CSV (preset, seed, category, target = whole | cut,
correct, total), refreshed from the run folders where they exist and kept where they do not, so
that the tables render on any machine.
"""

import json
from pathlib import Path

from plugin_tools.compgen_data import cogs_gen_path, read_cogs
from plugin_tools.seq_accuracy import align, parse_generate_output, score

from .runs import refresh_kept_csv

HEADER = ["preset", "seed", "category", "target", "correct", "total"]
TARGETS = ("whole", "cut")


def line_labels(raw, targets):
    """`category|whole` or `category|cut` for each gen line of a notebook data folder's RAW, whose
    TARGETS (the lines of raw/gen.tgt) are the forms the notebook scores: cut where a target is
    not the corpus's whole logical form."""
    meta = json.loads((raw / "meta.json").read_text())
    pairs, _ = read_cogs(cogs_gen_path(Path(meta["source"])))
    categories = (raw / meta["categories"]).read_text().splitlines()
    if not len(pairs) == len(targets) == len(categories):
        raise ValueError(f"{raw}: gen.tgt, its categories and {meta['source']} differ in length")
    return [
        f"{cat}|{'whole' if form == tgt.split() else 'cut'}"
        for (_, form), tgt, cat in zip(pairs, targets, categories)
    ]


def run_counts(run_dir, raw):
    """{(category, target): (correct, total)} of a notebook-path COGS run's final checkpoint."""
    lines = (run_dir / "generate-last.out").read_text().splitlines()
    hyps, _, _ = parse_generate_output(lines)
    targets = (raw / "gen.tgt").read_text().splitlines()
    hyps, refs = align(hyps, dict(enumerate(targets)), missing_as_wrong=True)
    per = score(hyps, refs, line_labels(raw, targets))["categories"]
    return {tuple(k.split("|")): (c["correct"], c["total"]) for k, c in per.items()}


def _run_folders(runs_dir, row):
    """(run folder, its data's raw folder) of notebook CSV row ROW, if both are on disk: the grid
    writes OUT/runs/PRESET/cogsSUFFIX/seedN and its data to OUT/data/cogsSUFFIX-sN."""
    for run in sorted(Path(runs_dir, row["preset"]).glob(f"cogs*/seed{row['seed']}")):
        raw = Path(runs_dir).parent / "data" / f"{run.parent.name}-s{row['seed']}" / "raw"
        if (run / "generate-last.out").is_file() and (raw / "meta.json").is_file():
            yield run, raw


def sync(notebook_rows, runs_dir, path):
    """Refresh the CSV at PATH from the run folders under RUNS_DIR (None: none on this machine)
    and return its rows for the recorded COGS runs of the notebook path."""
    cogs = [r for r in notebook_rows if r["task"] == "cogs"]
    fresh = [
        dict(zip(HEADER, [row["preset"], row["seed"], cat, target, correct, total]))
        for row in (cogs if runs_dir is not None else ())
        for run, raw in _run_folders(runs_dir, row)
        for (cat, target), (correct, total) in run_counts(run, raw).items()
    ]
    recorded = {(r["preset"], r["seed"]) for r in cogs}
    return refresh_kept_csv(
        path,
        HEADER,
        key=lambda r: (r["preset"], r["seed"], r["category"], r["target"]),
        fresh=fresh,
        keep=lambda r: (r["preset"], r["seed"]) in recorded,
        order=lambda r: (r["preset"], int(r["seed"]), r["category"], r["target"]),
    )


def _accuracy(rows, **match):
    """Pooled accuracy of the count rows that match every key=value, or None."""
    sel = [r for r in rows if all(str(r[k]) == str(v) for k, v in match.items())]
    total = sum(int(r["total"]) for r in sel)
    return None if not total else sum(int(r["correct"]) for r in sel) / total


def _text(values):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    return f"{sum(values) / len(values):.3f}"


def summary_table(cut_rows, our_rows, order):
    """Per preset: the notebook path's gen accuracy on all lines, on the whole-target lines and on
    the cut lines (mean over its seeds of each seed's pooled accuracy), against our path's final
    checkpoints on the same seeds (whole targets, the 2,100-line subsample). (head, rows); no
    rows before a notebook-path COGS run is scored."""
    ours = {(r["preset"], r["seed"]): r["accuracy"] for r in our_rows if r["task"] == "cogs"}
    table = []
    for preset in order:
        seeds = sorted({r["seed"] for r in cut_rows if r["preset"] == preset}, key=int)
        if not seeds:
            continue
        first = [r for r in cut_rows if r["preset"] == preset and r["seed"] == seeds[0]]
        n = {t: sum(int(r["total"]) for r in first if r["target"] == t) for t in TARGETS}
        cells = [f"`{preset}`", ", ".join(seeds)]
        cells.append(_text(_accuracy(cut_rows, preset=preset, seed=s) for s in seeds))
        for t in TARGETS:
            by_seed = [_accuracy(cut_rows, preset=preset, seed=s, target=t) for s in seeds]
            each = ", ".join("–" if v is None else f"{v:.3f}" for v in by_seed)
            cells.append(f"{_text(by_seed)} ({each})")
        cells.append(_text(ours.get((preset, s)) for s in seeds))
        table.append(cells + [f"{n['whole']:,} / {n['cut']:,}"])
    head = ["row", "seeds", "notebook path, all gen lines", "whole-target lines (per seed)"]
    head += ["cut-target lines (per seed)", "our path, same seeds", "lines whole / cut"]
    return head, table


def category_table(cut_rows, our_categories, preset):
    """Per COGS gen category, for PRESET: the share of lines whose targets the notebook cuts, the
    notebook path's accuracy on the whole-target and on the cut lines (pooled over its seeds),
    and our path's accuracy on the category (final checkpoints, the same seeds). (head, rows)."""
    rows = [r for r in cut_rows if r["preset"] == preset]
    seeds = {r["seed"] for r in rows}
    ours = [
        r
        for r in our_categories
        if r["task"] == "cogs" and r["preset"] == preset and r["seed"] in seeds
    ]
    table = []
    for cat in sorted({r["category"] for r in rows}):
        n = {t: sum(int(r["total"]) for r in rows if (r["category"], r["target"]) == (cat, t))
             for t in TARGETS}  # fmt: skip
        cells = [cat, f"{n['cut'] / (n['whole'] + n['cut']):.0%}"]
        for t in TARGETS:
            v = _accuracy(rows, category=cat, target=t)
            cells.append("–" if v is None else f"{v:.3f}")
        mine = _accuracy(ours, category=cat)
        table.append(cells + ["–" if mine is None else f"{mine:.3f}"])
    head = ["COGS gen category", "targets cut", "notebook path, whole targets"]
    head += ["notebook path, cut targets", "our path (whole targets, subsample)"]
    return head, table
