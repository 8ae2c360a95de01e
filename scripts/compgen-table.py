#!/usr/bin/env python3
"""Render scripts/compgen-run.sh results as the paper's tables: mean ± std of sequence accuracy.

  compgen-table.py results/compgen.csv [--out table.md] [--png chart.png]

Rows are presets, columns tasks, both in the paper's order (others after, in order of first
appearance); each cell is `mean ± std (runs)` over seeds (sample std, 0 for a single run), the
best mean of every column is bold, and `Avg.` is the mean over the row's tasks, as in the paper
(only comparable between rows that have the same tasks). --png draws a grouped bar chart with
the std as error bars. Rows of one preset and task with different data sizes (n_train, n_test:
e.g. a --small smoke run next to full runs) are refused: keep such runs in separate CSVs.
"""

import argparse
import csv
import statistics
import sys
from pathlib import Path

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser

TASK_ORDER = [
    "add",
    "addneg",
    "reverse",
    "dup",
    "cart",
    "inters",
    "scan-length",
    "scan-addjump",
    "pcfg-productivity",
    "pcfg-systematicity",
    "cogs",
]
TASK_LABEL = {
    "add": "Add",
    "addneg": "AddNeg",
    "reverse": "Reverse",
    "dup": "Dup",
    "cart": "Cart",
    "inters": "Inters",
    "scan-length": "SCAN-l",
    "scan-addjump": "SCAN-aj",
    "pcfg-productivity": "PCFG-p",
    "pcfg-systematicity": "PCFG-s",
    "cogs": "COGS",
}
_VARIANTS = ["abs", "rel_e", "rel_b", "rel_eb", "rel2_e", "rel2_b", "rel2_eb"]
PRESET_ORDER = (
    [f"compgen_{v}" for v in _VARIANTS]
    + [f"compgen_{v}_c" for v in _VARIANTS]
    + [f"compgen_{s}_{n}{w}" for w in ("", "s") for s in ("small", "large") for n in (2, 4, 6)]
)


class TableError(Exception):
    pass


def ordered(keys, order):
    rank = {k: i for i, k in enumerate(order)}
    first = {k: i for i, k in enumerate(keys)}
    return sorted(set(keys), key=lambda k: (rank.get(k, len(order)), first[k]))


def read_results(path):
    p = Path(path)
    if not p.is_file():
        raise TableError(f"{path}: no such file")
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"preset", "task", "seed", "accuracy"}
    if not rows:
        raise TableError(f"{path}: no result rows")
    missing = need - set(rows[0])
    if missing:
        raise TableError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    groups, sizes = {}, {}
    for n, row in enumerate(rows, 2):
        try:
            acc = float(row["accuracy"])
        except ValueError:
            raise TableError(f"{path}:{n}: accuracy {row['accuracy']!r} is not a number") from None
        key = (row["preset"], row["task"])
        size = (row.get("n_train"), row.get("n_test"))
        if sizes.setdefault(key, size) != size:
            raise TableError(
                f"{path}:{n}: {key[0]} on {key[1]} mixes data sizes {sizes[key]} and {size}; "
                "keep --small runs in a separate CSV"
            )
        groups.setdefault(key, []).append(acc)
    return groups


def summarize(groups):
    """{(preset, task): (mean, std, n)}, plus the ordered preset and task lists."""
    stats = {}
    for key, accs in groups.items():
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        stats[key] = (statistics.fmean(accs), std, len(accs))
    presets = ordered([k[0] for k in groups], PRESET_ORDER)
    tasks = ordered([k[1] for k in groups], TASK_ORDER)
    return stats, presets, tasks


def markdown(stats, presets, tasks):
    best = {
        t: max((stats[p, t][0] for p in presets if (p, t) in stats), default=None) for t in tasks
    }
    head = ["preset"] + [TASK_LABEL.get(t, t) for t in tasks] + ["Avg."]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in presets:
        cells, means = [p], []
        for t in tasks:
            if (p, t) not in stats:
                cells.append("–")
                continue
            mean, std, n = stats[p, t]
            means.append(mean)
            cell = f"{mean:.3f} ± {std:.3f} ({n})"
            cells.append(f"**{cell}**" if mean == best[t] else cell)
        cells.append(f"{statistics.fmean(means):.3f}" if means else "–")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Sequence-level accuracy (0..1), mean ± std over seeds (runs in parentheses); "
        "bold: best mean per column."
    )
    return "\n".join(lines) + "\n"


def chart(stats, presets, tasks, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / max(len(presets), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(tasks) + 2), 4))
    for i, p in enumerate(presets):
        xs, ys, es = [], [], []
        for j, t in enumerate(tasks):
            if (p, t) in stats:
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(stats[p, t][0])
                es.append(stats[p, t][1])
        ax.bar(xs, ys, width, yerr=es, capsize=2, label=p)
    ax.set_xlim(-0.5, len(tasks) - 0.5)
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels([TASK_LABEL.get(t, t) for t in tasks])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("sequence accuracy")
    ax.legend(fontsize="small", ncol=max(1, len(presets) // 8), loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="results CSV written by scripts/compgen-run.sh")
    ap.add_argument("--out", help="write the markdown table here (default: stdout)")
    ap.add_argument("--png", help="also draw a bar chart to this PNG file")
    args = ap.parse_args(argv)
    stats, presets, tasks = summarize(read_results(args.csv))
    table = markdown(stats, presets, tasks)
    if args.out:
        Path(args.out).write_text(table)
    else:
        sys.stdout.write(table)
    if args.png:
        chart(stats, presets, tasks, args.png)


if __name__ == "__main__":
    try:
        main()
    except TableError as e:
        sys.exit(f"compgen-table: {e}")
