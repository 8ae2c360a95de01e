#!/usr/bin/env bash
# Create ./.venv with torch, fairseq (ve-fairseq wheel) and the plugin. Idempotent.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/setup.sh [--force]

Creates ./.venv (Python 3.11) and installs, idempotently:
  torch==2.13.0 (override with TORCH_SPEC, e.g. TORCH_SPEC="torch==2.13.0 --index-url <cuda index>"),
  the pinned requirements.txt, fairseq as ve-fairseq==0.12.3 with --no-deps (its torchaudio
  requirement would pull a second multi-GB torch; fairseq's translation and LM code never import it),
  and this plugin in editable mode; then the test-only reference packages of
  requirements-test.txt with --no-deps (they must not replace torch; their small pure-Python
  dependencies are pinned there one by one).
  --force   reinstall even if the stamp file says the venv is up to date.
Environment: PYTHON (default python3.11 or python3), VENV (default ./.venv).
USAGE
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

force=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --force) force=1; shift ;;
    *) unknown_option "$1" ;;
  esac
done

venv=${VENV:-$root/.venv}
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
torch_spec=${TORCH_SPEC:-torch==2.13.0}
stamp=$venv/.setup-stamp
want=$(cat "$root/requirements.txt" "$root/requirements-test.txt" "$root/setup.py" "$0" | sha1sum | cut -c1-16)-$torch_spec

if [[ $force == 0 && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi

[[ $("$python" -V 2>&1) =~ ^Python\ 3\.([0-9]+) ]] && (( BASH_REMATCH[1] >= 10 )) \
  || fail "Python >= 3.10 is required (PYTHON=$python)"

log "creating $venv"
[[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
# shellcheck disable=SC2086
"${pip[@]}" $torch_spec
"${pip[@]}" -r "$root/requirements.txt"
"${pip[@]}" --no-deps ve-fairseq==0.12.3
"${pip[@]}" --no-deps --no-build-isolation -e "$root"
"${pip[@]}" --no-deps -r "$root/requirements-test.txt"
log "$("$venv/bin/python" "$root/scripts/torch-info.py" versions)"
echo "$want" > "$stamp"
