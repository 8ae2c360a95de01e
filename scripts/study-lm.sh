#!/usr/bin/env bash
# `scripts/experiment.py study-lm` (plugin_tools/experiments/studies.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as study-lm.sh study-lm "$@"
