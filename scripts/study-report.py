#!/usr/bin/env python3
"""`scripts/experiment.py report nmt|lm` (studies/study_report.py): see --help."""

import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from studies import runs, study_report

sys.exit(runs.main_of("study-report.py", study_report.main, sys.argv[1:]))
