#!/usr/bin/env python3
"""`scripts/experiment.py report compgen` (plugin_tools/experiments/grid_report.py): see --help."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # plugin_tools, from any cwd
from plugin_tools.experiments import grid_report, runs  # noqa: E402

sys.exit(runs.main_of("compgen-grid-report.py", grid_report.main, sys.argv[1:]))
