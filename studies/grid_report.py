"""Usage: scripts/compgen-grid-report.py [--budget short|paper] [--csv FILE] [--doc FILE|-]
           [--png FILE] [--runs DIR] [--tagging-runs DIR] [--categories FILE] [--variants-csv FILE]
           [--notebook-csv FILE] [--notebook-runs DIR] [--notebook-cut-csv FILE]
       (the same: scripts/experiment.py report compgen ...)

`report compgen`: renders the compgen grid (scripts/compgen-grid.sh) in the layout of Ontañón et
al.'s tables. Defaults: --csv docs/compgen-grid.csv, --doc docs/compgen-results.md, --png
docs/compgen-results.png, --runs work/compgen-grid/runs, --tagging-runs
work/compgen-grid/cogs-tagging/runs, --categories docs/compgen-grid-cogs-categories.csv.

Writes, between the markers `<!-- BEGIN GENERATED ... -->` and `<!-- END GENERATED -->` of
--doc (the rest of the file is left as it is): the main table (rows = presets, columns = the
paper's 12 benchmarks plus COGS tagging; each cell `ours mean ± std (runs)` with the paper's
value beside it), progress, per-category COGS accuracy (seq2seq and tagging), and every run with
its wall time. Also draws the table as a PNG (bars: ours with std; black marks: the paper) and
refreshes the per-category COGS CSV (task `cogs` from the seq2seq runs' accuracy.json, task
`cogs-tagging` from the tagging runs' pred/gen.scores.json; rows of runs no longer on disk are
kept). --doc - prints the generated block instead.

--budget paper renders the paper-budget grid instead (scripts/compgen-grid.sh --budget paper,
docs/compgen-paper.csv, work/compgen-paper) into its own block of the same document (markers
`<!-- BEGIN GENERATED PAPER BUDGET ... -->`) and docs/compgen-paper.png: in every cell of the
paper's 12 columns, on the notebook path (--notebook-csv, the default path) and on ours (--csv),
the final checkpoint's accuracy (the paper's protocol) with the best-by-valid checkpoint's beside
it, whether it agrees with the paper, and the paper's value; the COGS-tagging models against
Table 5, the compositional rows against rel2-eb-c paired by seed on each path (mean difference,
95% t-interval, paired t-test), per-category COGS
accuracy (seq2seq and tagging) of the final checkpoints, kept in --categories (default
docs/compgen-paper-cogs-categories.csv), the notebook path's runs (--notebook-csv, default
docs/compgen-paper-notebook.csv: scripts/compgen-grid.sh --path notebook) against ours on the
same seeds with the paper's value, the notebook path's COGS generations scored apart by whether
the notebook cut the target (studies/cogs_target_cut.py; --notebook-runs, default
work/compgen-paper-notebook/runs, kept in --notebook-cut-csv, default
docs/compgen-paper-notebook-cogs-cut.csv), and every run with its wall and CPU time.
The document holds no dates: the time each run finished stays in the CSV's `date` column.

The tagging column follows the TAGGING table of the grid's plan (grid_plan.py): a row whose
entry is `=OTHER` (rel2-eb, rel2-eb-c: rel-eb's encoder) shows OTHER's tagging result, footnoted.
"""

import csv
import json
import statistics
from functools import partial
from pathlib import Path

from . import cogs_target_cut, grid_plan, study_stats
from .paper_variants import VARIANTS
from .report_templates import render
from .runs import ExperimentError, Parser, refresh_kept_csv

ROOT = Path(__file__).resolve().parents[1]
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
    ("compgen_rel_eb_c", "rel-eb + copy (baseline of the scheme rows)"),
    ("compgen_alibi_c", "ALiBi + copy (new scheme)"),
    ("compgen_t5_c", "T5 bias + copy (new scheme)"),
    ("compgen_rope_c", "RoPE + copy (new scheme)"),
    ("compgen_rel_eb_nope_c", "rel-eb enc., NoPE dec. + copy (new scheme)"),
    ("compgen_ndr_c", "Neural Data Router + copy (new row)"),
    ("compgen_comp_t5_c", "comp. + T5 bias + copy (new row)"),
]
_ORDER12 = [c for c, _ in COLUMNS[:12]]

# Read from the garbled tables of the paper's stored text (seed paper 001; see the doc): a line
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


class ReportError(ExperimentError):
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
            # empty: not recorded (NaN; see recorded()), e.g. a run whose killed piece lost its time
            r["wall_seconds"] = float(r["wall_seconds"] or "nan")
            r["cpu_seconds"] = float(r.get("cpu_seconds") or "nan")
            for k in ("accuracy_best", "accuracy_last"):  # paper budget only; else absent/empty
                r[k] = float(r[k]) if r.get(k) else None
        except (KeyError, ValueError):
            raise ReportError(f"{path}:{n}: bad accuracy or wall_seconds") from None
    return rows


def known(seconds):
    """Whether a run recorded these seconds (read_csv makes a missing value NaN)."""
    return seconds == seconds  # NaN != NaN


def recorded(rows, key):
    """The KEY seconds (wall_seconds, cpu_seconds) of the ROWS that record them."""
    return [r[key] for r in rows if known(r[key])]


def seconds_text(x):
    return f"{x:.0f}" if known(x) else "–"


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


def tagging_plan():
    """{row: (tagging arch, extra options)} or {row: ("=OTHER", "")} of the grid's plan."""
    return {p: (a, " ".join(o)) for p, (a, o) in grid_plan.TAGGING.items()}


tagging_source = grid_plan.tagging_source


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
        # A row planned on fewer columns (the position-scheme and NDR rows) is averaged over its
        # own columns.
        plan_row = next((r for r in grid_plan.ROWS if r.preset == preset), None)
        planned = [c for c in averaged if plan_row is None or grid_plan.runs_column(plan_row, c)]
        avg = statistics.fmean(ours_means) if ours_means else None
        if len(ours_means) < len(planned):
            suffix = " (partial)"
        else:
            suffix = "" if len(planned) == len(averaged) else f" ({len(planned)} columns)"
        cells.append("–" if avg is None else f"{avg:.3f}{suffix}")
        if paper and not paper_vals:  # nothing of ours yet: the paper over the 9 columns
            paper_vals = [paper[c] for c in averaged]
        cells.append(f"{statistics.fmean(paper_vals):.3f}" if paper_vals else "–")
        table.append(cells)
    return markdown_table(head, table)


def progress(rows, plan_total):
    n = len(rows)
    wall_rows = recorded(rows, "wall_seconds")
    wall = sum(wall_rows)
    cpu_rows = recorded(rows, "cpu_seconds")
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
        f"total wall time {wall / 3600:.2f} h ({wall:.0f} s, one thread each"
        + ("" if len(wall_rows) == n else f", over the {len(wall_rows)} runs that record it")
        + f"){cpu}.\n"
    )


def wall_table(rows):
    head = "seed|task|preset|updates|accuracy|wall s|CPU s|threads".split("|")
    cells = [
        [r["seed"], r["task"], r["preset"], r["updates"], f"{r['accuracy']:.4f}"]
        + [seconds_text(r["wall_seconds"]), seconds_text(r["cpu_seconds"])]
        + [r.get("threads", "")]
        for r in rows
    ]
    return markdown_table(head, cells)


def wall_summary(rows):
    """Mean wall / CPU seconds per (task, preset): the cost of one cell."""
    wall, cpu = {}, {}
    for r in rows:
        if known(r["wall_seconds"]):
            wall.setdefault((r["task"], r["preset"]), []).append(r["wall_seconds"])
        if known(r["cpu_seconds"]):
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
# The position-scheme and NDR rows: each new row -> its baseline and what differs between the two.
SCHEME_BASELINES = {
    "compgen_rel_eb_c": ("compgen_rel2_eb_c", "no relative positions in cross-attention"),
    "compgen_alibi_c": ("compgen_rel_eb_c", "ALiBi instead of rel-eb in self-attention"),
    "compgen_t5_c": ("compgen_rel_eb_c", "T5 bias instead of rel-eb in self-attention"),
    "compgen_rope_c": ("compgen_rel_eb_c", "RoPE instead of rel-eb in self-attention"),
    "compgen_rel_eb_nope_c": ("compgen_rel_eb_c", "no positions at all in the decoder"),
    "compgen_ndr_c": (
        "compgen_rel2_eb_c",
        "the encoder: 4 shared copy-gated layers with geometric attention and no other "
        "positions, instead of 2 layers with rel-eb (several factors)",
    ),
    "compgen_comp_t5_c": ("compgen_t5_c", "compositional attention instead of multi-head"),
}


def comparison_table(rows, stats):
    """Compositional rows against rel2-eb-c, column by column: means, the difference, whether it
    exceeds the two cells' spread (|diff| > std + std, with 2+ runs each), and the CPU cost."""
    cpu = {}
    for r in rows:
        if known(r["cpu_seconds"]):
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


def _category_files(r, runs_dir, tagging_runs_dir, final=False):
    """The score files with per-category gen accuracies of CSV row r (none if not on disk): the
    reported checkpoint's (the short grid: best by valid), or with `final` the final
    checkpoint's, which the paper budget reports."""
    if r["task"] == "cogs" and runs_dir is not None:
        name = "accuracy-last.json" if final else "accuracy.json"
        return sorted(Path(runs_dir, r["preset"]).glob(f"cogs*/seed{r['seed']}/{name}"))
    if r["task"] == TAGGING and tagging_runs_dir is not None:
        pred = "pred-last" if final else "pred"
        scores = Path(tagging_runs_dir, r["preset"], f"seed{r['seed']}", pred, "gen.scores.json")
        return [scores] if scores.is_file() else []
    return []


def sync_categories(rows, runs_dir, path, tagging_runs_dir=None, final=False):
    """Refresh the per-category COGS CSV (tasks cogs and cogs-tagging) from the runs' score
    files (seq2seq: accuracy.json; tagging: pred/gen.scores.json, the official metric; with
    `final` the final checkpoint's, accuracy-last.json and pred-last/); keep rows of lost runs,
    so that the committed CSV renders the tables on a machine without the run folders."""
    header = ["preset", "task", "seed", "category", "correct", "total", "accuracy"]
    fresh = [
        dict(zip(header, [r["preset"], r["task"], r["seed"], cat, c["correct"], c["total"]]))
        | {"accuracy": f"{c['accuracy']:.6f}"}
        for r in rows
        for acc in _category_files(r, runs_dir, tagging_runs_dir, final)
        for cat, c in json.loads(acc.read_text()).get("categories", {}).items()
    ]
    recorded = {(r["preset"], r["task"], r["seed"]) for r in rows}
    return refresh_kept_csv(
        path,
        header,
        key=lambda v: (v["preset"], v["task"], v["seed"], v["category"]),
        fresh=fresh,
        keep=lambda v: (v["preset"], v["task"], v["seed"]) in recorded,
        order=lambda v: (v["task"], v["preset"], int(v["seed"]), v["category"]),
    )


def per_category_table(cat_rows, task, order, head):
    """Mean accuracy per COGS gen category over seeds, one column per preset of ORDER that has
    rows of TASK, headed head(preset, number of seeds)."""
    acc, n = {}, {}
    for r in cat_rows:
        if r["task"] == task:
            acc.setdefault((r["category"], r["preset"]), []).append(float(r["accuracy"]))
            n.setdefault(r["preset"], set()).add(r["seed"])
    presets = [p for p in order if p in n]
    cats = sorted({c for c, _ in acc})
    table = [
        [c] + [f"{statistics.fmean(acc[c, p]):.3f}" if (c, p) in acc else "–" for p in presets]
        for c in cats
    ]
    return markdown_table(["COGS gen category"] + [head(p, len(n[p])) for p in presets], table)


def category_table(cat_rows, task="cogs"):
    if not any(r["task"] == task for r in cat_rows):
        return f"No {'COGS tagging' if task == TAGGING else 'COGS'} run recorded yet.\n"
    if task == TAGGING:
        plan = tagging_plan()

        def head(p, seeds):
            return f"{p}<br>{' '.join(x for x in plan.get(p, ('', '')) if x)} ({seeds})"
    else:

        def head(p, seeds):
            return f"{p} ({seeds})"

    return per_category_table(cat_rows, task, [p for p, _ in ROWS], head)


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
    finish_chart(
        fig,
        ax,
        path,
        [dict(COLUMNS)[c] for c in cols],
        "sequence accuracy (test / gen split)",
        "Ontañón et al. small-2 rows: ours at a reduced budget (bars, ± std over seeds; a dot at "
        "the foot = cell has runs, none = not run yet) vs the paper (black marks)\n"
        "COGS tag.: encoder-only tagging model with the row's encoder (hatched: rel2 rows show "
        "rel-eb's, same encoder)",
        fontsize=9,
    )


def finish_chart(fig, ax, path, labels, ylabel, title, fontsize, handles=None):
    """Both charts' column labels, accuracy axis, title and legend below (HANDLES: the legend's
    entries, default the labelled artists); the PNG written."""
    import matplotlib.pyplot as plt

    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=fontsize)
    where = dict(fontsize="small", ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    ax.legend(**where) if handles is None else ax.legend(handles=handles, **where)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plan_total():
    """Cells of the grid's short plan (see grid_plan.plan)."""
    return grid_plan.plan_total("short")


def generated(rows, stats, cat_rows):
    """The short-budget block of the document (templates/compgen-short.md, filled in)."""
    scheme_pairs = "; ".join(f"`{r}` − `{b}`: {what}" for r, (b, what) in SCHEME_BASELINES.items())
    return render(
        "compgen-short",
        begin=BEGIN,
        end=END,
        main_table=main_table(stats),
        paper_tagging_tuned=f"{PAPER_TAGGING_TUNED:.3f}",
        progress=progress(rows, plan_total()),
        comparison_table=comparison_table(rows, stats),
        comp_paired=paired_comparison(rows, COMP_BASELINES, COLUMNS),
        scheme_pairs=scheme_pairs,
        scheme_comparison=paired_comparison(
            rows, {r: b for r, (b, _) in SCHEME_BASELINES.items()}, COLUMNS, row_head="row"
        ),
        seq2seq_categories=category_table(cat_rows),
        tagging_categories=category_table(cat_rows, TAGGING),
        wall_summary=wall_summary(rows) or "No runs yet.\n",
        wall_table=wall_table(rows),
    )


# The paper-budget grid (scripts/compgen-grid.sh --budget paper).
PAPER_BEGIN = (
    "<!-- BEGIN GENERATED PAPER BUDGET (scripts/compgen-grid-report.py --budget paper; "
    "do not edit by hand) -->"
)
PAPER_END = "<!-- END GENERATED PAPER BUDGET -->"
PAPER_BUDGET_COLUMNS = [  # (task, label, epochs): the paper's 12 columns, the notebooks' epochs
    ("add", "Add", 2),
    ("addneg", "AddNeg", 10),
    ("reverse", "Reverse", 2),
    ("dup", "Dup", 4),
    ("cart", "Cart", 4),
    ("inters", "Inters", 8),
    ("scan-length", "SCAN-l", 24),
    ("scan-addjump", "SCAN-aj", 24),
    ("pcfg-productivity", "PCFG-p", 20),
    ("pcfg-systematicity", "PCFG-s", 20),
    ("cogs", "COGS", 16),
    ("cfq", "CFQ", 16),
]
PAPER_BUDGET_LABELS = [(t, label) for t, label, _ in PAPER_BUDGET_COLUMNS] + [
    (TAGGING, "COGS tag.")
]
# The two training paths of the paper-budget grid (scripts/compgen-grid.sh --path), the default
# first: its CSV is --notebook-csv, the fairseq path's is --csv.
PATHS = ("notebook", "fairseq")
PAPER_BUDGET_ROWS = [
    ("compgen_abs", "abs"),
    ("compgen_rel2_eb_c", "rel2-eb-c (= small-2)"),
    ("compgen_comp_rel2_eb_c", "comp-rel2-eb-c (new)"),
    ("compgen_comp_rel2_eb_cs", "comp-rel2-eb-cs (new, shared)"),
]
PAPER_TAGGING_ROWS = [  # (row, label, Table 5 value or None); the variants' rows below them
    ("cogs_tagging_tuned", "tuned (rel-eb small-2s, attention parent head)", PAPER_TAGGING_TUNED),
    ("cogs_tagging_base", "base (abs small-2, absolute parent head)", PAPER_TAGGING["compgen_abs"]),
    ("cogs_tagging_tuned_comp", "tuned + compositional attention (S = R = 4; new)", None),
]
COMP_BASELINES = {  # compositional row -> its baseline: the attention apart (and, for _cs, sharing)
    "compgen_comp_rel2_eb_c": "compgen_rel2_eb_c",
    "compgen_comp_rel2_eb_cs": "compgen_rel2_eb_c",
}
PAPER_BASELINES = {  # compared row -> its baseline at the paper's budget
    **COMP_BASELINES,
    "cogs_tagging_tuned_comp": "cogs_tagging_tuned",
    # the same pair with fairseq's initialisation, the tagging presets' former default (variants)
    "tuned_comp_fairseq_init": "tuned_fairseq_init",
}


def _mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return (
        statistics.fmean(values),
        statistics.stdev(values) if len(values) > 1 else 0.0,
        len(values),
    )


def _t_interval(d):
    """Mean of the paired differences D and the half-width of its 95% t-interval (None with
    fewer than 2 differences or none spread: no interval)."""
    from scipy import stats as sps

    mean = statistics.fmean(d)
    if len(d) < 2 or statistics.stdev(d) == 0:
        return mean, None
    return mean, sps.t.ppf(0.975, len(d) - 1) * statistics.stdev(d) / len(d) ** 0.5


def _ms_text(st, digits=3):
    if st is None:
        return "–"
    mean, std, n = st
    return f"{mean:.{digits}f} ± {std:.{digits}f} ({n})" if n > 1 else f"{mean:.{digits}f} (1)"


def _by_cell(rows):
    cells = {}
    for r in rows:
        cells.setdefault((r["preset"], r["task"]), {})[r["seed"]] = r
    return cells


def _path_text(path, runs, paper):
    """One path's part of a main-table cell: final checkpoint mean ± std (runs), whether it
    agrees with PAPER (the paper's value, or None), best-by-valid mean."""
    finals = [r["accuracy"] for r in runs]
    best = _mean_std([r["accuracy_best"] for r in runs])
    text = f"{path} {_ms_text(_mean_std(finals))}"
    if finals and paper is not None:
        text += " *agrees*" if agrees_with_paper(finals, paper) else " **differs**"
    return text + (f"<br>best-valid {best[0]:.3f}" if best is not None else "")


def paper_budget_table(rows, notebook_rows=()):
    """Rows x the paper's 12 columns: on the notebook path (NOTEBOOK_ROWS, the default of
    --budget paper) and on ours (ROWS, --path fairseq), each the final checkpoint's mean ± std
    (runs) and the best-by-valid mean; the paper's value; `no data` where the column's data is
    not obtainable."""
    by_path = dict(zip(PATHS, (_by_cell(notebook_rows), _by_cell(rows))))
    head = ["row (preset)"] + [f"{label} ({e} ep.)" for _, label, e in PAPER_BUDGET_COLUMNS]
    table = []
    for preset, name in PAPER_BUDGET_ROWS:
        line = [f"{name}<br>`{preset}`"]
        for task, _, _ in PAPER_BUDGET_COLUMNS:
            pv = paper_value(preset, task)
            parts = (
                [UNAVAILABLE[task]]
                if task in UNAVAILABLE
                else [
                    _path_text(path, list(cells.get((preset, task), {}).values()), pv)
                    for path, cells in by_path.items()
                ]
            )
            parts.append(f"*paper {pv:.3f}*" if pv is not None else "*paper –*")
            line.append("<br>".join(parts))
        table.append(line)
    return markdown_table(head, table)


def paper_tagging_table(rows):
    cells = _by_cell(rows)
    head = [
        "tagging model (row)",
        "final checkpoint",
        "best-by-valid checkpoint",
        "paper (Table 5)",
        "final − paper",
        "seeds (final)",
    ]
    table = []
    for row, name, pv in PAPER_TAGGING_ROWS:
        runs = sorted(cells.get((row, TAGGING), {}).values(), key=lambda r: int(r["seed"]))
        final = _mean_std([r["accuracy"] for r in runs])
        best = _mean_std([r["accuracy_best"] for r in runs])
        diff = "–" if final is None or pv is None else f"{final[0] - pv:+.3f}"
        seeds = ", ".join(f"{r['accuracy']:.3f}" for r in runs) or "–"
        table.append(
            [
                f"{name}<br>`{row}`",
                "not run yet" if final is None else _ms_text(final),
                _ms_text(best),
                "–" if pv is None else f"{pv:.3f}",
                diff,
                seeds,
            ]
        )
    return markdown_table(head, table)


def _paired_reading(a, b, d):
    """(95% CI text, paired t-test p or None, reading) of the seed differences D = A - B."""
    from scipy import stats as sps

    mean, half = _t_interval(d)
    if half is None:
        if len(d) < 2:
            return "–", None, "cannot tell"
        return "–", None, "helps" if mean > 0 else "hurts" if mean < 0 else "equal"
    ci = f"[{mean - half:+.3f}, {mean + half:+.3f}]"
    p = float(sps.ttest_rel(a, b).pvalue)
    excludes_0 = mean - half > 0 or mean + half < 0
    return ci, p, ("helps" if mean > 0 else "hurts") if excludes_0 else "cannot tell"


def _cpu_ratio(comp_runs, base_runs, seeds):
    """Mean CPU seconds per run, row over baseline, over the seeds that record both runs'."""
    timed = [s for s in seeds if all(known(c[s]["cpu_seconds"]) for c in (comp_runs, base_runs))]
    if not timed:
        return None
    ca = [comp_runs[s]["cpu_seconds"] for s in timed]
    cb = [base_runs[s]["cpu_seconds"] for s in timed]
    return statistics.fmean(ca) / statistics.fmean(cb)


def _paired_row(label, comp, base, comp_runs, base_runs):
    """(the row of one column of PAIRED_COMPARISON, its Holm cell "–" until paired_comparison
    adjusts the table's p-values, the paired t-test p or None), or None when no seed has both
    runs."""
    seeds = sorted(set(comp_runs) & set(base_runs), key=int)
    if not seeds:
        return None
    a = [comp_runs[s]["accuracy"] for s in seeds]
    b = [base_runs[s]["accuracy"] for s in seeds]
    d = [x - y for x, y in zip(a, b)]
    ci, p, verdict = _paired_reading(a, b, d)
    ratio = _cpu_ratio(comp_runs, base_runs, seeds)
    return [
        label,
        f"`{comp}` − `{base}`",
        len(d),
        f"{statistics.fmean(a):.3f}",
        f"{statistics.fmean(b):.3f}",
        f"{statistics.fmean(d):+.3f}",
        ci,
        "–" if p is None else f"{p:.3f}",
        "–",
        verdict,
        "–" if ratio is None else f"{ratio:.2f}x",
    ], p


PAIRED_HEAD = ["column", "pair", "seeds", None, "baseline", "mean Δ", "95% CI (t)", "paired t p"]
PAIRED_HEAD += ["p (Holm)", "reading", "CPU ratio"]


def paired_comparison(rows, pairs=None, labels=None, row_head="compositional", note_unpaired=False):
    """Each compared row against its baseline (PAIRS: row -> baseline; the paper budget's by
    default) on every column of LABELS both have runs of, paired by seed (only seeds both have):
    mean difference of the reported accuracies, 95% t-interval, paired t-test p, that p adjusted
    by Holm's method over every test of the table (the family a reader scans), and the CPU-time
    ratio; with NOTE_UNPAIRED, a line below the table names the pairs with no seed of both in any
    column (rows whose runs are still to come)."""
    cells = _by_cell(rows)
    pairs = PAPER_BASELINES if pairs is None else pairs
    labels = dict(PAPER_BUDGET_LABELS if labels is None else labels)
    table, unpaired = [], []
    for comp, base in pairs.items():
        found = [
            _paired_row(labels[task], comp, base, cells[comp, task], cells[base, task])
            for task in labels
            if (comp, task) in cells and (base, task) in cells
        ]
        table += [row for row in found if row]
        unpaired += [] if any(found) else [f"`{comp}` − `{base}`"]
    if not table:
        return "No column has runs of both a compared row and its baseline yet.\n"
    tested = [(row, p) for row, p in table if p is not None]
    for (row, _), adjusted in zip(tested, study_stats.holm([p for _, p in tested])):
        row[PAIRED_HEAD.index("p (Holm)")] = f"{adjusted:.3f}"
    table = [row for row, _ in table]
    text = markdown_table([row_head if h is None else h for h in PAIRED_HEAD], table)
    if note_unpaired and unpaired:
        text += f"\nNot compared yet (no seed with runs of both): {', '.join(unpaired)}.\n"
    return text


def variant_baseline(name, variant, rows, by_variant):
    """({seed: run} the variant NAME is compared with, what they are in words): the runs of the
    variant named by `against`, else its grid row's runs in its column (ROWS)."""
    if variant.against is None:
        runs = {
            r["seed"]: r for r in rows if (r["preset"], r["task"]) == (variant.base, variant.task)
        }
        return runs, "the row"
    other = VARIANTS.get(variant.against)
    if other is None or other.task != variant.task:
        raise ReportError(
            f"{name}: against {variant.against}: no variant of that name in the {variant.task} "
            "column (paper_variants.py)"
        )
    return by_variant.get(variant.against, {}), f"`{variant.against}`"


def variants_table(rows, variant_rows):
    """Each one-factor variant (scripts/paper-variants.sh) against its grid row or, where it
    names one (`against`), another variant, paired by seed; in the order of VARIANTS."""
    if not variant_rows:
        return "No variant run recorded yet (scripts/paper-variants.sh).\n"
    by_variant = {}
    for r in variant_rows:
        if r["preset"] not in VARIANTS:
            raise ReportError(
                f"{r['preset']}: a variant in the CSV that paper_variants.py does not define"
            )
        by_variant.setdefault(r["preset"], {})[r["seed"]] = r
    table = []
    for name in (v for v in VARIANTS if v in by_variant):
        runs, variant = by_variant[name], VARIANTS[name]
        base, against = variant_baseline(name, variant, rows, by_variant)
        seeds = sorted(set(runs) & set(base), key=int)
        final = _mean_std([runs[s]["accuracy"] for s in runs])
        best = _mean_std([runs[s]["accuracy_best"] for s in runs])
        d = [runs[s]["accuracy"] - base[s]["accuracy"] for s in seeds]
        if not d:  # e.g. a row whose runs with the presets' new default are not recorded yet
            baseline, ci = f"no run of {against} on these seeds yet", "–"
        else:
            baseline = _ms_text(_mean_std([base[s]["accuracy"] for s in seeds]))
            mean, half = _t_interval(d)
            ci = f"{mean:+.3f}" + (
                "" if half is None else f" [{mean - half:+.3f}, {mean + half:+.3f}]"
            )
        table.append(
            [
                f"`{name}`",
                f"`{variant.base}` on {variant.task}, against {against}",
                variant.factor,
                _ms_text(final),
                _ms_text(best),
                baseline,
                ci,
                ", ".join(f"{runs[s]['accuracy']:.3f}" for s in sorted(runs, key=int)),
            ]
        )
    head = [
        "variant",
        "of the row (column), compared with",
        "the one factor changed",
        "final checkpoint",
        "best-by-valid",
        "compared with, same seeds",
        "Δ, same seeds (95% t-interval)",
        "seeds (final)",
    ]
    return markdown_table(head, table)


def agrees_with_paper(values, paper):
    """The paper's value inside the 95% t-interval of VALUES (across seeds) or within 0.05 of
    their mean."""
    mean, half = _t_interval(values)
    return abs(mean - paper) <= 0.05 or (half is not None and abs(mean - paper) <= half)


def notebook_table(rows, notebook_rows):
    """Each (row, column) of the notebook path's runs against our path's runs of the same seeds,
    with the paper's value and whether the notebook path agrees with it."""
    # a tagging cell runs the same on both paths: it is no notebook-against-ours comparison
    notebook_rows = [r for r in notebook_rows if r["task"] != grid_plan.TAGGING_TASK]
    if not notebook_rows:
        return "No notebook-path run recorded yet (scripts/compgen-grid.sh --path notebook).\n"
    ours, notebook = _by_cell(rows), _by_cell(notebook_rows)
    table = []
    for (preset, task), runs in sorted(notebook.items(), key=lambda kv: _cell_order(*kv[0])):
        base = ours.get((preset, task), {})
        seeds = sorted(set(runs) & set(base), key=int)
        values = [runs[s]["accuracy"] for s in sorted(runs, key=int)]
        d = [runs[s]["accuracy"] - base[s]["accuracy"] for s in seeds]
        delta = "–"
        if d:
            mean, half = _t_interval(d)
            delta = f"{mean:+.3f}" + (
                "" if half is None else f" [{mean - half:+.3f}, {mean + half:+.3f}]"
            )
        pv = paper_value(preset, task)
        agrees = "–" if pv is None else ("yes" if agrees_with_paper(values, pv) else "no")
        table.append(
            [
                f"`{preset}`",
                dict(PAPER_BUDGET_LABELS).get(task, task),
                _ms_text(_mean_std(values)),
                _ms_text(_mean_std([base[s]["accuracy"] for s in seeds])),
                delta,
                "–" if pv is None else f"{pv:.3f}",
                agrees,
                ", ".join(f"{v:.3f}" for v in values),
            ]
        )
    head = [
        "row",
        "column",
        "notebook path (final)",
        "ours, same seeds",
        "Δ notebook − ours (95% t-interval)",
    ]
    head += ["paper", "agrees with the paper", "seeds (final)"]
    return markdown_table(head, table)


def _cell_order(preset, task):
    presets = [p for p, _ in PAPER_BUDGET_ROWS]
    tasks = [t for t, _, _ in PAPER_BUDGET_COLUMNS]
    return (
        presets.index(preset) if preset in presets else len(presets),
        tasks.index(task) if task in tasks else len(tasks),
    )


def position_table(rows):
    """rel2-eb-c and the position rows (grid_plan.POSITION_ROWS) on their columns: the final
    checkpoint's accuracy, mean ± std (runs)."""
    cells = _by_cell(rows)
    labels = dict(PAPER_BUDGET_LABELS)
    planned = {row.preset: row for row in grid_plan.PAPER_ROWS}
    presets = ("compgen_rel2_eb_c",) + grid_plan.POSITION_ROWS

    def cell(preset, task):
        if not grid_plan.runs_column(planned[preset], task):
            return "not planned"
        return _ms_text(_mean_std([r["accuracy"] for r in cells.get((preset, task), {}).values()]))

    table = [
        [f"`{preset}`"] + [cell(preset, task) for task in grid_plan.POSITION_COLUMNS]
        for preset in presets
    ]
    return markdown_table(["row"] + [labels[t] for t in grid_plan.POSITION_COLUMNS], table)


def position_comparison(rows):
    """Each position row against rel2-eb-c on the position columns, paired by seed."""
    labels = dict(PAPER_BUDGET_LABELS)
    return paired_comparison(
        rows,
        {preset: "compgen_rel2_eb_c" for preset in grid_plan.POSITION_ROWS},
        [(t, labels[t]) for t in grid_plan.POSITION_COLUMNS],
        row_head="position row",
    )


STEP_BENCHMARK = ROOT / "benchmarks" / "results" / "compgen-step.json"


def step_cost_sentence(path=STEP_BENCHMARK):
    """The position rows' cost per training step relative to rel2-eb-c, from the whole-model step
    benchmark (benchmarks/model_step.py --pairs compgen): the range over rows of 1 / the median
    per-round CPU-time speed, so that it follows the benchmark when it is rerun."""
    try:
        results = json.loads(Path(path).read_text())["results"]
        costs = [1 / r["cpu_speed_vs_stock"]["median"] for r in results.values()]
    except (OSError, KeyError, ValueError, ZeroDivisionError):
        costs = []
    if not costs:
        return (
            "The cost of a training step of each row, timed in one process, is not measured yet "
            "(`benchmarks/model_step.py --pairs compgen`"
        )
    return (
        f"Timed in one process, a training step of each row at Reverse's shape costs "
        f"{min(costs):.2f}-{max(costs):.2f} times rel2-eb-c's CPU time "
        f"(`benchmarks/results/compgen-step.md`"
    )


def paper_category_table(cat_rows, task):
    """Per-category COGS accuracy of the final checkpoints (tagging: the official metric), mean
    over seeds, one column per row (preset) in the order of the paper-budget tables."""
    if not any(r["task"] == task for r in cat_rows):
        return f"No {'tagging' if task == TAGGING else 'seq2seq'} run's final-checkpoint scores.\n"
    order = [p for p, _ in PAPER_BUDGET_ROWS] + [p for p, _, _ in PAPER_TAGGING_ROWS]
    order += list(VARIANTS)
    return per_category_table(cat_rows, task, order, lambda p, seeds: f"`{p}` ({seeds})")


def paper_wall_table(rows, notebook_rows=()):
    """Every run of both paths (ours first, in the order of their CSVs) with its times."""
    head = "seed|task|preset|updates|final|best-valid|wall s|CPU s|path".split("|")
    runs = [(r, "fairseq") for r in rows] + [(r, "notebook") for r in notebook_rows]
    cells = [
        [
            r["seed"],
            r["task"],
            r["preset"],
            r["updates"],
            f"{r['accuracy']:.4f}",
            "–" if r["accuracy_best"] is None else f"{r['accuracy_best']:.4f}",
            seconds_text(r["wall_seconds"]),
            seconds_text(r["cpu_seconds"]),
            path,
        ]
        for r, path in runs
    ]
    return markdown_table(head, cells)


def _paper_chart_series(notebook_cells, cells):
    """(preset, legend name, its cells, hatched) of each row on each path with a run, the
    default path first, then the tagging models (one path: the same on both)."""
    series = [
        (preset, f"{name} ({path} path)", path_cells, path != PATHS[0])
        for preset, name in PAPER_BUDGET_ROWS
        for path, path_cells in zip(PATHS, (notebook_cells, cells))
    ]
    series += [(p, n.split(" (")[0], cells, False) for p, n, _ in PAPER_TAGGING_ROWS]
    return [s for s in series if any(key[0] == s[0] for key in s[2])]


BEST_MARK = dict(marker="o", facecolors="none", edgecolors="dimgray", s=18)
PAPER_MARK = dict(marker="_", s=140, color="black")


def _chart_paper_value(preset, task):
    if task == TAGGING:
        return {row: value for row, _, value in PAPER_TAGGING_ROWS}.get(preset)  # Table 5
    return paper_value(preset, task)


def paper_chart(rows, notebook_rows, path):
    """Bars: each row's final checkpoint, mean ± std, on the notebook path (plain) and ours
    (hatched), in one colour per row; circles: best-by-valid means; black marks: the paper. A
    column holds only the series with runs in it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    series = _paper_chart_series(_by_cell(notebook_rows), _by_cell(rows))
    if not series:
        return
    cols = [(t, label) for t, label in PAPER_BUDGET_LABELS if t not in UNAVAILABLE]
    colour = {}
    for preset, *_ in series:
        colour.setdefault(preset, f"C{len(colour)}")
    per_column = [[s for s in series if (s[0], t) in s[2]] for t, _ in cols]
    width = 0.8 / max(len(c) for c in per_column)
    fig, ax = plt.subplots(figsize=(13, 5.5))
    legend = [  # in the series' order
        Patch(facecolor=colour[preset], hatch="//" if hatched else None, label=name)
        for preset, name, _, hatched in series
    ]
    for j, ((task, _), column) in enumerate(zip(cols, per_column)):
        for i, (preset, _, cells, hatched) in enumerate(column):
            x = j + width * (i - (len(column) - 1) / 2)
            runs = list(cells[preset, task].values())
            mean, std, _ = _mean_std([r["accuracy"] for r in runs])
            ax.bar(x, mean, width, yerr=std, capsize=2, color=colour[preset],
                   hatch="//" if hatched else None, edgecolor="white" if hatched else None)  # fmt: skip
            best = _mean_std([r["accuracy_best"] for r in runs])
            if best is not None:
                ax.scatter([x], [best[0]], **BEST_MARK, zorder=3)
            pv = _chart_paper_value(preset, task)
            if pv is not None:
                ax.scatter([x], [pv], **PAPER_MARK, zorder=4)
    legend.append(ax.scatter([], [], **PAPER_MARK, label="paper"))
    legend.append(ax.scatter([], [], **BEST_MARK, label="best-by-valid checkpoint (mean)"))
    finish_chart(
        fig,
        ax,
        path,
        [label for _, label in cols],
        "sequence accuracy, final checkpoint",
        "At the authors' budgets: the notebook path (the default; plain bars) and ours (hatched), "
        "final checkpoint, mean ± std over seeds, vs the paper (black marks)",
        fontsize=10,
        handles=legend,
    )


def paper_plan_total():
    """Cells of the paper-budget plan."""
    return grid_plan.plan_total("paper")


def _runs_recorded(path, rows):
    """`PATH path N (wall, CPU h)` of the runs of one path."""
    cpu = recorded(rows, "cpu_seconds")
    wall = sum(recorded(rows, "wall_seconds"))
    return (
        f"{path} path {len(rows)} (wall {wall / 3600:.2f} h, CPU {sum(cpu) / 3600:.2f} h"
        + ("" if len(cpu) == len(rows) else f"; times over the {len(cpu)} runs that record them")
        + ")"
    )


def _table_or(head_rows, message):
    """The markdown table of (head, rows), or MESSAGE where there are no rows."""
    head, rows = head_rows
    return markdown_table(head, rows) if rows else message + "\n"


def paper_generated(rows, cat_rows, variant_rows=(), notebook_rows=(), cut_rows=()):
    """The paper-budget block of the document (templates/compgen-paper.md, filled in)."""
    runs_recorded = "Runs recorded, of {} planned per path: {}.".format(
        paper_plan_total(),
        "; ".join(
            _runs_recorded(path, path_rows) for path, path_rows in zip(PATHS, (notebook_rows, rows))
        ),
    )
    seq2seq_pairs = {c: b for c, b in PAPER_BASELINES.items() if c.startswith("compgen_")}
    return render(
        "compgen-paper",
        begin=PAPER_BEGIN,
        end=PAPER_END,
        budget_table=paper_budget_table(rows, notebook_rows),
        runs_recorded=runs_recorded,
        tagging_table=paper_tagging_table(rows),
        notebook_paired_comparison=paired_comparison(
            notebook_rows, seq2seq_pairs, note_unpaired=True
        ),
        paired_comparison=paired_comparison(list(rows) + list(variant_rows), note_unpaired=True),
        variants_table=variants_table(rows, variant_rows),
        notebook_table=notebook_table(rows, notebook_rows),
        notebook_cut_table=_table_or(
            cogs_target_cut.summary_table(cut_rows, rows, [p for p, _ in PAPER_BUDGET_ROWS]),
            "No notebook-path COGS run's generations are scored yet.",
        ),
        notebook_cut_categories=_table_or(
            cogs_target_cut.category_table(cut_rows, cat_rows, "compgen_abs"),
            "No notebook-path COGS run of `compgen_abs` is scored yet.",
        ),
        position_table=position_table(rows),
        position_comparison=position_comparison(rows),
        step_cost=step_cost_sentence(),
        seq2seq_categories=paper_category_table(cat_rows, "cogs"),
        tagging_categories=paper_category_table(cat_rows, TAGGING),
        wall_table=paper_wall_table(rows, notebook_rows),
    )


def write_block(doc_path, begin, end, block):
    doc = Path(doc_path)
    text = doc.read_text() if doc.is_file() else ""
    if begin not in text or end not in text:
        raise ReportError(f"{doc}: no generated-block markers ({begin} ... {end})")
    head, rest = text.split(begin, 1)
    doc.write_text(head + block + rest.split(end, 1)[1])


# The paper budget's other inputs: (flag, default under the checkout, what it holds).
PAPER_BUDGET_FILES = [
    (
        "--variants-csv",
        "docs/compgen-paper-variants.csv",
        "the one-factor variants of its rows (scripts/paper-variants.sh)",
    ),
    (
        "--notebook-csv",
        "docs/compgen-paper-notebook.csv",
        "the notebook path's runs (scripts/compgen-grid.sh --path notebook)",
    ),
    (
        "--notebook-runs",
        "work/compgen-paper-notebook/runs",
        "the notebook path's run folders (their COGS generations are scored apart by whether "
        "the notebook cut the target)",
    ),
    (
        "--notebook-cut-csv",
        "docs/compgen-paper-notebook-cogs-cut.csv",
        "those scores, kept from the run folders",
    ),
]


def main(argv=None, prog=None, usage=None):
    ap = Parser(__doc__)
    ap.add_argument("--budget", choices=("short", "paper"), default="short")
    ap.add_argument("--csv", help="default docs/compgen-grid.csv (paper: docs/compgen-paper.csv)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "compgen-results.md"))
    ap.add_argument(
        "--png", help="default docs/compgen-results.png (paper: docs/compgen-paper.png)"
    )
    ap.add_argument(
        "--runs", help="default work/compgen-grid/runs (paper: work/compgen-paper/runs)"
    )
    ap.add_argument(
        "--tagging-runs",
        help="default work/compgen-grid/cogs-tagging/runs (paper: "
        "work/compgen-paper/cogs-tagging/runs)",
    )
    ap.add_argument(
        "--categories",
        help="per-category COGS CSV, kept from the run folders (default "
        "docs/compgen-grid-cogs-categories.csv; paper: docs/compgen-paper-cogs-categories.csv)",
    )
    for flag, default, what in PAPER_BUDGET_FILES:
        ap.add_argument(flag, default=str(ROOT / default), help=f"paper budget: {what}")
    args = with_budget_defaults(ap.parse_args(argv))
    rows = read_csv(args.csv)
    runs_dir, tagging_runs = existing_dir(args.runs), existing_dir(args.tagging_runs)
    if args.budget == "paper":
        variant_rows = read_csv(args.variants_csv)
        all_rows = list(rows) + list(variant_rows)
        cat_rows = sync_categories(all_rows, runs_dir, args.categories, tagging_runs, final=True)
        notebook_rows = read_csv(args.notebook_csv)
        cut_rows = cogs_target_cut.sync(
            notebook_rows, existing_dir(args.notebook_runs), args.notebook_cut_csv
        )
        block = paper_generated(rows, cat_rows, variant_rows, notebook_rows, cut_rows)
        markers = (PAPER_BEGIN, PAPER_END)
        draw = partial(paper_chart, rows, notebook_rows)
    else:
        stats = summarize(rows)
        cat_rows = sync_categories(rows, runs_dir, args.categories, tagging_runs)
        block = generated(rows, stats, cat_rows)
        markers = (BEGIN, END)
        draw = partial(chart, stats)
    if args.doc == "-":
        print(block)
    else:
        write_block(args.doc, *markers, block)
    if args.png:
        draw(args.png)


def with_budget_defaults(args):
    """ARGS with the budget's default files and folders where none was given."""
    grid, png = {"short": ("compgen-grid", "compgen-results"), "paper": ("compgen-paper",) * 2}[
        args.budget
    ]
    args.csv = args.csv or str(ROOT / "docs" / f"{grid}.csv")
    args.png = args.png if args.png is not None else str(ROOT / "docs" / f"{png}.png")
    args.runs = args.runs or str(ROOT / "work" / grid / "runs")
    args.tagging_runs = args.tagging_runs or str(ROOT / "work" / grid / "cogs-tagging" / "runs")
    args.categories = args.categories or str(ROOT / "docs" / f"{grid}-cogs-categories.csv")
    return args


def existing_dir(path):
    """PATH when it is a folder (the run folders may not be on this machine), else None."""
    return path if Path(path).is_dir() else None
