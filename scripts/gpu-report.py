#!/usr/bin/env python3
"""Write the summary of scripts/gpu-check.sh (PREFIX.json and PREFIX.md); the logic is
plugin_tools/gpu_report.py."""

import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.gpu_report import main

if __name__ == "__main__":
    sys.exit(main())
