#!/usr/bin/env bash
# Train, decode and compare NMT systems: one markdown report with paired significance tests.
# A wrapper of `scripts/experiment.py compare-nmt` (studies/nmt_compare.py: the
# runs, their locks, resume and archive, the report): see --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment compare-nmt "$@"
