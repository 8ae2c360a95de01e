#!/usr/bin/env python3
"""`scripts/experiment.py report nmt|lm` (plugin_tools/experiments/study_report.py): see --help."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # plugin_tools, from any cwd
from plugin_tools.experiments.cli import main  # noqa: E402

sys.exit(main(["--called-as", "study-report.py", "report", *sys.argv[1:]]))
