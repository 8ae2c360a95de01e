#!/usr/bin/env bash
# `scripts/experiment.py compgen-run` (plugin_tools/experiments/compgen_run.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as compgen-run.sh compgen-run "$@"
