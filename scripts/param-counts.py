#!/usr/bin/env python3
"""Parameter counts of registered architectures (any --arch plus extra flags), built in-process.

  python scripts/param-counts.py "transformer_iwslt_de_en" \
      "compositional_transformer_iwslt_de_en" "graph_transformer_iwslt_de_en --graph-half-dim"

Counts unique parameters (shared layers count once), with source/target vocabularies of
--src-vocab / --tgt-vocab entries (default: IWSLT'14 De-En's 8848 / 6632). Prints a markdown table,
or with --json one JSON object per architecture (what the LM study archives and its report reads).
"""

import argparse
import json
import shlex
import sys
from types import SimpleNamespace

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


def build(arch_and_flags, src_vocab, tgt_vocab, lm):
    from fairseq import options
    from fairseq.data import Dictionary
    from fairseq.models import build_model

    import fairseq_plugins  # noqa: F401

    def dictionary(n):
        d = Dictionary()
        for i in range(n - len(d)):
            d.add_symbol(f"w{i}")
        return d

    src = dictionary(src_vocab)
    tgt = src if lm or src_vocab == tgt_vocab else dictionary(tgt_vocab)
    task = "language_modeling" if lm else "translation"
    parser = options.get_training_parser(default_task=task)

    def one_line_error(message):  # not fairseq's 170-line usage
        sys.exit(f"param-counts: error: {arch_and_flags.split()[0]}: {message}")

    parser.error = one_line_error
    argv = ["/nonexistent", "--task", task, "--arch"] + shlex.split(arch_and_flags)
    args = options.parse_args_and_arch(parser, argv)
    return build_model(args, SimpleNamespace(source_dictionary=src, target_dictionary=tgt))


def main():
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("archs", nargs="+", help='"ARCH [flags]", one per argument')
    p.add_argument("--src-vocab", type=int, default=8848)
    p.add_argument("--tgt-vocab", type=int, default=6632)
    p.add_argument(
        "--lm", action="store_true", help="language-model archs (task language_modeling)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="a JSON list of {arch_and_flags, parameters, encoder} instead of the table",
    )
    args = p.parse_args()
    rows = []
    for spec in args.archs:
        model = build(spec, args.src_vocab, args.tgt_vocab, args.lm)
        total = sum(p.numel() for p in model.parameters())
        encoder = (
            sum(p.numel() for p in model.encoder.parameters()) if hasattr(model, "encoder") else 0
        )
        rows.append((spec, total, encoder))
    if args.json:
        keys = ("arch_and_flags", "parameters", "encoder")
        print(json.dumps([dict(zip(keys, row)) for row in rows], indent=1))
        return
    base = rows[0][1]
    print("| architecture | parameters | encoder | vs first |")
    print("|---|---|---|---|")
    for spec, total, encoder in rows:
        print(f"| `{spec}` | {total:,} | {encoder:,} | {total / base:.3f}x |")


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:  # the plugin's option errors (PluginConfigError) name the flag
        sys.exit(f"param-counts: error: {' '.join(str(e).split())}")
