#!/usr/bin/env python3
"""`scripts/experiment.py report nmt|lm` (plugin_tools/experiments/study_report.py): see --help."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # plugin_tools, from any cwd
from plugin_tools.experiments import runs, study_report  # noqa: E402

sys.exit(runs.main_of("study-report.py", study_report.main, sys.argv[1:]))
