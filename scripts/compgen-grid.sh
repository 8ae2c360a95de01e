#!/usr/bin/env bash
# `scripts/experiment.py grid` (plugin_tools/experiments/grid.py; the plan: grid_plan.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as compgen-grid.sh grid "$@"
