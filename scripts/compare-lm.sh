#!/usr/bin/env bash
# Train and evaluate language models on the same data and token budget: one markdown report.
# A wrapper of `scripts/experiment.py compare-lm` (studies/lm_compare.py): see
# --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment compare-lm "$@"
