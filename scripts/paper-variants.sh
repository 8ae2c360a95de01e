#!/usr/bin/env bash
# `scripts/experiment.py paper-variants` (plugin_tools/experiments/paper_variants.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as paper-variants.sh paper-variants "$@"
