#!/usr/bin/env bash
# Run lint (ruff) and the whole test suite; sets up ./.venv on first use.
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  cat <<'USAGE'
Usage: bash scripts/test.sh [--fast] [PYTEST_ARGS...]

Sets up ./.venv on first use (scripts/setup.sh), runs `ruff check` and `ruff format --check`,
then pytest over tests/ (unit tests and end-to-end runs through fairseq's command-line tools) and
prints the 10 slowest tests. Extra arguments go to pytest, e.g. `bash scripts/test.sh -k
compositional -x`.

  --fast   everything but the tests marked slow (those that run fairseq-train, fairseq-generate
           or another of fairseq's command-line tools; a test not so marked that starts one
           fails), lint included: a few minutes on 2 cores. Equivalent: pytest -m "not slow".

The real corpora (Multi30k, WikiText-2, SCAN, COGS) are looked for in $FAIRSEQ_PLUGINS_DATA,
../shared/data, then ./corpora; when absent, scripts/get-corpora.sh fetches them into ./corpora.
If that cannot be done (offline), the tests that need them are skipped under one summary line;
with FAIRSEQ_PLUGINS_REQUIRE_CORPORA=1 (set by .ci/run) they fail instead. Tests marked cuda
are skipped under one summary line without a CUDA device (scripts/gpu-check.sh runs them).
USAGE
  exit 0
fi

pytest_args=(--durations=10)
for arg in "$@"; do
  if [[ $arg == --fast ]]; then pytest_args+=(-m "not slow"); else pytest_args+=("$arg"); fi
done

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
if ! python3 plugin_tools/corpora.py --prog test.sh check 2>/dev/null; then
  echo "test.sh: fetching the corpora (scripts/get-corpora.sh)" >&2
  bash scripts/get-corpora.sh \
    || echo "test.sh: some corpora could not be fetched; the tests that need them are skipped" >&2
fi
echo "test.sh: pytest" >&2
python -m pytest -q "${pytest_args[@]}"
