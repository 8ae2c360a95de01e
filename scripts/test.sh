#!/usr/bin/env bash
# Run lint (ruff) and the whole test suite; sets up ./.venv on first use.
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  cat <<'USAGE'
Usage: bash scripts/test.sh [PYTEST_ARGS...]

Sets up ./.venv on first use (scripts/setup.sh), runs `ruff check` and `ruff format --check`,
then pytest over tests/ (unit tests and end-to-end runs through fairseq's command-line tools).
Extra arguments go to pytest, e.g. `bash scripts/test.sh -k compositional -x`.
USAGE
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
export PATH=$root/.venv/bin:$PATH
# Tiny models in the tests: one thread per process is as fast, and torch's spinning OpenMP
# threads slow down ~10x when a fairseq subprocess and its data loader share 2 cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
echo "test.sh: ruff check" >&2
ruff check .
ruff format --check .
echo "test.sh: pytest" >&2
python -m pytest -q "$@"
