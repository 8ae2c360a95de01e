#!/usr/bin/env python3
"""The experiment drivers (compgen-run, cogs-tagging-run, grid, paper-variants, report): see
studies and `scripts/experiment.py --help`."""

import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from studies.cli import main

if __name__ == "__main__":
    sys.exit(main())
