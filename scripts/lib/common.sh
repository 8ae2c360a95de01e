# The library every shell script of scripts/ sources (benchmarks/train.sh and .ci/run too): one
# option-parsing idiom, one-line errors, logging, the venv, and the Python helpers the scripts run.
# The scripts are leaves: the experiments (runs, locks, resume, reports) are Python
# (studies), which the driver scripts only wrap (`experiment`).
#
#   usage() { cat <<'USAGE' ... USAGE; }       # the script's --help text, starting "Usage:"
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
#
# Sourcing sets `prog` (the script's file name in messages, unless the script set it first) and
# `root` (the checkout), and puts root/.venv/bin first on PATH when that exists. The idiom, the
# same in every script (usage errors: one line on stderr, exit status 2):
#
#   while [[ $# -gt 0 ]]; do
#     case "$1" in
#       -h|--help) usage; exit 0 ;;
#       --beam) need_value "$@"; beam=$2; shift 2 ;;
#       --updates) need_positive_int "$@"; updates=$2; shift 2 ;;
#       --cpu) cpu=1; shift ;;
#       --) shift; extra+=("$@"); break ;;
#       -*) unknown_option "$1" ;;
#       *) pos+=("$1"); shift ;;
#     esac
#   done
#   [[ ${#pos[@]} -eq 2 ]] || die_usage "needs DATA_BIN and SAVE_DIR"

prog=${prog:-$(basename "$0")}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# ------------------------------------------------------------------------------------ messages

# die MESSAGE...: one line "PROG: MESSAGE" on stderr, exit status 2 (bad input: a value, a file)
die() { echo "$prog: $*" >&2; exit 2; }

# die_usage MESSAGE...: a command-line mistake: one line "PROG: MESSAGE (see --help)", exit 2
die_usage() { die "$* (see --help)"; }

# fail MESSAGE...: a step failed at run time: one line "PROG: MESSAGE" on stderr, exit status 1
fail() { echo "$prog: $*" >&2; exit 1; }

# log MESSAGE...: one line "PROG: MESSAGE" on stderr (progress, what runs)
log() { echo "$prog: $*" >&2; }

# --------------------------------------------------------------------------- option values
# Each takes the option and what follows it ("$@" at the option): the option needs a value.

# need_value OPTION [VALUE ...]: a value follows OPTION and is not empty
need_value() { [[ $# -ge 2 && -n $2 ]] || die_usage "$1 needs a value"; }

# need_positive_int OPTION [VALUE ...]: the value is an integer >= 1
need_positive_int() {
  need_value "$@"
  [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer (got '$2')"
}

# need_nonnegative_int OPTION [VALUE ...]: the value is an integer >= 0
need_nonnegative_int() {
  need_value "$@"
  [[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer (got '$2')"
}

# unknown_option OPTION: the one-line error for an option the script does not know
unknown_option() { die_usage "unknown option '$1'"; }

# wants_help ARGS...: -h or --help is among ARGS (before any `--`). For the scripts that hand
# their options to a Python program (which parses them, with one-line errors): the shell's usage.
wants_help() {
  local arg
  for arg in "$@"; do
    case "$arg" in
      --) return 1 ;;
      -h|--help) return 0 ;;
    esac
  done
  return 1
}

# ---------------------------------------------------------------------------- environment

# use_venv: root/.venv/bin first on PATH, when the venv exists (again after setup.sh made it)
use_venv() {
  if [[ -d $root/.venv/bin && :$PATH: != *":$root/.venv/bin:"* ]]; then
    export PATH=$root/.venv/bin:$PATH
  fi
}
use_venv

# python_cmd: the Python that runs every Python program of the scripts (the venv's, first on PATH
# after use_venv, else python3); `py` runs one with it. (The Python side uses sys.executable.)
python_cmd() { command -v python || command -v python3 || fail "no python on PATH (run bash scripts/setup.sh)"; }

# py ARGS...: python_cmd's Python with ARGS
py() {
  local python
  python=$(python_cmd)
  "$python" "$@"
}

# tool MODULE ARGS...: the pure-Python helper plugin_tools.MODULE of this checkout (no torch or
# fairseq needed, so it also runs without the venv)
tool() {
  local module=$1 python
  shift
  python=$(python_cmd)
  PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH} "$python" -m "plugin_tools.$module" "$@"
}

# experiment SUBCOMMAND ARGS...: the script is a wrapper of `scripts/experiment.py SUBCOMMAND`
# (studies), which parses its options (one-line errors) and does the work;
# `--prog "$0"` names the script in its help and messages (and records how it was invoked)
experiment() {
  local python
  python=$(python_cmd)
  exec "$python" "$root/scripts/experiment.py" --prog "$0" "$@"
}

# cuda_devices: how many CUDA devices torch sees (0 without torch, CUDA or a driver)
cuda_devices() { py "$root/scripts/torch-info.py" cuda-devices 2>/dev/null || echo 0; }
