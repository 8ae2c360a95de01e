#!/usr/bin/env bash
# `scripts/experiment.py study-nmt` (plugin_tools/experiments/studies.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as study-nmt.sh study-nmt "$@"
