#!/usr/bin/env bash
# `scripts/experiment.py study-lm` (studies/studies.py): see --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment study-lm "$@"
