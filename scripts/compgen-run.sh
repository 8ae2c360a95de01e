#!/usr/bin/env bash
# `scripts/experiment.py compgen-run` (studies/compgen_run.py): see --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment compgen-run "$@"
