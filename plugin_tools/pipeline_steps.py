"""The pure-Python steps of the shell pipelines (scripts/generate.sh, scripts/prepare-wikitext.sh).

  check-reference DATA SUBSET LANG REF   REF has as many lines as SUBSET of the binarised DATA has
                                         sentences in LANG (before decoding, so that a wrong
                                         reference fails in a second, not after the beam search);
                                         data in another format than fairseq's mmap is not checked
  download URL FILE                      URL into FILE (the fallback without curl and wget)

Errors: one line "PROG: message" on stderr, exit status 2 (usage errors as plugin_tools.cli says);
--prog NAME first: the calling script's name for PROG.

    python -m plugin_tools.pipeline_steps --prog generate.sh check-reference DATA test en REF
"""

import struct
import sys
import urllib.request
from pathlib import Path

from plugin_tools.cli import OneLineParser, called_as

MMAP_MAGIC = b"MMIDIDX\x00\x00"  # fairseq's MMapIndexedDataset index header


def indexed_sentences(idx):
    """Number of sentences in a fairseq mmap index file, None for another format."""
    with open(idx, "rb") as f:
        head = f.read(26)
    if head[:9] != MMAP_MAGIC:  # magic, version <Q, dtype code <B, then the count <Q
        return None
    return struct.unpack("<Q", head[18:26])[0]


def count_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def reference_mismatch(data, subset, lang, ref):
    """A one-line message when REF's line count differs from the subset's size, else None."""
    for idx in sorted(Path(data).glob(f"{subset}.*-*.{lang}.idx")):
        n = indexed_sentences(idx)
        if n is None:
            return None
        lines = count_lines(ref)
        if lines != n:
            return (
                f"--ref '{ref}' has {lines} lines, but subset '{subset}' of {data} has "
                f"{n} sentences"
            )
        return None
    return None


def main(argv=None):
    prog, argv = called_as(sys.argv[1:] if argv is None else argv, "pipeline_steps")
    parser = OneLineParser(prog=prog, description="The shell pipelines' Python steps (docstring).")
    sub = parser.add_subparsers(dest="step", required=True)
    s = sub.add_parser("check-reference", prog=prog)
    for name in ("data", "subset", "lang", "ref"):
        s.add_argument(name)
    s = sub.add_parser("download", prog=prog)
    s.add_argument("url")
    s.add_argument("file")
    args = parser.parse_args(argv)
    if args.step == "check-reference":
        message = reference_mismatch(args.data, args.subset, args.lang, args.ref)
    else:
        try:
            urllib.request.urlretrieve(args.url, args.file)
            message = None
        except OSError as e:
            message = f"download of {args.url} failed ({e})"
    if message:  # bad input, not a usage error: the message alone
        print(f"{prog}: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
