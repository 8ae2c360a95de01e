"""Part 1 of scripts/demo.sh as Markdown: the table of the three systems and its reading.

Reads, in the demo's output folder OUT, for every system NAME: ``row-NAME.txt`` (the start of its
row, ``| NAME | params | train seconds``, written when it was trained), the scores of its test and
test-long decoding (``generate/NAME-test/scores.json``, ``generate/NAME-test1/scores.json``,
written by scripts/score-translation.py) and the paired significance tests against the first system
(``significance-test.json``, ``significance-test1.json``, scripts/significance.sh --json).

The reading states what holds on every machine, not this run's decimals: there is one training run
per system, and float noise between CPUs (AVX2 / AVX-512 kernels) moved a system by 1.7 BLEU.

    python -m plugin_tools.demo_report OUT stock compositional graph
"""

import json
from pathlib import Path

from plugin_tools.cli import OneLineParser

TITLE = (
    "Part 1: synthetic translation, the same small model three ways "
    "(beam 5; p: paired bootstrap on tokenized BLEU)"
)
HEADER = (
    "| model | params | train time (s) | BLEU test | p vs stock | acc test "
    "| BLEU test-long | p vs stock | acc test-long |\n|---|---|---|---|---|---|---|---|---|"
)
SUBSETS = ("test", "test1")  # test1: test-long, binarised as a second test subset


def read_json(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def p_value(significance, name):
    """The paired bootstrap p-value of NAME's tokenized BLEU against the baseline ("-" for it)."""
    rows = significance["metrics"]["tok-BLEU"]["rows"]
    p = next(r["p_bs"] for r in rows if r["system"] == name)
    return "-" if p is None else f"{p:.3f}"


def table(out, names):
    """The Markdown table: one row per system, test then test-long columns."""
    out = Path(out)
    significance = {s: read_json(out / f"significance-{s}.json") for s in SUBSETS}
    lines = [HEADER]
    for name in names:
        row = (out / f"row-{name}.txt").read_text(encoding="utf-8").rstrip("\n")
        for subset in SUBSETS:
            scores = read_json(out / "generate" / f"{name}-{subset}" / "scores.json")
            row += (
                f" | {scores['sacrebleu']} | {p_value(significance[subset], name)}"
                f" | {scores['sequence_accuracy']}"
            )
        lines.append(row + " |")
    return "\n".join(lines)


def reading(out, names):
    """One paragraph that holds on every machine: who masters test, who gets test-long right."""
    score = {
        (n, s): read_json(Path(out) / "generate" / f"{n}-{s}" / "scores.json")
        for n in names
        for s in SUBSETS
    }
    acc = {k: float(v["sequence_accuracy"]) for k, v in score.items()}
    bleu = {k: float(v["sacrebleu"]) for k, v in score.items()}
    master = [n for n in names if acc[n, "test"] >= 0.9]
    words = {len(names): "All three", 0: "None of the"}.get(
        len(master), f"Only {' and '.join(master)} of the"
    )
    longest = max(acc[n, "test1"] for n in names)
    return (
        f"Reading: {words} systems master the in-distribution sentences (sequence accuracy >= 0.9;"
        f" test BLEU {min(bleu[n, 'test'] for n in names):.1f}-"
        f"{max(bleu[n, 'test'] for n in names):.1f})"
        f" and {'none' if longest == 0 else 'some'} gets a longer"
        f" sentence right (test-long accuracy <= {longest:.3f}). The p-values"
        " come from one training run per system; float noise between CPUs moves a system by up to"
        " ~2 BLEU at this budget, so a difference between the systems is not a finding of this demo."
    )


def report(out, names):
    return f"{TITLE}\n{table(out, names)}\n\n{reading(out, names)}"


def main(argv=None):
    parser = OneLineParser(
        prog="demo_report", description="Part 1 of scripts/demo.sh as Markdown (module docstring)."
    )
    parser.add_argument("out", help="the demo's output folder")
    parser.add_argument("names", nargs="+", help="the systems, the baseline first")
    args = parser.parse_args(argv)
    print(report(args.out, args.names))


if __name__ == "__main__":
    main()
