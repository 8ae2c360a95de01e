"""Tables and learning curves of the Contextual Retrieval study (scripts/study-retrieval.py):
reads OUT/runs.csv and OUT/curves.csv, writes the curves PNG beside the document and the tables
into the document between its <!-- study:begin --> and <!-- study:end --> marks (the prose around
them is left as it is).

Usage: scripts/study-retrieval-report.py [--out DIR] [--doc docs/results-contextual-retrieval.md]
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from fairseq_plugins.analysis import retrieval_specialisation as figure
from plugin_tools.retrieval_study import SETTINGS, read_rows

ROOT = Path(__file__).resolve().parents[2]  # the checkout: default --out and --doc
BEGIN, END = "<!-- study:begin -->", "<!-- study:end -->"


def mean_std(values):
    if not values:
        return "-"
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.4f} ± {std:.4f}"


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
    kind, rest = name.split("-", 1)
    return (kind != "mha", int("".join(c for c in rest.split("r")[0] if c.isdigit())))


def tables(runs):
    groups = defaultdict(list)
    for r in runs:
        groups[r["mode"], r["setting"], r["model"], int(r["dim"])].append(r)
    lines = []
    for setting in SETTINGS:
        for mode in ("iid", "ood"):
            cells = {k: v for k, v in groups.items() if k[:2] == (mode, setting)}
            if not cells:
                continue
            title = "i.i.d." if mode == "iid" else "OoD, trained on 80% of the preference tuples"
            lines += [f"### {setting}, {title}", ""]
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


def specialisation_section(runs, out, doc, examples=256):
    """Best-permutation agreement of every compositional run (its best checkpoint, ``examples``
    evaluation examples of its own split) and the figure of the first 2x4 run of each mode."""
    found = defaultdict(list)
    lines = []
    for r in runs:
        ckpt = out / "runs" / r["run"] / "checkpoint_best.pt"
        if r["attention"] != "compositional" or not ckpt.exists():
            continue
        model, task = figure.load(ckpt)
        result = figure.specialisation(model, task, examples)
        found[r["mode"], r["setting"], r["model"], int(r["dim"])].append(result)
        png = doc.with_name(f"{doc.stem}-specialisation-{r['mode']}.png")
        key = ("drawn", r["mode"])
        if r["setting"] == "2x4" and key not in found and r["dim"] == "64":
            figure.draw(result, task.setting, 0, png)
            found[key] = [r["run"]]
            lines.append(f"![value scores, {r['run']}]({png.name})")
    table = [
        "| setting | data | model | d | seeds | agreement | chance |",
        "|---|---|---|---|---|---|---|",
    ]
    cells = [k for k in found if k[0] != "drawn"]
    for key in sorted(cells, key=lambda k: (list(SETTINGS).index(k[1]), k[0], k[3])):
        results = found[key]
        which = "held-out" if results[0]["split"] == "ood" else "i.i.d."
        table.append(
            f"| {key[1]} | {which} | {key[2]} | {key[3]} | {len(results)} | "
            + mean_std([x["score"] for x in results])
            + " | "
            + f"{statistics.fmean(x['chance'] for x in results):.3f} |"
        )
    drawn = [f"`{found['drawn', m][0]}`" for m in ("iid", "ood") if ("drawn", m) in found]
    intro = (
        f"Best-permutation agreement of argmax_r c_(i,s,r) with the preference rho_(i,s') "
        f"({examples * 10:,} objects per run; chance: the same statistic with the preferences "
        f"shuffled across objects). Figures (example 0): {', '.join(drawn) or 'none'}."
    )
    return ["### Retrieval specialisation (Figure 11)", "", intro, "", *table, "", *lines, ""]


def write_report(out, doc):
    runs = read_rows(out / "runs.csv")
    curves = read_rows(out / "curves.csv")
    if not runs:
        sys.exit(f"study-retrieval-report.py: error: {out / 'runs.csv'}: no runs yet")
    protocol = json.loads((out / "protocol.json").read_text())
    png = doc.with_name(doc.stem + "-curves.png")
    cpu = sum(float(r["cpu_s"]) for r in runs)
    wall = sum(float(r["wall_s"]) for r in runs)
    body = [
        BEGIN,
        "",
        f"{len(runs)} runs, {protocol['updates']:,} updates each at lr {protocol['lr']} "
        f"(batch 256), validation every {protocol['interval']} updates on "
        f"{protocol['valid_batches']} x 256 examples fixed per seed; the L1 is the last "
        f"validation's. CPU time of all runs: {cpu / 60:.1f} min (sum of per-run wall time "
        f"{wall / 60:.1f} min, two runs at a time on a shared 2-core machine).",
        "",
        *tables(runs),
    ]
    if plot_curves(runs, curves, png):
        body += [f"![learning curves]({png.name})", ""]
    body += specialisation_section(runs, out, doc)
    body.append(END)
    text = doc.read_text() if doc.exists() else f"{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        sys.exit(f"study-retrieval-report.py: error: {doc}: no {BEGIN} ... {END} marks")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    doc.write_text(before + "\n".join(body) + after)
    print(f"wrote {doc} and {png}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "work" / "study-retrieval")
    p.add_argument("--doc", type=Path, default=ROOT / "docs" / "results-contextual-retrieval.md")
    args = p.parse_args(argv)
    write_report(args.out, args.doc)
