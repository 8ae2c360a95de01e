#!/usr/bin/env python3
"""Render the issue-13 grid (scripts/compgen-grid.sh) in the layout of Ontañón et al.'s tables.

  compgen-grid-report.py [--csv docs/compgen-grid.csv] [--doc docs/compgen-results.md]
                         [--png docs/compgen-results.png] [--runs work/compgen-grid/runs]
                         [--categories docs/compgen-grid-cogs-categories.csv]

Writes, between the markers `<!-- BEGIN GENERATED ... -->` and `<!-- END GENERATED -->` of
--doc (the rest of the file is left as it is): the main table (rows = presets, columns = the
paper's 12 benchmarks plus COGS tagging; each cell `ours mean ± std (runs)` with the paper's
value beside it), progress, per-category COGS accuracy, and every run with its wall time. Also
draws the table as a PNG (bars: ours with std; black marks: the paper) and refreshes the
per-category COGS CSV from the runs' accuracy.json files (rows of runs no longer on disk are
kept). --doc - prints the generated block instead.
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
    "cogs-tagging": "pending",
}
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


def _paper(*values):
    return dict(zip(_ORDER12, values))


# Read from the garbled tables of ../shared/seeds/001_0327fe51df39824b.txt (see the doc): each
# row's 12 values average to the row's printed Avg. (given last, for the check in the tests).
PAPER = {
    # Tables 1/2, avg 0.137
    "compgen_abs": (
        _paper(0.005, 0.042, 0.0, 0.0, 0.0, 0.500, 0.0, 0.003, 0.174, 0.434, 0.177, 0.304),
        0.137,
    ),
    # Table 2, avg 0.233
    "compgen_rel_eb": (
        _paper(0.003, 0.011, 0.486, 0.444, 0.0, 0.500, 0.089, 0.011, 0.257, 0.452, 0.249, 0.290),
        0.233,
    ),
    # Table 2, avg 0.346
    "compgen_rel2_eb": (
        _paper(0.978, 0.779, 0.737, 0.017, 0.0, 0.504, 0.091, 0.010, 0.194, 0.374, 0.159, 0.311),
        0.346,
    ),
    # Tables 2/3 (small-2), avg 0.403
    "compgen_rel2_eb_c": (
        _paper(0.977, 0.791, 0.540, 0.283, 0.0, 0.528, 0.043, 0.010, 0.336, 0.527, 0.511, 0.295),
        0.403,
    ),
    # Table 4 (small-2s), avg 0.468
    "compgen_small_2s": (
        _paper(0.992, 0.809, 0.780, 0.750, 0.0, 0.699, 0.022, 0.003, 0.313, 0.501, 0.450, 0.303),
        0.468,
    ),
}


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


def main_table(stats):
    held = held_columns()
    head = (
        ["row (preset)"]
        + [label for _, label in COLUMNS]
        + ["Avg. ours", "Avg. paper (same cells)"]
    )
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    best = {}
    for c in held:
        means = [stats[p, c][0] for p, _ in ROWS if (p, c) in stats]
        best[c] = max(means) if means else None
    for preset, name in ROWS:
        paper = PAPER.get(preset, (None, None))[0]
        cells = [f"{name}<br>`{preset}`"]
        ours_means, paper_vals = [], []
        for c, _ in COLUMNS:
            if c in UNAVAILABLE:
                pv = paper.get(c) if paper else None
                cells.append(UNAVAILABLE[c] + (f"<br>*paper {pv:.3f}*" if pv is not None else ""))
                continue
            if (preset, c) in stats:
                mean, std, n = stats[preset, c]
                ours_means.append(mean)
                text = f"{mean:.3f} ± {std:.3f} ({n})" if n > 1 else f"{mean:.3f} (1)"
                if best[c] is not None and mean == best[c]:
                    text = f"**{text}**"
            else:
                text = "–"
            if paper:
                if (preset, c) in stats:
                    paper_vals.append(paper[c])
                text += f"<br>*paper {paper[c]:.3f}*"
            cells.append(text)
        complete = len(ours_means) == len(held)
        avg = statistics.fmean(ours_means) if ours_means else None
        cells.append("–" if avg is None else f"{avg:.3f}" + ("" if complete else " (partial)"))
        if paper and not paper_vals:  # nothing of ours yet: the paper over the 9 columns
            paper_vals = [paper[c] for c in held]
        cells.append(f"{statistics.fmean(paper_vals):.3f}" if paper_vals else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
    lines = [
        "| seed | task | preset | updates | accuracy | wall s | CPU s | threads | finished |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {r['task']} | {r['preset']} | {r['updates']} | "
            f"{r['accuracy']:.4f} | {r['wall_seconds']:.0f} | "
            f"{'–' if r['cpu_seconds'] != r['cpu_seconds'] else format(r['cpu_seconds'], '.0f')} | "
            f"{r.get('threads', '')} | "
            f"{r['date']} |"
        )
    return "\n".join(lines) + "\n"


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
    lines = [
        "| task | " + " | ".join(presets) + " |",
        "|---" * (len(presets) + 1) + "|",
    ]
    for t in tasks:
        cells = []
        for p in presets:
            w = f"{statistics.fmean(wall[t, p]):.0f}" if (t, p) in wall else "–"
            c = f"{statistics.fmean(cpu[t, p]):.0f}" if (t, p) in cpu else "–"
            cells.append(f"{w} / {c}")
        lines.append(f"| {dict(COLUMNS)[t]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def sync_categories(rows, runs_dir, path):
    """Refresh the per-category COGS CSV from the runs' accuracy.json; keep rows of lost runs."""
    header = ["preset", "task", "seed", "category", "correct", "total", "accuracy"]
    keep = {}
    p = Path(path)
    if p.is_file():
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                keep[r["preset"], r["task"], r["seed"], r["category"]] = r
    if runs_dir is not None:
        for r in rows:
            if r["task"] != "cogs":
                continue
            for acc in sorted(
                Path(runs_dir, r["preset"]).glob(f"cogs*/seed{r['seed']}/accuracy.json")
            ):
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
            for v in sorted(out, key=lambda v: (v["preset"], int(v["seed"]), v["category"])):
                w.writerow(v)
        tmp.replace(p)
    return out


def category_table(cat_rows):
    if not cat_rows:
        return "No COGS run recorded yet.\n"
    acc = {}
    for r in cat_rows:
        acc.setdefault((r["category"], r["preset"]), []).append(float(r["accuracy"]))
    cats = sorted({r["category"] for r in cat_rows})
    presets = [p for p, _ in ROWS if any(r["preset"] == p for r in cat_rows)]
    lines = [
        "| COGS gen category | " + " | ".join(presets) + " | tagging |",
        "|---" * (len(presets) + 2) + "|",
    ]
    for c in cats:
        cells = [f"{statistics.fmean(acc[c, p]):.3f}" if (c, p) in acc else "–" for p in presets]
        lines.append(f"| {c} | " + " | ".join(cells) + " | pending |")
    return "\n".join(lines) + "\n"


def chart(stats, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = held_columns()
    rows = [(p, n) for p, n in ROWS if any((p, c) in stats for c in cols)] or ROWS
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(13, 5.4))
    for i, (p, name) in enumerate(rows):
        xs = [j - 0.4 + width * (i + 0.5) for j in range(len(cols))]
        ys = [stats[p, c][0] if (p, c) in stats else 0 for c in cols]
        es = [stats[p, c][1] if (p, c) in stats else 0 for c in cols]
        bars = ax.bar(xs, ys, width, yerr=es, capsize=1.5, label=name)
        if p in PAPER:
            ax.scatter(
                xs,
                [PAPER[p][0][c] for c in cols],
                marker="_",
                s=120,
                color="black",
                zorder=3,
                label="paper" if i == 0 else None,
            )
        ran = [(x, c) for x, c in zip(xs, cols) if (p, c) in stats]
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
        "the foot = cell has runs, none = not run yet) vs the paper (black marks)",
        fontsize=9,
    )
    ax.legend(fontsize="small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plan_total():
    """Cells of compgen-grid.sh (rows x seeds x columns), read from its ROWS/COLUMNS arrays."""
    text = (ROOT / "scripts" / "compgen-grid.sh").read_text()

    def array(name):
        body = text.split(f"{name}=(", 1)[1].split("\n)", 1)[0]
        return [line.strip().strip('"') for line in body.splitlines() if line.strip()]

    seeds = sum(int(r.split("|")[1]) for r in array("ROWS"))
    return seeds * len(array("COLUMNS"))


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
        "*pending*: COGS tagging model being built by another engineer. Avg. ours = mean over "
        "the 9 columns we run (partial while cells are missing); Avg. paper = the paper's mean "
        "over the same cells as ours (all 9 columns when the grid is complete; not its printed "
        "12-column Avg.).",
        "",
        progress(rows, plan_total()),
        "### COGS (seq2seq) per generalisation category",
        "",
        "Mean over seeds; gen split subsampled as stated under Budget (about 100 lines per category). Tagging: pending.",
        "",
        category_table(cat_rows),
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
    ap.add_argument("--categories", default=str(ROOT / "docs" / "compgen-grid-cogs-categories.csv"))
    args = ap.parse_args(argv)
    rows = read_csv(args.csv)
    stats = summarize(rows)
    runs = args.runs if Path(args.runs).is_dir() else None
    cat_rows = sync_categories(rows, runs, args.categories)
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
