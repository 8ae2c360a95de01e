#!/usr/bin/env python3
"""Sequence-level accuracy (exact match of the whole output) of fairseq-generate output or of a
plain hypothesis file.

  seq-accuracy.py gen.out                          H-/T- lines of fairseq-generate, any order
  seq-accuracy.py gen.out --ref test.tgt           H- lines against reference lines (id = line)
  seq-accuracy.py hyp.txt --ref test.tgt           plain files, one sequence a line
  ... --categories gen.category --json out.json    per-category accuracy (COGS gen), JSON file

Accuracies are fractions in 0..1. Prints `accuracy A (correct/total)` and, with --categories,
one line per category; exits non-zero with a one-line message on malformed input.
"""

import argparse
import json
import sys
from pathlib import Path

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools import seq_accuracy as sa
from plugin_tools.cli import OneLineParser


def read_lines(path, what):
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {path}: no such file")
    return p.read_text(encoding="utf-8").splitlines()


def main(argv=None):
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("hyp", help="fairseq-generate output, or a plain hypothesis file with --ref")
    ap.add_argument("--ref", help="reference file, line i = example i")
    ap.add_argument("--categories", help="category labels, line i = example i")
    ap.add_argument("--json", help="also write the scores to this JSON file")
    ap.add_argument(
        "--missing-as-wrong",
        action="store_true",
        help="count references without a hypothesis as wrong instead of failing",
    )
    args = ap.parse_args(argv)

    lines = read_lines(args.hyp, "hypothesis file")
    refs_file = read_lines(args.ref, "--ref") if args.ref else None
    if sa.is_generate_output(lines):
        hyps, refs, _ = sa.parse_generate_output(lines)
        if refs_file is not None:
            refs = dict(enumerate(refs_file))
        elif not refs:
            raise ValueError(f"{args.hyp}: no T- lines; pass --ref")
        hyps, refs = sa.align(hyps, refs, args.missing_as_wrong)
    else:
        if refs_file is None:
            raise ValueError(f"{args.hyp}: not fairseq-generate output; pass --ref REF")
        hyps, refs = lines, refs_file
    cats = read_lines(args.categories, "--categories") if args.categories else None
    result = sa.score(hyps, refs, cats)

    print(f"accuracy {result['accuracy']:.4f} ({result['correct']}/{result['total']})")
    for cat, c in result.get("categories", {}).items():
        print(f"  {cat}\t{c['accuracy']:.4f}\t({c['correct']}/{c['total']})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:
        sys.exit(f"seq-accuracy: {e}")
