#!/usr/bin/env python3
"""Fail fast on an unknown --arch: the run scripts call this before preparing data (fairseq-train
would say so only after it).

  python scripts/check-arch.py ARCH [--model MODEL] [--what WORDS] [--list-prefix PREFIX]

Exit 0 if ARCH is a registered architecture (of MODEL, if given); else one line on stdout naming
the registered ones (of MODEL, or starting with PREFIX) and exit 1.
"""

import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


def main():
    parser = OneLineParser(prog="check-arch.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("arch")
    parser.add_argument(
        "--model", help="the arch must belong to this model (e.g. tagging_transformer)"
    )
    parser.add_argument(
        "--what", default="", help="word before --arch in the message, e.g. tagging"
    )
    parser.add_argument("--list-prefix", default="", help="list registered archs with this prefix")
    args = parser.parse_args()
    try:
        import fairseq_plugins  # noqa: F401  (registers the plugin's archs)
    except Exception as e:
        print(f"importing fairseq_plugins failed: {type(e).__name__}: {e}")
        return 1
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY as registry

    model = registry.get(args.arch)
    if model is not None and args.model in (None, model):
        return 0
    archs = sorted(
        a
        for a, m in registry.items()
        if (args.model is None or m == args.model) and a.startswith(args.list_prefix)
    )
    what = f"{args.what} " if args.what else ""
    print(f"unknown {what}--arch {args.arch} (registered: {' '.join(archs) or 'none'})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
