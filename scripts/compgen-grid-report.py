#!/usr/bin/env python3
"""Render the issue-13 grid (scripts/compgen-grid.sh) in the layout of Ontañón et al.'s tables.

  compgen-grid-report.py [--csv docs/compgen-grid.csv] [--doc docs/compgen-results.md]
                         [--png docs/compgen-results.png] [--runs work/compgen-grid/runs]
                         [--tagging-runs work/compgen-grid/cogs-tagging/runs]
                         [--categories docs/compgen-grid-cogs-categories.csv]

Writes, between the markers `<!-- BEGIN GENERATED ... -->` and `<!-- END GENERATED -->` of
--doc (the rest of the file is left as it is): the main table (rows = presets, columns = the
paper's 12 benchmarks plus COGS tagging; each cell `ours mean ± std (runs)` with the paper's
value beside it), progress, per-category COGS accuracy (seq2seq and tagging), and every run with
its wall time. Also draws the table as a PNG (bars: ours with std; black marks: the paper) and
refreshes the per-category COGS CSV (task `cogs` from the seq2seq runs' accuracy.json, task
`cogs-tagging` from the tagging runs' pred/gen.scores.json; rows of runs no longer on disk are
kept). --doc - prints the generated block instead.

The tagging column follows the TAGGING table of scripts/compgen-grid.sh: a row whose entry is
`=OTHER` (rel2-eb, rel2-eb-c: rel-eb's encoder) shows OTHER's tagging result, footnoted.
"""

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- BEGIN GENERATED (scripts/compgen-grid-report.py; do not edit by hand) -->"
END = "<!-- END GENERATED -->"

# The paper's 12 columns, then COGS tagging (Table 5). `None`: data not here.
COLUMNS = [
    ("add", "Add"),
    ("addneg", "AddNeg"),
    ("reverse", "Reverse"),
    ("dup", "Dup"),
    ("cart", "Cart"),
    ("inters", "Inters"),
    ("scan-length", "SCAN-l"),
    ("scan-addjump", "SCAN-aj"),
    ("pcfg-productivity", "PCFG-p"),
    ("pcfg-systematicity", "PCFG-s"),
    ("cogs", "COGS"),
    ("cfq", "CFQ"),
    ("cogs-tagging", "COGS tag."),
]
UNAVAILABLE = {
    "pcfg-productivity": "no data",
    "pcfg-systematicity": "no data",
    "cfq": "no data",
}
TAGGING = "cogs-tagging"
# Not in the averages: COGS again, as tagging; the paper's Avg. does not include it either.
NOT_AVERAGED = {TAGGING}
ROWS = [
    ("compgen_abs", "abs"),
    ("compgen_rel_eb", "rel-eb"),
    ("compgen_rel2_eb", "rel2-eb"),
    ("compgen_rel2_eb_c", "rel2-eb-c (= small-2)"),
    ("compgen_small_2s", "small-2s (rel2-eb-c, shared)"),
    ("compgen_comp_rel2_eb_c", "comp-rel2-eb-c (new)"),
    ("compgen_comp_rel2_eb_cs", "comp-rel2-eb-cs (new, shared)"),
]
_ORDER12 = [c for c, _ in COLUMNS[:12]]

# Read from the garbled tables of ../shared/seeds/001_0327fe51df39824b.txt (see the doc): a line
# per row, its 12 values in the order of the first 12 COLUMNS, then the row's printed Avg., which
# the 12 average to (checked in the tests). Sources: abs Tables 1/2; rel-eb and rel2-eb Table 2;
# rel2-eb-c Tables 2/3 (small-2); small-2s Table 4.
_PAPER_TABLE = """
compgen_abs       0.005 0.042 0.0   0.0   0.0 0.500 0.0   0.003 0.174 0.434 0.177 0.304  0.137
compgen_rel_eb    0.003 0.011 0.486 0.444 0.0 0.500 0.089 0.011 0.257 0.452 0.249 0.290  0.233
compgen_rel2_eb   0.978 0.779 0.737 0.017 0.0 0.504 0.091 0.010 0.194 0.374 0.159 0.311  0.346
compgen_rel2_eb_c 0.977 0.791 0.540 0.283 0.0 0.528 0.043 0.010 0.336 0.527 0.511 0.295  0.403
compgen_small_2s  0.992 0.809 0.780 0.750 0.0 0.699 0.022 0.003 0.313 0.501 0.450 0.303  0.468
"""


def _paper_rows(table):
    """{preset: ({column: value}, printed Avg.)} of a table of _PAPER_TABLE's layout."""
    rows = {}
    for line in table.split("\n"):
        if line.strip():
            preset, *values, avg = line.split()
            rows[preset] = (dict(zip(_ORDER12, map(float, values))), float(avg))
    return rows


PAPER = _paper_rows(_PAPER_TABLE)


# Table 5 (COGS as sequence tagging, official metric on gen): the paper lists two tagging models,
# "base" (abs, small-2, absolute parent head: our cogs_tagging_base, row abs) 0.637 and "tuned"
# (rel-eb, small-2s, attention parent head) 0.784. No grid row is the tuned model (small-2s is
# tagged with the absolute head), so only abs has a paper value; see the doc for the reading.
PAPER_TAGGING = {"compgen_abs": 0.637}
PAPER_TAGGING_TUNED = 0.784


def paper_value(preset, column):
    if column == TAGGING:
        return PAPER_TAGGING.get(preset)
    paper = PAPER.get(preset)
    return paper[0].get(column) if paper else None


class ReportError(Exception):
    pass


def read_csv(path):
    p = Path(path)
    if not p.is_file():
        return []
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    for n, r in enumerate(rows, 2):
        try:
            r["accuracy"] = float(r["accuracy"])
            r["wall_seconds"] = float(r["wall_seconds"] or 0)
            r["cpu_seconds"] = float(r.get("cpu_seconds") or "nan")
        except (KeyError, ValueError):
            raise ReportError(f"{path}:{n}: bad accuracy or wall_seconds") from None
    return rows


def summarize(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["preset"], r["task"]), []).append(r["accuracy"])
    return {
        k: (statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else 0.0, len(v))
        for k, v in groups.items()
    }


def held_columns():
    return [c for c, _ in COLUMNS if c not in UNAVAILABLE]


def averaged_columns():
    return [c for c in held_columns() if c not in NOT_AVERAGED]


def grid_array(name):
    """The entries of the bash array NAME=( ... ) of scripts/compgen-grid.sh."""
    text = (ROOT / "scripts" / "compgen-grid.sh").read_text()
    body = text.split(f"\n{name}=(", 1)[1].split("\n)", 1)[0]
    return [line.strip().strip('"') for line in body.splitlines() if line.strip()]


def tagging_plan():
    """{row: (tagging arch, extra options)} or {row: ("=OTHER", "")} from compgen-grid.sh."""
    return {p: (a, o) for p, a, o in (t.split("|", 2) for t in grid_array("TAGGING"))}


def tagging_source(preset):
    """The row whose tagging run stands for PRESET (itself, or OTHER for `=OTHER`)."""
    arch = tagging_plan().get(preset, ("", ""))[0]
    return arch[1:] if arch.startswith("=") else preset


def cell(stats, preset, column):
    """(mean, std, n) of a cell or None, and the row it is borrowed from (None: its own)."""
    if column == TAGGING and tagging_source(preset) != preset:
        src = tagging_source(preset)
        return stats.get((src, column)), src
    return stats.get((preset, column)), None


def markdown_table(head, rows):
    """A markdown table: the cells of HEAD, the rule, then a line per list of cells in ROWS
    (each cell as str() writes it)."""
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    lines += ["| " + " | ".join(map(str, cells)) + " |" for cells in rows]
    return "\n".join(lines) + "\n"


def main_table(stats):
    held = held_columns()
    averaged = averaged_columns()
    names = dict(ROWS)
    head = (
        ["row (preset)"]
        + [label for _, label in COLUMNS]
        + ["Avg. ours", "Avg. paper (same cells)"]
    )
    table = []
    best = {}
    for c in held:
        means = [stats[p, c][0] for p, _ in ROWS if (p, c) in stats]
        best[c] = max(means) if means else None
    for preset, name in ROWS:
        paper = PAPER.get(preset, (None, None))[0]
        cells = [f"{name}<br>`{preset}`"]
        ours_means, paper_vals = [], []
        for c, _ in COLUMNS:
            pv = paper_value(preset, c)
            if c in UNAVAILABLE:
                cells.append(UNAVAILABLE[c] + (f"<br>*paper {pv:.3f}*" if pv is not None else ""))
                continue
            st, src = cell(stats, preset, c)
            if st is not None:
                mean, std, n = st
                if c in averaged:
                    ours_means.append(mean)
                    paper_vals += [pv] if pv is not None else []
                text = f"{mean:.3f} ± {std:.3f} ({n})" if n > 1 else f"{mean:.3f} (1)"
                if best[c] is not None and mean == best[c]:
                    text = f"**{text}**"
            else:
                text = "–"
            if src is not None:
                text += f" ({names[src]}'s †)"
            if pv is not None:
                text += f"<br>*paper {pv:.3f}*"
            cells.append(text)
        complete = len(ours_means) == len(averaged)
        avg = statistics.fmean(ours_means) if ours_means else None
        cells.append("–" if avg is None else f"{avg:.3f}" + ("" if complete else " (partial)"))
        if paper and not paper_vals:  # nothing of ours yet: the paper over the 9 columns
            paper_vals = [paper[c] for c in averaged]
        cells.append(f"{statistics.fmean(paper_vals):.3f}" if paper_vals else "–")
        table.append(cells)
    return markdown_table(head, table)


def progress(rows, plan_total):
    n = len(rows)
    wall = sum(r["wall_seconds"] for r in rows)
    cpu_rows = [r["cpu_seconds"] for r in rows if r["cpu_seconds"] == r["cpu_seconds"]]
    cpu = (
        f"; CPU time {sum(cpu_rows) / 3600:.2f} h over the {len(cpu_rows)} runs that record it"
        if cpu_rows
        else ""
    )
    per = {}
    for r in rows:
        per.setdefault(r["seed"], 0)
        per[r["seed"]] += 1
    rounds = ", ".join(f"seed {s}: {per[s]}" for s in sorted(per))
    return (
        f"Runs recorded: {n} of {plan_total} planned ({rounds or 'none'}); "
        f"total wall time {wall / 3600:.2f} h ({wall:.0f} s, one thread each){cpu}.\n"
    )


def wall_table(rows):
    head = "seed|task|preset|updates|accuracy|wall s|CPU s|threads|finished".split("|")
    cells = [
        [r["seed"], r["task"], r["preset"], r["updates"], f"{r['accuracy']:.4f}"]
        + [f"{r['wall_seconds']:.0f}"]
        + ["–" if r["cpu_seconds"] != r["cpu_seconds"] else format(r["cpu_seconds"], ".0f")]
        + [r.get("threads", ""), r["date"]]
        for r in rows
    ]
    return markdown_table(head, cells)


def wall_summary(rows):
    """Mean wall / CPU seconds per (task, preset): the cost of one cell."""
    wall, cpu = {}, {}
    for r in rows:
        wall.setdefault((r["task"], r["preset"]), []).append(r["wall_seconds"])
        if r["cpu_seconds"] == r["cpu_seconds"]:  # not NaN: recorded
            cpu.setdefault((r["task"], r["preset"]), []).append(r["cpu_seconds"])
    tasks = [c for c in held_columns() if any(k[0] == c for k in wall)]
    presets = [p for p, _ in ROWS if any(k[1] == p for k in wall)]
    if not tasks:
        return ""
    table = []
    for t in tasks:
        cells = [dict(COLUMNS)[t]]
        for p in presets:
            w = f"{statistics.fmean(wall[t, p]):.0f}" if (t, p) in wall else "–"
            c = f"{statistics.fmean(cpu[t, p]):.0f}" if (t, p) in cpu else "–"
            cells.append(f"{w} / {c}")
        table.append(cells)
    return markdown_table(["task"] + presets, table)


BASELINE = "compgen_rel2_eb_c"
COMPOSITIONAL = ("compgen_comp_rel2_eb_c", "compgen_comp_rel2_eb_cs")


def comparison_table(rows, stats):
    """Compositional rows against rel2-eb-c, column by column: means, the difference, whether it
    exceeds the two cells' spread (|diff| > std + std, with 2+ runs each), and the CPU cost."""
    cpu = {}
    for r in rows:
        if r["cpu_seconds"] == r["cpu_seconds"]:
            cpu.setdefault((r["preset"], r["task"]), []).append(r["cpu_seconds"])

    def mean_text(c):
        return "–" if c is None else f"{c[0]:.3f} ({c[2]})"

    table, diffs = [], {p: [] for p in COMPOSITIONAL}
    for col in held_columns():
        base, _ = cell(stats, BASELINE, col)
        cells = [dict(COLUMNS)[col], mean_text(base)]
        for p in COMPOSITIONAL:
            comp, _ = cell(stats, p, col)
            cells.append(mean_text(comp))
            if base is None or comp is None:
                cells += ["–", "–"]
                continue
            d = comp[0] - base[0]
            if col not in NOT_AVERAGED:
                diffs[p].append(d)
            clear = base[2] > 1 and comp[2] > 1 and abs(d) > max(base[1] + comp[1], 0.01)
            cells.append(f"{d:+.3f}" + (" *" if clear else ""))
            src = tagging_source(BASELINE) if col == TAGGING else BASELINE
            b, c = cpu.get((src, col)), cpu.get((p, col))
            cells.append(f"{statistics.fmean(c) / statistics.fmean(b):.2f}x" if b and c else "–")
        table.append(cells)
    avg = ["mean Δ over the seq2seq columns", ""]
    for p in COMPOSITIONAL:
        d = diffs[p]
        avg += ["", f"{statistics.fmean(d):+.3f} ({len(d)} columns)" if d else "–", ""]
    table.append(avg)
    head = ["column", "rel2-eb-c"]
    for name in ("comp-rel2-eb-c", "comp-rel2-eb-cs"):
        head += [name, "Δ", "CPU"]
    return markdown_table(head, table)


def _category_files(r, runs_dir, tagging_runs_dir):
    """The score files with per-category gen accuracies of CSV row r (none if not on disk)."""
    if r["task"] == "cogs" and runs_dir is not None:
        return sorted(Path(runs_dir, r["preset"]).glob(f"cogs*/seed{r['seed']}/accuracy.json"))
    if r["task"] == TAGGING and tagging_runs_dir is not None:
        scores = Path(tagging_runs_dir, r["preset"], f"seed{r['seed']}", "pred", "gen.scores.json")
        return [scores] if scores.is_file() else []
    return []


def sync_categories(rows, runs_dir, path, tagging_runs_dir=None):
    """Refresh the per-category COGS CSV (tasks cogs and cogs-tagging) from the runs' score
    files (seq2seq: accuracy.json; tagging: pred/gen.scores.json, the official metric); keep
    rows of lost runs."""
    header = ["preset", "task", "seed", "category", "correct", "total", "accuracy"]
    keep = {}
    p = Path(path)
    if p.is_file():
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                keep[r["preset"], r["task"], r["seed"], r["category"]] = r
    for r in rows:
        for acc in _category_files(r, runs_dir, tagging_runs_dir):
            for cat, c in json.loads(acc.read_text()).get("categories", {}).items():
                keep[r["preset"], r["task"], r["seed"], cat] = {
                    "preset": r["preset"],
                    "task": r["task"],
                    "seed": r["seed"],
                    "category": cat,
                    "correct": c["correct"],
                    "total": c["total"],
                    "accuracy": f"{c['accuracy']:.6f}",
                }
    recorded = {(r["preset"], r["task"], r["seed"]) for r in rows}
    out = [v for k, v in keep.items() if k[:3] in recorded]
    if out:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            for v in sorted(
                out, key=lambda v: (v["task"], v["preset"], int(v["seed"]), v["category"])
            ):
                w.writerow(v)
        tmp.replace(p)
    return out


def category_table(cat_rows, task="cogs"):
    cat_rows = [r for r in cat_rows if r["task"] == task]
    if not cat_rows:
        return f"No {'COGS tagging' if task == TAGGING else 'COGS'} run recorded yet.\n"
    acc, n = {}, {}
    for r in cat_rows:
        acc.setdefault((r["category"], r["preset"]), []).append(float(r["accuracy"]))
        n.setdefault(r["preset"], set()).add(r["seed"])
    cats = sorted({r["category"] for r in cat_rows})
    presets = [p for p, _ in ROWS if any(r["preset"] == p for r in cat_rows)]
    if task == TAGGING:
        plan = tagging_plan()
        heads = [f"{p}<br>{' '.join(x for x in plan.get(p, ('', '')) if x)}" for p in presets]
    else:
        heads = presets
    heads = [f"{h} ({len(n[p])})" for h, p in zip(heads, presets)]
    table = [
        [c] + [f"{statistics.fmean(acc[c, p]):.3f}" if (c, p) in acc else "–" for p in presets]
        for c in cats
    ]
    return markdown_table(["COGS gen category"] + heads, table)


def chart(stats, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = held_columns()
    rows = [(p, n) for p, n in ROWS if any((p, c) in stats for c in cols)] or ROWS
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(13, 5.4))
    labelled = False
    for i, (p, name) in enumerate(rows):
        xs = [j - 0.4 + width * (i + 0.5) for j in range(len(cols))]
        got = [cell(stats, p, c) for c in cols]
        ys = [st[0] if st else 0 for st, _ in got]
        es = [st[1] if st else 0 for st, _ in got]
        bars = ax.bar(xs, ys, width, yerr=es, capsize=1.5, label=name)
        for bar, (_, src) in zip(bars.patches, got):
            if src is not None:  # borrowed from the row with the same encoder: hatched
                bar.set_hatch("///")
                bar.set_alpha(0.6)
        marks = [(x, paper_value(p, c)) for x, c in zip(xs, cols)]
        marks = [(x, v) for x, v in marks if v is not None]
        if marks:
            ax.scatter(
                [x for x, _ in marks],
                [v for _, v in marks],
                marker="_",
                s=120,
                color="black",
                zorder=3,
                label=None if labelled else "paper",
            )
            labelled = True
        ran = [(x, c) for x, c, (st, src) in zip(xs, cols, got) if st and src is None]
        ax.scatter(  # a dot at the foot of every cell that has runs (shows accuracy 0)
            [x for x, _ in ran],
            [0.012] * len(ran),
            marker=".",
            s=18,
            color=bars.patches[0].get_facecolor(),
            zorder=4,
        )
    ax.set_xlim(-0.5, len(cols) - 0.5)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([dict(COLUMNS)[c] for c in cols])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("sequence accuracy (test / gen split)")
    ax.set_title(
        "Ontañón et al. small-2 rows: ours at a reduced budget (bars, ± std over seeds; a dot at "
        "the foot = cell has runs, none = not run yet) vs the paper (black marks)\n"
        "COGS tag.: encoder-only tagging model with the row's encoder (hatched: rel2 rows show "
        "rel-eb's, same encoder)",
        fontsize=9,
    )
    ax.legend(fontsize="small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plan_total():
    """Cells of compgen-grid.sh (rows x seeds x columns, without the tagging cells of rows that
    share another row's tagging run), read from its ROWS/COLUMNS/TAGGING arrays."""
    seeds = {r.split("|")[0]: int(r.split("|")[1]) for r in grid_array("ROWS")}
    own = [p for p in seeds if tagging_source(p) == p]
    tasks = [c.split("|")[0] for c in grid_array("COLUMNS")]
    return sum(sum(seeds[p] for p in (own if t == TAGGING else seeds)) for t in tasks)


def generated(rows, stats, cat_rows):
    parts = [
        BEGIN,
        "",
        "### Table: sequence accuracy on the generalisation splits (ours vs paper)",
        "",
        main_table(stats),
        "Cells: our mean ± sample std over seeds (runs in parentheses; a single run has no "
        "std), bold = best of our rows "
        "in the column; *paper* = Ontañón et al.'s value for the same row (mean of at least 3 runs "
        "at the paper's training length). `–` = not run yet. *no data*: PCFG and CFQ are not in ../shared/data. "
        "*COGS tag.*: COGS as sequence tagging (section 4.5.1), the encoder-only tagging model "
        "with the row's encoder (see the per-category table below for the architectures), the "
        "official metric (all five tag rows exact) on the whole gen split (21,000); *paper* = "
        "Table 5, which has one tagging model of our rows: abs (the notebook's base, absolute "
        f"parent head); its other, {PAPER_TAGGING_TUNED:.3f}, is rel-eb small-2s with the attention "
        "parent head, which no row runs (small-2s is tagged with the absolute head). "
        "† rel2-eb and rel2-eb-c have rel-eb's encoder (they differ from it only in the decoder: "
        "relative cross-attention, copy decoder), and the tagging model has no decoder, so their "
        "tagging model is rel-eb's: the cell shows rel-eb's runs, not trained again. "
        "Avg. ours = mean over "
        "the 9 seq2seq columns we run (partial while cells are missing; COGS tag. is not averaged: "
        "it is COGS again, and the paper's averages leave it out); Avg. paper = the paper's mean "
        "over the same cells as ours (all 9 columns when the grid is complete; not its printed "
        "12-column Avg.).",
        "",
        progress(rows, plan_total()),
        "### Compositional attention against rel2-eb-c",
        "",
        "Means over seeds (runs in parentheses). Δ = compositional row − rel2-eb-c; * = the "
        "difference is larger than the two cells' standard deviations added and than 0.01 (both "
        "with 2 or more runs), a rough bar with 2-3 seeds, not a test. CPU = mean CPU seconds per run of the "
        "compositional row over rel2-eb-c's (same updates). COGS tag.: rel2-eb-c's tagging model "
        "is rel-eb's (†).",
        "",
        comparison_table(rows, stats),
        "### COGS (seq2seq) per generalisation category",
        "",
        "Mean over seeds (runs in parentheses); gen split subsampled as stated under Budget "
        "(about 100 lines per category).",
        "",
        category_table(cat_rows),
        "### COGS (tagging) per generalisation category",
        "",
        "Official metric (all five tag rows exact), mean over seeds (runs in parentheses), on the "
        "whole gen split (1,000 sentences per category). Column heads: the row and its tagging "
        "architecture with the options added to it; rel2-eb and rel2-eb-c are rel-eb's (†).",
        "",
        category_table(cat_rows, TAGGING),
        "### Mean wall / CPU time per run (s), by task and preset",
        "",
        wall_summary(rows) or "No runs yet.\n",
        "### Every run",
        "",
        wall_table(rows),
        END,
    ]
    return "\n".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--csv", default=str(ROOT / "docs" / "compgen-grid.csv"))
    ap.add_argument("--doc", default=str(ROOT / "docs" / "compgen-results.md"))
    ap.add_argument("--png", default=str(ROOT / "docs" / "compgen-results.png"))
    ap.add_argument("--runs", default=str(ROOT / "work" / "compgen-grid" / "runs"))
    ap.add_argument(
        "--tagging-runs", default=str(ROOT / "work" / "compgen-grid" / "cogs-tagging" / "runs")
    )
    ap.add_argument("--categories", default=str(ROOT / "docs" / "compgen-grid-cogs-categories.csv"))
    args = ap.parse_args(argv)
    rows = read_csv(args.csv)
    stats = summarize(rows)
    runs = args.runs if Path(args.runs).is_dir() else None
    tagging_runs = args.tagging_runs if Path(args.tagging_runs).is_dir() else None
    cat_rows = sync_categories(rows, runs, args.categories, tagging_runs)
    block = generated(rows, stats, cat_rows)
    if args.doc == "-":
        print(block)
    else:
        doc = Path(args.doc)
        text = doc.read_text() if doc.is_file() else ""
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            text = head + block + rest.split(END, 1)[1]
        else:
            raise ReportError(f"{doc}: no generated-block markers ({BEGIN} ... {END})")
        doc.write_text(text)
    if args.png:
        chart(stats, args.png)


if __name__ == "__main__":
    try:
        main()
    except ReportError as e:
        sys.exit(f"compgen-grid-report: {e}")
