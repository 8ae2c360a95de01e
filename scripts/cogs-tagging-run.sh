#!/usr/bin/env bash
# `scripts/experiment.py cogs-tagging-run` (plugin_tools/experiments/cogs_tagging_run.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as cogs-tagging-run.sh cogs-tagging-run "$@"
