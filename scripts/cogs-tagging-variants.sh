#!/usr/bin/env bash
# `scripts/experiment.py tagging-variants` (plugin_tools/experiments/tagging_variants.py): see --help.
exec python3 "$(dirname "$0")/experiment.py" --called-as cogs-tagging-variants.sh tagging-variants "$@"
