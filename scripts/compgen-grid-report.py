#!/usr/bin/env python3
"""`scripts/experiment.py report compgen` (studies/grid_report.py): see --help."""

import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from studies import grid_report, runs

sys.exit(runs.main_of("compgen-grid-report.py", grid_report.main, sys.argv[1:]))
