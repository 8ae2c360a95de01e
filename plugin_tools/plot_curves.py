"""Plot validation curves from fairseq-train logs: metric vs epoch and vs updates, one line per log.

With --validate-interval-updates several validations share an epoch; the epoch panel shows the
last one of each epoch, the updates panel all of them.

Reads the validation lines fairseq-train writes, in any of its log formats:

  simple/tqdm:  ... | valid | epoch 003 | valid on 'valid' subset | loss 5.1 | ppl 34.2 | ... | num_updates 120
  json:         ... | valid | {"epoch": 3, "valid_loss": "5.1", "valid_ppl": "34.2", ..., "valid_num_updates": "120"}

Usage: scripts/plot-curves.py LOG... [--metric ppl|loss|bleu|accuracy] [--x epoch|updates|both]
       [--out curves.png] [--labels NAME...] [--subset valid]
"""

import json
import sys
from pathlib import Path

from plugin_tools.cli import OneLineParser

PROG = "plot-curves.py"
METRICS = ("ppl", "loss", "bleu", "accuracy")
# alternative names criterions use for the same quantity
ALIASES = {"accuracy": ("accuracy", "acc"), "bleu": ("bleu",), "loss": ("loss",), "ppl": ("ppl",)}


class LogError(Exception):
    pass


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def parse_line(line, subset="valid"):
    """Return the stats dict of a validation line (keys without the subset prefix), or None."""
    tag = f"| {subset} | "
    pos = line.find(tag)
    if pos >= 0:
        rest = line[pos + len(tag) :].strip()
        if rest.startswith("{"):
            try:
                raw = json.loads(rest)
            except json.JSONDecodeError:
                return None
            prefix = f"{subset}_"
            stats = {}
            for key, value in raw.items():
                key = key[len(prefix) :] if key.startswith(prefix) else key
                num = _number(value)
                if num is not None:
                    stats[key] = num
            return stats or None
    elif f"valid on '{subset}' subset" in line:  # tqdm format: no "| valid |" tag
        rest = line
    else:
        return None
    stats = {}
    for field in rest.split(" | "):
        parts = field.strip().split(" ")
        if len(parts) == 2:
            num = _number(parts[1])
            if num is not None:
                stats[parts[0]] = num
    return stats or None


def parse_log(path, subset="valid"):
    """All validation records of one log as a list of dicts with epoch, updates and metrics."""
    p = Path(path)
    if not p.is_file():
        raise LogError(f"{path}: no such file")
    records = []
    with open(p, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            stats = parse_line(line.rstrip("\n"), subset)
            if stats is None or ("epoch" not in stats and "num_updates" not in stats):
                continue
            records.append(stats)
    if not records:
        raise LogError(f"{path}: no '{subset}' validation lines (is it a fairseq-train log?)")
    return records


def series(records, metric, x):
    key_x = "epoch" if x == "epoch" else "num_updates"
    xs, ys = [], []
    for r in records:
        value = next((r[k] for k in ALIASES[metric] if k in r), None)
        if value is None or key_x not in r:
            continue
        if x == "epoch" and xs and xs[-1] == r[key_x]:
            ys[-1] = value  # validations inside an epoch: keep the epoch's last one
            continue
        xs.append(r[key_x])
        ys.append(value)
    return xs, ys


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def grouped_series(member_series):
    """[(xs, ys)] of the runs of one group (seeds) -> (xs, mean, low, high) at every x that
    at least one run reached (mean and range over the runs that reached it)."""
    by_x = {}
    for xs, ys in member_series:
        for x, y in zip(xs, ys):
            by_x.setdefault(x, []).append(y)
    xs = sorted(by_x)
    mean = [sum(by_x[x]) / len(by_x[x]) for x in xs]
    return xs, mean, [min(by_x[x]) for x in xs], [max(by_x[x]) for x in xs]


def plot(logs, labels, metric, xs_kinds, out, subset="valid", group=False):
    """One panel per x kind; one line per log, or with GROUP one line per distinct label: the
    mean over its logs (seeds) with a band from the lowest to the highest. Every line has its own
    marker and dash and, with GROUP, a small horizontal offset (under 1% of the axis per line),
    so that lines on the same points stay distinguishable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parsed = [parse_log(p, subset) for p in logs]
    for path, records in zip(logs, parsed):
        if not any(series(records, metric, x)[1] for x in xs_kinds):
            have = sorted({k for r in records for k in r} - {"epoch", "num_updates"})
            raise LogError(
                f"{path}: validation lines have no '{metric}' (they have: {', '.join(have)})"
            )
    fig, axes = plt.subplots(1, len(xs_kinds), figsize=(6 * len(xs_kinds), 4.2), squeeze=False)
    names = list(dict.fromkeys(labels)) if group else list(labels)
    for ax, x in zip(axes[0], xs_kinds):
        all_x = [v for r in parsed for v in series(r, metric, x)[0]]
        span = (max(all_x) - min(all_x) if all_x else 0) or 1.0
        for i, name in enumerate(names):
            style = {"marker": MARKERS[i % len(MARKERS)], "markersize": 4}
            style["linestyle"] = LINESTYLES[i % len(LINESTYLES)]
            if group:
                members = [series(r, metric, x) for lb, r in zip(labels, parsed) if lb == name]
                xs, ys, low, high = grouped_series(members)
                n = len(members)
                if not xs:
                    continue
                shift = 0.008 * span * (i - (len(names) - 1) / 2)
                xs = [v + shift for v in xs]
                label = f"{name} (mean of {n} seeds)" if n > 1 else name
                (line,) = ax.plot(xs, ys, label=label, **style)
                if n > 1:
                    ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2)
            else:
                xs, ys = series(parsed[i], metric, x)
                if xs:
                    ax.plot(xs, ys, label=name, **style)
        ax.set_xlabel("epoch" if x == "epoch" else "updates")
        ax.set_ylabel(f"{subset} {metric}")
        ax.set_title(f"{subset} {metric} vs {'epoch' if x == 'epoch' else 'updates'}")
        values = [y for records in parsed for y in series(records, metric, x)[1] if y > 0]
        if metric == "ppl" and values and max(values) > 3 * min(values):
            ax.set_yscale("log")  # perplexities spanning a wide range
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return parsed


def main(argv=None):
    p = OneLineParser(
        prog=PROG,
        description="Plot the validation metric of fairseq-train logs vs epoch and vs updates "
        "(two panels), one line per log; writes a PNG.",
    )
    p.add_argument(
        "logs", nargs="+", metavar="LOG", help="fairseq-train logs (simple, tqdm or json format)"
    )
    p.add_argument(
        "--metric", choices=METRICS, default="ppl", help="validation metric (default ppl)"
    )
    p.add_argument(
        "--x",
        choices=["epoch", "updates", "both"],
        default="both",
        help="x axis: one panel, or both panels (default)",
    )
    p.add_argument("--out", default="curves.png", help="output PNG (default curves.png)")
    p.add_argument("--labels", nargs="+", metavar="NAME", help="legend labels, one per LOG")
    p.add_argument("--subset", default="valid", help="validation subset name (default valid)")
    p.add_argument(
        "--group",
        action="store_true",
        help="logs with the same label (seeds of one system) are one line: their mean, with a "
        "band from the lowest to the highest",
    )
    args = p.parse_intermixed_args(argv)
    if args.labels and len(args.labels) != len(args.logs):
        p.error(f"--labels has {len(args.labels)} names for {len(args.logs)} logs")
    labels = args.labels or [Path(log).parent.name or Path(log).stem for log in args.logs]
    if len(set(labels)) != len(labels) and not args.group:
        labels = list(args.logs)
    xs_kinds = ["epoch", "updates"] if args.x == "both" else [args.x]
    try:
        parsed = plot(args.logs, labels, args.metric, xs_kinds, args.out, args.subset, args.group)
    except LogError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    n = ", ".join(f"{label}: {len(r)} points" for label, r in zip(labels, parsed))
    print(f"{PROG}: wrote {args.out} ({args.metric}; {n})")
    return 0
