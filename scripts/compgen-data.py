#!/usr/bin/env python3
"""Write a compositional-generalization task as plain parallel text for fairseq-preprocess
(`--help` for the tasks and options; the generators are plugin_tools/compgen_data.py)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's packages first, not another checkout's install

from plugin_tools.compgen_data import cli  # noqa: E402

if __name__ == "__main__":
    cli()
