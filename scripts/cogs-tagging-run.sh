#!/usr/bin/env bash
# `scripts/experiment.py cogs-tagging-run` (studies/cogs_tagging_run.py): see --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment cogs-tagging-run "$@"
