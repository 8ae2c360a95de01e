#!/usr/bin/env python3
"""Convert COGS tsv files into the sequence-tagging files of Ontañón et al. (2022), or check the
round trip logical form -> five tag rows -> logical form.

Rules: plugin_tools/cogs_tags.py (the authors' generator, docs/official-code.md
O1). Each INPUT is PATH or SPLIT=PATH (a COGS tsv: sentence, logical form, distribution;
`.gz` is read as gzip); the split name defaults to the file name without `.tsv`/`.gz`. With no
INPUT: train, valid (dev.tsv), test and gen (gen.tsv.gz or gen.tsv) of --raw-dir.

Written for each split into OUTDIR, one line per example, aligned token by token with SPLIT.src:
  SPLIT.src       the sentence tokens
  SPLIT.parent    the parent of each token: --parent absolute (parent index, -1 for none) or
                  relative (offset parent - index, 0 for none). For the attention parent head use
                  the absolute files: its target is the parent's index (the official code points a
                  token with no parent to itself, i.e. class index+1; that mapping is the model's).
  SPLIT.role      agent theme recipient ccomp xcomp PREP PP_NOUN, or `_` (the empty tag)
  SPLIT.cat       CNOUN PNOUN VERB or `_`
  SPLIT.det       DEF INDEF or `_` (the noun determiner, the official `noun_type`)
  SPLIT.verb      the verb lemma or `_`
  SPLIT.lf        the COGS logical form (the target of the LF-level metric)
  SPLIT.category  the third column (distribution, or the generalization case of gen)
and meta.json (parent encoding, example counts, the longest sentence L).

Primitive examples (one token, distribution `primitive`, 143 in train) are tagged as the official
generator tags them, but no logical form can be rebuilt from their tags (no variable, no verb
frame); --check counts them apart. Any other example that does not fit is an error (file:line).

--check writes nothing: it prints, for each input, examples / exact round trips / primitives /
failures (with the first few reasons), and exits 1 if any non-primitive example failed.
"""

import argparse
import json
import sys
from pathlib import Path

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools import cogs_tags as ct
from plugin_tools import corpora
from plugin_tools.cli import OneLineParser


class CliError(Exception):
    """Printed as one line."""


def parse_args(argv):
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", metavar="INPUT", help="PATH or SPLIT=PATH (COGS tsv)")
    p.add_argument("--outdir", type=Path, help="where the tagging files go")
    p.add_argument(
        "--parent",
        choices=("absolute", "relative"),
        default="absolute",
        help="parent encoding of SPLIT.parent (default absolute)",
    )
    p.add_argument(
        "--raw-dir",
        type=Path,
        help="COGS files when no INPUT (default: the COGS corpus where plugin_tools.corpora finds "
        "it: $FAIRSEQ_PLUGINS_DATA/cogs, ../shared/data/cogs or ./corpora/cogs)",
    )
    p.add_argument("--check", action="store_true", help="report the round trip, write nothing")
    return p.parse_args(argv)


def resolve_inputs(args):
    if args.inputs:
        out = []
        for item in args.inputs:
            name, sep, path = item.partition("=")
            if not sep:
                path = item
                name = Path(item).name.removesuffix(".gz").removesuffix(".tsv")
            if not name or "/" in name:
                raise CliError(f"bad INPUT {item!r}: expected PATH or SPLIT=PATH")
            out.append((name, Path(path)))
    else:
        raw = args.raw_dir or corpora.find("cogs")
        if raw is None:
            raise CliError(f"{corpora.missing_message(['cogs'])}; or pass --raw-dir DIR")
        if not raw.is_dir():
            raise CliError(f"--raw-dir {raw}: not a directory")
        gen = raw / "gen.tsv.gz" if (raw / "gen.tsv.gz").is_file() else raw / "gen.tsv"
        out = [
            ("train", raw / "train.tsv"),
            ("valid", raw / "dev.tsv"),
            ("test", raw / "test.tsv"),
            ("gen", gen),
        ]
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise CliError(f"two inputs share a split name ({', '.join(names)}); use SPLIT=PATH")
    for _, path in out:
        if not path.is_file():
            raise CliError(f"{path}: no such file")
    return out


def check(inputs):
    bad = 0
    for name, path in inputs:
        r = ct.round_trip(path)
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["primitive_kinds"].items()))
        print(
            f"{name} ({path}): {r['total']} examples, {r['exact']} exact round trips, "
            f"{r['primitive']} primitive (tagged, not rebuildable{': ' + kinds if kinds else ''}), "
            f"{len(r['failed'])} failed"
        )
        for line, why in r["failed"][:5]:
            print(f"  {path}:{line}: {why}")
        bad += len(r["failed"])
    return 1 if bad else 0


def convert(inputs, outdir, parent_kind):
    outdir.mkdir(parents=True, exist_ok=True)
    meta = {"parent": parent_kind, "empty_tag": ct.FILE_NONE, "splits": {}, "primitive": {}}
    longest = 0
    for name, path in inputs:
        rows = {k: [] for k in ("src", *ct.FILE_SUFFIX.values(), "lf", "category")}
        n_prim = 0
        for line, sentence, lf, dist in ct.read_tsv(path):
            try:
                tags = ct.lf_to_tags(sentence, lf, dist)
            except ct.TagError as e:
                raise CliError(f"{path}:{line}: {e}") from None
            n_prim += dist == "primitive"
            longest = max(longest, len(tags.parent))
            for row, values in ct.tags_to_strings(tags, parent_kind).items():
                rows[ct.FILE_SUFFIX[row]].append(" ".join(values))
            rows["src"].append(sentence)
            rows["lf"].append(lf)
            rows["category"].append(dist)
        for suffix, lines in rows.items():
            (outdir / f"{name}.{suffix}").write_text("".join(x + "\n" for x in lines))
        meta["splits"][name] = len(rows["src"])
        meta["primitive"][name] = n_prim
    meta["longest"] = longest
    (outdir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    sizes = ", ".join(f"{k} {v}" for k, v in meta["splits"].items())
    print(f"cogs-tags: -> {outdir} ({sizes}; parent {parent_kind})", file=sys.stderr)


def main(argv=None):
    args = parse_args(argv)
    inputs = resolve_inputs(args)
    if args.check:
        return check(inputs)
    if args.outdir is None:
        raise CliError("--outdir is required (or --check)")
    convert(inputs, args.outdir, args.parent)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (CliError, ct.TagError) as e:
        sys.exit(f"cogs-tags: {e}")
    except OSError as e:
        sys.exit(f"cogs-tags: {e.filename or ''}: {e.strerror or e}")
