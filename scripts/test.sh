#!/usr/bin/env bash
# Run lint (ruff) and the whole test suite; sets up ./.venv on first use.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/test.sh [--fast] [PYTEST_ARGS...]

Sets up ./.venv on first use (scripts/setup.sh), runs `ruff check` and `ruff format --check`,
then pytest over tests/ (unit tests and end-to-end runs through fairseq's command-line tools) in
one worker per core, up to 4 (pytest-xdist; TEST_WORKERS=N sets N, 0 runs them in this process),
and prints the 10 slowest tests. Extra arguments go to pytest, e.g. `bash scripts/test.sh -k
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
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# one pytest worker per core, up to 4: a test's fairseq subprocesses run one thread each
workers=${TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) : 4 ))}
[[ $workers =~ ^[0-9]+$ ]] || die "TEST_WORKERS=$workers: needs a number (0: no workers)"
pytest_args=(--durations=10)
[[ $workers -ge 2 ]] && pytest_args+=(-n "$workers")
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --fast) pytest_args+=(-m "not slow"); shift ;;
    *) pytest_args+=("$1"); shift ;;  # pytest's own options: pytest reports a wrong one
  esac
done

cd "$root"
bash scripts/setup.sh
use_venv
# Tiny models in the tests: one thread per process is as fast, and torch's spinning OpenMP
# threads slow down ~10x when a fairseq subprocess and its data loader share 2 cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
log "ruff check"
ruff check .
ruff format --check .
if ! tool corpora --prog "$prog" check 2>/dev/null; then
  log "fetching the corpora (scripts/get-corpora.sh)"
  bash scripts/get-corpora.sh \
    || log "some corpora could not be fetched; the tests that need them are skipped"
fi
log pytest
py -m pytest -q "${pytest_args[@]}"
