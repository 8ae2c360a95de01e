#!/usr/bin/env python3
"""The experiment drivers (compgen-run, cogs-tagging-run, grid, tagging-variants, report): see
plugin_tools/experiments and `scripts/experiment.py --help`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # plugin_tools, from any cwd

from plugin_tools.experiments.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
