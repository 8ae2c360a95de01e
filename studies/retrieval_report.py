"""Tables and learning curves of the Contextual Retrieval study (scripts/study-retrieval.py):
reads OUT/runs.csv, OUT/curves.csv and OUT/protocol.json, writes the curves PNG beside the
document and the tables into the document between its <!-- study:begin --> and
<!-- study:end --> marks (the prose around them is left as it is).

The document regenerates from committed files alone: the study's runs.csv, curves.csv and
protocol.json are copied beside the document (DOC-stem-runs.csv, -curves.csv, -protocol.json),
and the specialisation agreements, measured on the runs' checkpoints when OUT has them, are
written to DOC-stem-specialisation.json. Without OUT/runs.csv the report reads those files
(beside --doc, else the committed ones in docs/); without the checkpoints it reads the
specialisation file back, so no section is dropped.

Usage: scripts/study-retrieval-report.py [--out DIR] [--doc docs/results-contextual-retrieval.md]
"""

import json
import shutil
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from plugin_tools.cli import OneLineParser

from .report_templates import render
from .retrieval_study import SETTINGS
from .runs import read_rows

ROOT = Path(__file__).resolve().parents[1]  # the checkout: default --out and --doc
BEGIN, END = "<!-- study:begin -->", "<!-- study:end -->"
# the runs at the authors' protocol, archived as they finish (runs.csv, curves.csv, protocol.json)
PAPER_BEGIN, PAPER_END = "<!-- study-paper:begin -->", "<!-- study-paper:end -->"
PAPER_ARCHIVE = ROOT / "docs" / "study-runs" / "retrieval-paper"
COMMITTED_DOC = ROOT / "docs" / "results-contextual-retrieval.md"
EXAMPLES = 256  # evaluation examples per run of the specialisation measurement


def side_file(doc, suffix):
    return doc.with_name(f"{doc.stem}-{suffix}")


def committed(doc, suffix):
    """The side file SUFFIX beside DOC, else the committed one beside the committed document."""
    f = side_file(doc, suffix)
    return f if f.exists() else side_file(COMMITTED_DOC, suffix)


def mean_std(values):
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:  # one seed has no spread: a std of 0 would claim one
        return f"{mean:.4f}"
    return f"{mean:.4f} ± {statistics.stdev(values):.4f}"


def zero_baseline(setting, mode):
    """L1 of predicting 0 on the evaluation distribution (section 1.7's table), from 100 x 256
    generated examples."""
    import numpy as np

    from fairseq_plugins.data import contextual_retrieval as cr

    s = cr.RetrievalSetting(*SETTINGS[setting])
    batch = cr.generate(
        np.random.RandomState(0), s, 25600, ood=mode == "ood", held_out=mode == "ood"
    )
    return float(np.abs(batch.targets).mean())


def model_order(name):
    kind, rest = name.split(" ")[0].split("-", 1)
    return (kind != "mha", int("".join(c for c in rest.split("r")[0] if c.isdigit())), name)


def tables(runs, prefix="", full_updates=None):
    """The per-setting tables; PREFIX starts their headings (the paper block's are "Paper
    protocol: "). With FULL_UPDATES (the protocol's), runs stopped before it are a row of their
    own, named by the update they stopped at."""
    groups = defaultdict(list)
    for r in runs:
        model = r["model"]
        if full_updates is not None and int(r["updates"]) != full_updates:
            model += f" (stopped at {int(r['updates']):,} updates)"
        groups[r["mode"], r["setting"], model, int(r["dim"])].append(r)
    lines = []
    for setting in SETTINGS:
        for mode in ("iid", "ood"):
            cells = {k: v for k, v in groups.items() if k[:2] == (mode, setting)}
            if not cells:
                continue
            title = "i.i.d." if mode == "iid" else "OoD, trained on 80% of the preference tuples"
            lines += [f"### {prefix}{setting}, {title}", ""]
            head = "| model | d | params | seeds | i.i.d. L1 |"
            rule = "|---|---|---|---|---|"
            if mode == "ood":  # 'valid' is then the training tuples' distribution
                head = head.replace("i.i.d. L1", "training-tuples L1") + " held-out L1 |"
                rule += "---|"
            lines += [head + " CPU s / run |", rule + "---|"]
            keys = sorted(cells, key=lambda k: (k[3], model_order(k[2])))
            for key in keys:
                rows = cells[key]
                iid = [float(r["iid_l1"]) for r in rows]
                line = f"| {key[2]} | {key[3]} | {int(rows[0]['params']):,} | {len(rows)} | "
                line += mean_std(iid) + " |"
                if mode == "ood":
                    line += " " + mean_std([float(r["ood_l1"]) for r in rows]) + " |"
                cpu = statistics.fmean(float(r["cpu_s"]) for r in rows)
                lines.append(line + f" {cpu:.0f} |")
            baseline = zero_baseline(setting, mode)
            data = "the held-out combinations" if mode == "ood" else "this evaluation data"
            lines += ["", f"Predicting 0 scores {baseline:.3f} on {data}.", ""]
    return lines


def plot_curves(runs, curves, png):
    import logging

    import matplotlib

    matplotlib.use("Agg")
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib.pyplot as plt

    info = {r["run"]: r for r in runs}
    series = defaultdict(lambda: defaultdict(list))  # (mode, setting, subset) -> label -> points
    for c in curves:
        r = info.get(c["run"])
        if r is None:
            continue
        label = f"{r['model']} d{r['dim']}"
        series[r["mode"], r["setting"], c["subset"]][label].append(
            (int(c["num_updates"]), float(c["l1"]))
        )
    panels = sorted(series, key=lambda k: (k[0], list(SETTINGS).index(k[1]), k[2]))
    if not panels:
        return False
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    colors, styles = {}, {}
    for ax, key in zip(axes.flat, panels):
        for label in sorted(series[key], key=lambda s: (s.split()[1], model_order(s.split()[0]))):
            by_update = defaultdict(list)
            for u, v in series[key][label]:
                by_update[u].append(v)
            xs = sorted(by_update)
            model, width = label.split()
            color = colors.setdefault(model, f"C{len(colors)}")  # one colour per model,
            style = styles.setdefault(width, ["-", "--", ":"][len(styles) % 3])  # a line per width
            ys = [statistics.fmean(by_update[x]) for x in xs]
            ax.plot(xs, ys, style, color=color, label=label)
        mode, setting, subset = key
        which = "held-out" if subset == "ood" else "in-distribution"
        ax.set_title(f"{setting} {mode}: {which} L1 (mean over seeds)", fontsize=9)
        ax.set_xlabel("updates (x 256 examples)")
        ax.set_ylabel("L1")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    return True


def measure_specialisation(runs, out, doc, examples=EXAMPLES):
    """Best-permutation agreement of every compositional run (its best checkpoint, ``examples``
    evaluation examples of its own split), the figure of the first d 64 2x4 run of each mode;
    None unless every compositional run has its checkpoint in OUT/runs/RUN."""
    comp = [r for r in runs if r["attention"] == "compositional"]
    ckpts = [out / "runs" / r["run"] / "checkpoint_best.pt" for r in comp]
    if not comp or not all(c.exists() for c in ckpts):
        return None
    # the plugin (torch, fairseq) only here: the report itself reads committed files
    from fairseq_plugins.analysis import retrieval_specialisation as figure

    per_run, figures = [], {}
    for r, ckpt in zip(comp, ckpts):
        model, task = figure.load(ckpt)
        result = figure.specialisation(model, task, examples)
        per_run.append(
            dict(
                run=r["run"], setting=r["setting"], mode=r["mode"], model=r["model"],
                dim=int(r["dim"]), seed=int(r["seed"]), split=result["split"],
                agreement=result["score"], chance=result["chance"],
            )
        )  # fmt: skip
        if r["setting"] == "2x4" and r["dim"] == "64" and r["mode"] not in figures:
            figure.draw(result, task.setting, 0, side_file(doc, f"specialisation-{r['mode']}.png"))
            figures[r["mode"]] = r["run"]
    cells = defaultdict(list)
    for x in per_run:
        cells[x["setting"], x["mode"], x["model"], x["dim"]].append(x)
    return {
        "examples": examples,
        "figures": figures,
        "cells": [
            dict(
                setting=k[0], mode=k[1], model=k[2], dim=k[3], split=v[0]["split"],
                seeds=len(v), agreement=[x["agreement"] for x in v],
                chance=statistics.fmean(x["chance"] for x in v),
            )
            for k, v in cells.items()
        ],
        "runs": per_run,
    }  # fmt: skip


def specialisation_section(spec):
    """The specialisation table and figures from SPEC (measure_specialisation's record)."""
    examples = spec["examples"]
    table = [
        "| setting | data | model | d | seeds | agreement | chance |",
        "|---|---|---|---|---|---|---|",
    ]
    order = list(SETTINGS)
    for c in sorted(spec["cells"], key=lambda c: (order.index(c["setting"]), c["mode"], c["dim"])):
        which = "held-out" if c["split"] == "ood" else "i.i.d."
        table.append(
            f"| {c['setting']} | {which} | {c['model']} | {c['dim']} | {c['seeds']} | "
            + (
                mean_std(c["agreement"])
                if "agreement" in c  # the per-run values; else their mean and sd as measured
                else f"{c['agreement_mean']:.4f} ± {c['agreement_std']:.4f}"
            )
            + f" | {c['chance']:.3f} |"
        )
    drawn = [spec["figures"][m] for m in ("iid", "ood") if m in spec["figures"]]
    intro = (
        f"Best-permutation agreement of argmax_r c_(i,s,r) with the preference rho_(i,s') "
        f"({examples * 10:,} objects per run; chance: the same statistic with the preferences "
        f"shuffled across objects), mean ± standard deviation over seeds. Figures (example 0): "
        f"{', '.join(f'`{d}`' for d in drawn) or 'none'}."
    )
    lines = [
        f"![value scores, {spec['figures'][m]}](results-contextual-retrieval-specialisation-{m}.png)"
        for m in ("iid", "ood")
        if m in spec["figures"]
    ]
    return ["### Retrieval specialisation (Figure 11)", "", intro, "", *table, "", *lines, ""]


def comparison_entries(by):
    """The comparisons of the runs BY (mode, setting, model, dim) -> seed -> run: (setting,
    mode, (compositional model, d), (multi-head model, d), field, label)."""
    entries = []
    for setting in SETTINGS:
        for mode in ("iid", "ood"):
            entries += same_width_entries(by, setting, mode)
            if mode == "iid" and setting == "2x4":  # fewer parameters: d 32 against d 64
                entries += smaller_width_entries(by, setting, mode)
    return entries


def same_width_entries(by, setting, mode):
    """Each compositional model against each multi-head model of its setting, mode and width."""
    measures = [("iid_l1", "i.i.d. L1")]
    if mode == "ood":
        measures = [("iid_l1", "training-tuples L1"), ("ood_l1", "held-out L1")]
    entries = []
    for dim in sorted({k[3] for k in by if k[:2] == (mode, setting)}):
        models = sorted(
            (k[2] for k in by if k[:2] == (mode, setting) and k[3] == dim), key=model_order
        )
        comp = [m for m in models if m.startswith("comp-")]
        entries += [
            (setting, mode, (c, dim), (m, dim), field, label)
            for c in comp
            for m in models
            if m not in comp
            for field, label in measures
        ]
    return entries


def smaller_width_entries(by, setting, mode):
    """The compositional models of the smallest width against the multi-head ones of the
    largest."""
    dims = sorted({k[3] for k in by if k[:2] == (mode, setting)})
    if len(dims) < 2:
        return []
    small, big = dims[0], dims[-1]
    comp = [k[2] for k in by if k[:2] == (mode, setting) and k[3] == small]
    mha = [k[2] for k in by if k[:2] == (mode, setting) and k[3] == big]
    return [
        (setting, mode, (c, small), (m, big), "iid_l1", "i.i.d. L1")
        for c in sorted(c for c in comp if c.startswith("comp-"))
        for m in sorted((m for m in mha if m.startswith("mha-")), key=model_order)
    ]


def comparison_line(entry, test, n, b, a, p_holm, n_entries):
    """The table row and the verdict of one comparison."""
    setting, mode, (c, dc), (m, dm), _, label = entry
    mean, sd, t, df, p = test
    lower = sum(x < y for x, y in zip(b, a))
    data = "OoD" if mode == "ood" else "i.i.d."
    row = (
        f"| {setting} {data} | {c} d{dc} vs {m} d{dm} | {label} | {mean:+.4f} | {sd:.4f} | "
        f"{lower} of {n} | {t:.2f} | {df} | {p:.4f} | {p_holm:.4f}"
        + ("*" if p_holm < 0.05 else "")
        + " |"
    )
    if p_holm < 0.05:
        verdict = f"{'lower' if mean < 0 else 'higher'} than {m} d{dm}"
    else:
        verdict = f"not distinguishable from {m} d{dm} at {n} seeds"
    return row, (
        f"- {setting} {data}, {c} d{dc}, {label} {mean:+.4f} (lower in {lower} of {n} seeds): "
        f"{verdict} (paired t-test across {n} seeds, p = {p:.4f}, Holm-adjusted over the "
        f"{n_entries} comparisons p = {p_holm:.4f})."
    )


def comparisons(runs):
    """Every comparison the document reads: compositional attention against each multi-head
    model of its setting, mode and width (and, on 2x4 i.i.d., the d 32 compositional model
    against the d 64 multi-head ones), on the last validation L1 (both L1s for OoD runs); each
    a paired t-test across seeds (paired by seed: the same seed gives every model the same
    data), Holm's correction over all of them. Returns the markdown table and the verdicts."""
    from studies import study_stats

    by = defaultdict(dict)
    for r in runs:
        by[r["mode"], r["setting"], r["model"], int(r["dim"])][int(r["seed"])] = r

    def seeds_of(entry):
        setting, mode, (c, dc), (m, dm) = entry[:4]
        return sorted(set(by[mode, setting, m, dm]) & set(by[mode, setting, c, dc]))

    entries = [e for e in comparison_entries(by) if len(seeds_of(e)) >= 2]  # paired: 2 seeds
    if not entries:
        return ["No comparison has 2 or more seeds of both models yet."], []
    tests = []
    for entry in entries:
        setting, mode, (c, dc), (m, dm), field, _ = entry
        seeds = seeds_of(entry)
        a = [float(by[mode, setting, m, dm][k][field]) for k in seeds]
        b = [float(by[mode, setting, c, dc][k][field]) for k in seeds]
        tests.append((study_stats.paired_t_test(a, b), len(seeds), b, a))
    adjusted = study_stats.holm([t[0][4] for t in tests])
    lines = [
        comparison_line(e, *test, p_holm, len(entries))
        for e, test, p_holm in zip(entries, tests, adjusted)
    ]
    table = [
        "| setting | comparison | measure | mean difference | SD of differences | lower in | t | "
        "df | p | p (Holm) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *(row for row, _ in lines),
    ]
    return table, [verdict for _, verdict in lines]


def report_sources(out, doc):
    """runs.csv, curves.csv and protocol.json: the study folder's (copied beside the document)
    when OUT has runs.csv, else the committed copies."""
    if not (out / "runs.csv").exists():
        sources = {name: committed(doc, name) for name in ("runs.csv", "curves.csv")}
        sources["protocol.json"] = committed(doc, "protocol.json")
        return sources
    sources = {"runs.csv": out / "runs.csv", "curves.csv": out / "curves.csv"}
    sources["protocol.json"] = out / "protocol.json"
    for name, src in sources.items():
        dest = side_file(doc, name)
        if src.exists() and src.resolve() != dest.resolve():
            shutil.copyfile(src, dest)
    return sources


def specialisation_record(runs, out, doc):
    """The specialisation measured on OUT's checkpoints (written beside the document), else the
    record written before."""
    spec = measure_specialisation(runs, out, doc)
    if spec is not None:
        side_file(doc, "specialisation.json").write_text(json.dumps(spec, indent=1) + "\n")
        return spec
    f = committed(doc, "specialisation.json")
    if not f.exists():
        sys.exit(f"study-retrieval-report.py: error: no checkpoints in {out} and no {f}")
    return json.loads(f.read_text())


def side_link(suffix):
    name = side_file(COMMITTED_DOC, suffix).name
    return f"[{name}]({name})"


def study_block(runs, curves, protocol, spec, png):
    """The generated part of the document, between its marks."""
    runs_text = render(
        "retrieval-runs",
        n_runs=len(runs),
        updates=f"{protocol['updates']:,}",
        lr=protocol["lr"],
        interval=protocol["interval"],
        valid_batches=protocol["valid_batches"],
        cpu_min=f"{sum(float(r['cpu_s']) for r in runs) / 60:.1f}",
        wall_min=f"{sum(float(r['wall_s']) for r in runs) / 60:.1f}",
        runs_link=side_link("runs.csv"),
        curves_link=side_link("curves.csv"),
    )
    body = [BEGIN, "", runs_text, "", *tables(runs)]
    if plot_curves(runs, curves, png):
        body += ["![learning curves](results-contextual-retrieval-curves.png)", ""]
    return body + [across_seeds(runs, "Across seeds"), ""] + specialisation_section(spec) + [END]


def across_seeds(runs, heading):
    """The paired comparisons of RUNS (Holm over them) under HEADING."""
    table, verdicts = comparisons(runs)
    return render(
        "retrieval-across-seeds",
        heading=heading,
        table="\n".join(table),
        verdicts="\n".join(verdicts),
    )


def paper_block(archive, png):
    """The runs at the authors' protocol (ARCHIVE: runs.csv, curves.csv, protocol.json), with
    their own curves figure and their own paired tests (Holm over this block's comparisons)."""
    runs = read_rows(archive / "runs.csv")
    if not runs:
        return [PAPER_BEGIN, "", "No run at the authors' protocol has finished yet.", "", PAPER_END]
    if not (archive / "protocol.json").is_file():
        sys.exit(f"study-retrieval-report.py: error: {archive / 'protocol.json'}: no such file")
    protocol = json.loads((archive / "protocol.json").read_text())
    rel = f"study-runs/{archive.name}"
    full = [r for r in runs if int(r["updates"]) == protocol["updates"]]
    stopped = sorted({int(r["updates"]) for r in runs} - {protocol["updates"]})
    text = render(
        "retrieval-paper-runs",
        n_runs=len(full),
        stopped=(
            f" {len(runs) - len(full)} more runs were stopped early, at "
            f"{' or '.join(f'{u:,}' for u in stopped)} updates: their rows say so, and the "
            "Reading says why."
            if stopped
            else ""
        ),
        updates=f"{protocol['updates']:,}",
        lr=protocol["lr"],
        interval=f"{protocol['interval']:,}",
        valid_batches=protocol["valid_batches"],
        cpu_h=f"{sum(float(r['cpu_s']) for r in runs) / 3600:.1f}",
        runs_link=f"[{rel}/runs.csv]({rel}/runs.csv)",
        curves_link=f"[{rel}/curves.csv]({rel}/curves.csv)",
    )
    body = [PAPER_BEGIN, "", text, "", *tables(runs, "Paper protocol: ", protocol["updates"])]
    if plot_curves(runs, read_rows(archive / "curves.csv"), png):
        body += [f"![learning curves at the authors' protocol]({png.name})", ""]
    return body + [across_seeds(runs, "Paper protocol: across seeds"), "", PAPER_END]


def replace_block(text, begin, end, body, doc):
    if begin not in text or end not in text:
        sys.exit(f"study-retrieval-report.py: error: {doc}: no {begin} ... {end} marks")
    before, rest = text.split(begin, 1)
    return before + "\n".join(body) + rest.split(end, 1)[1]


def write_report(out, doc, paper_archive=PAPER_ARCHIVE):
    out, doc = Path(out), Path(doc)
    sources = report_sources(out, doc)
    runs = read_rows(sources["runs.csv"])
    curves = read_rows(sources["curves.csv"])
    if not runs:
        sys.exit(f"study-retrieval-report.py: error: {sources['runs.csv']}: no runs yet")
    protocol = json.loads(sources["protocol.json"].read_text())
    spec = specialisation_record(runs, out, doc)
    png = side_file(doc, "curves.png")
    body = study_block(runs, curves, protocol, spec, png)
    text = doc.read_text() if doc.exists() else f"{BEGIN}\n{END}\n"
    text = replace_block(text, BEGIN, END, body, doc)
    if PAPER_BEGIN in text:  # the paper block's figure beside the document too
        paper_png = side_file(doc, "paper-curves.png")
        text = replace_block(
            text, PAPER_BEGIN, PAPER_END, paper_block(Path(paper_archive), paper_png), doc
        )
    doc.write_text(text)
    print(f"wrote {doc} and {png}")


def main(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "work" / "study-retrieval")  # if present
    p.add_argument("--doc", type=Path, default=ROOT / "docs" / "results-contextual-retrieval.md")
    p.add_argument(
        "--paper-archive",
        type=Path,
        default=PAPER_ARCHIVE,
        help="the archived runs at the authors' protocol (runs.csv, curves.csv, protocol.json)",
    )
    args = p.parse_args(argv)
    write_report(args.out, args.doc, args.paper_archive)
