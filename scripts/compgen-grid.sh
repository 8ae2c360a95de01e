#!/usr/bin/env bash
# `scripts/experiment.py grid` (studies/grid.py; the plan: grid_plan.py): see --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment grid "$@"
