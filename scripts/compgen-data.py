#!/usr/bin/env python3
"""Write a compositional-generalization task as plain parallel text for fairseq-preprocess
(`--help` for the tasks and options; the generators are plugin_tools/compgen_data.py)."""

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.compgen_data import cli

if __name__ == "__main__":
    cli()
