#!/usr/bin/env bash
# `scripts/experiment.py paper-variants` (studies/paper_variants.py): see --help.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
experiment paper-variants "$@"
