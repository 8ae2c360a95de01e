#!/usr/bin/env python3
"""Plot validation curves from fairseq-train logs (`--help` for the usage); the log parsing and
the plot are plugin_tools/plot_curves.py."""

import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.plot_curves import main

if __name__ == "__main__":
    sys.exit(main())
