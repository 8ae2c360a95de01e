"""The results of benchmarks/train.sh: words/second of each run from fairseq's JSON log, the
per-round ratio preset/stock, written as benchmarks/results/NAME.{json,md}.

    python benchmarks/train_report.py MANIFEST NAME DATA UPDATES ROUNDS MAX_TOKENS THREADS \
        PRESET1 STOCK1 PRESET2 STOCK2 PRESET3 STOCK3

MANIFEST: one line per run, "round<TAB>pair<TAB>preset|stock<TAB>log file". A run's figure is the
median per-update wps after the first two updates (warm-up); reported: median (IQR) over rounds.
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's plugin_tools

from common import machine, summary, write_results  # noqa: E402


def run_wps(log):
    """Median per-update wps of one fairseq-train JSON log after 2 warm-up updates, and the count."""
    wps = []
    for line in Path(log).read_text().splitlines():
        i = line.find("{")
        if i < 0 or '"wps"' not in line:
            continue
        try:
            rec = json.loads(line[i:])
        except json.JSONDecodeError:
            continue
        if "train_inner" in line[:i] or "update" in rec and "epoch" in rec and "train_wall" in rec:
            wps.append(float(rec["wps"]))
    inner = wps[2:] if len(wps) > 3 else wps
    return summary(inner)["median"], len(wps)


def rows_of(manifest, specs):
    """Per pair: its preset and stock specs, their wps over rounds, and the per-round ratio."""
    runs = {}
    for line in Path(manifest).read_text().splitlines():
        r, p, side, log = line.split("\t")
        runs.setdefault(p, {}).setdefault(side, {})[int(r)] = run_wps(log)
    rows = {}
    for p, sides in runs.items():
        pre, sto = sides["preset"], sides["stock"]
        ratios = [pre[r][0] / sto[r][0] for r in sorted(pre) if r in sto]
        rows[p] = {
            "preset": specs[p][0],
            "stock": specs[p][1],
            "preset_wps": summary([v[0] for v in pre.values()]),
            "stock_wps": summary([v[0] for v in sto.values()]),
            "ratio": summary(ratios),
        }
    return rows


def markdown(info, rows):
    m, threads = info["machine"], info["threads"]
    lines = [
        "# fairseq-train words/second (interleaved runs)",
        "",
        f"{m['cpu']}, torch {m['torch']}, {threads} thread(s) per run; git {m['git']}. Data "
        f"`{info['data']}`, --max-tokens {info['max_tokens']}, {info['updates']} updates per run "
        f"(median per-update wps after 2 warm-up updates), {info['rounds']} round(s) A B A B. "
        "Ratio: per-round preset/stock, median (IQR).",
        "",
        "| preset | stock | preset wps | stock wps | ratio |",
        "|---|---|---|---|---|",
    ]
    for row in rows.values():
        a, b, q = row["preset_wps"], row["stock_wps"], row["ratio"]
        preset, stock = (row[k].replace("--arch ", "") for k in ("preset", "stock"))
        lines.append(
            f"| `{preset}` | `{stock}` | {a['median']:.0f} | {b['median']:.0f} "
            f"| {q['median']:.2f}x ({q['q1']:.2f}-{q['q3']:.2f}) |"
        )
    return "\n".join(lines) + "\n"


def main(argv):
    manifest, name, data, updates, rounds, max_tokens, threads = argv[:7]
    specs = {"1": argv[7:9], "2": argv[9:11], "3": argv[11:13]}
    torch.set_num_threads(int(threads))
    rows = rows_of(manifest, specs)
    info = {
        "machine": machine(torch.device("cpu")),
        "data": data,
        "updates": int(updates),
        "rounds": int(rounds),
        "max_tokens": int(max_tokens),
        "threads": int(threads),
    }
    write_results(name, dict(info, results=rows), markdown(info, rows))


if __name__ == "__main__":
    main(sys.argv[1:])
