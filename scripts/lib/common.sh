# The library every shell script of scripts/ sources (benchmarks/train.sh and .ci/run too): one
# option-parsing idiom, one-line errors, logging, the venv, and the Python helpers the scripts run.
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
# (plugin_tools/experiments), which parses its options (one-line errors) and does the work;
# `--prog "$0"` names the script in its help and messages (and records how it was invoked)
experiment() {
  local python
  python=$(python_cmd)
  exec "$python" "$root/scripts/experiment.py" --prog "$0" "$@"
}

# cuda_devices: how many CUDA devices torch sees (0 without torch, CUDA or a driver)
cuda_devices() { py "$root/scripts/torch-info.py" cuda-devices 2>/dev/null || echo 0; }

# ------------------------------------------------- compare-lm.sh and compare-nmt.sh: options
# What the two comparison scripts share, below. Each *_option function takes the remaining
# arguments, handles the first one (and its value) and sets `taken` to how many arguments it used;
# the caller then runs `shift "$taken"`.

# output_option ARGS...: the output options of compare-lm.sh and compare-nmt.sh (--help, --out,
# --doc, --smoke); any other argument dies as an unknown option
output_option() {
  taken=2
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) need_value "$@"; out=$2 ;;
    --doc) need_value "$@"; doc=$2 ;;
    --smoke) smoke=1; taken=1 ;;
    *) unknown_option "$1" ;;
  esac
}

# compare_option ARGS...: the options of compare-lm.sh and compare-nmt.sh (output_option's, --data,
# --train-args, --tensorboard, --skip-train) and a CONFIG
compare_option() {
  taken=2
  case "$1" in
    --data) need_value "$@"; data_override=$2 ;;
    --train-args) [[ $# -ge 2 ]] || die_usage "--train-args needs a value"; extra_str=$2 ;;  # may be ""
    --tensorboard) tensorboard=1; taken=1 ;;
    --skip-train) skip_train=1; taken=1 ;;
    -*) output_option "$@" ;;
    *) configs+=("$1"); taken=1 ;;
  esac
}

# compare_options_done: at least one CONFIG (else a one-line usage error); `extra`, the words of
# --train-args
compare_options_done() {
  [[ ${#configs[@]} -ge 1 ]] || die_usage "needs at least one CONFIG"
  extra=()
  if [[ -n $extra_str ]]; then read -r -a extra <<<"$extra_str"; fi
}

# --------------------------------------------- compare-lm.sh and compare-nmt.sh: the steps

# check_configs: load_config (the script's) of every CONFIG before any training; `names`, their
# NAMEs, each used once
check_configs() {
  local cfg n
  names=()
  for cfg in "${configs[@]}"; do
    load_config "$cfg"
    for n in ${names[@]+"${names[@]}"}; do [[ $n == "$NAME" ]] && die "$cfg: NAME '$NAME' used twice"; done
    names+=("$NAME")
  done
}

# write_invocation FILE: OUT created, the command line (`invocation`) shell-quoted into OUT/FILE
write_invocation() {
  mkdir -p "$out"
  printf '%q ' "${invocation[@]}" > "$out/$1"; echo >> "$out/$1"
}

# training_starts TAG DIR CKPT: say that TAG's training starts, or resumes from
# CKPT/checkpoint_last.pt, on stderr and in DIR/train.log
training_starts() {
  local what=training
  [[ -f $3/checkpoint_last.pt ]] && what="resuming from checkpoint_last.pt"
  echo "$prog: [$1] $what ($ARCH) -> $2/train.log" >&2
  echo "$prog: $what at $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$2/train.log"
}

# training_done TAG DIR CKPT: DIR/train.seconds = the wall and CPU seconds of every attempt
# (DIR/wall.pieces and DIR/cpu.pieces, written by `scripts/experiment.py timed DIR -- ...`,
# interrupted and killed attempts included), then DIR/train.done once CKPT/checkpoint_best.pt is
# there
training_done() {
  local dir=$2 ckpt=$3
  awk 'FNR == 1 {f++} {s[f] += $1} END {printf "%.0f %.0f\n", s[1], s[2]}' \
    "$dir/wall.pieces" "$dir/cpu.pieces" > "$dir/train.seconds"
  [[ -f $ckpt/checkpoint_best.pt ]] || die "[$1] no $ckpt/checkpoint_best.pt after training"
  touch "$dir/train.done"
}

# log_params LOG: the model's parameter count in a fairseq-train log, else -
log_params() {
  grep -oE 'num\. (shared )?model params: [0-9,]+' "$1" | head -n 1 | grep -oE '[0-9,]+$' || echo -
}

# log_wps LOG: words (tokens) per second of the training epochs in a fairseq-train log, averaged
log_wps() {
  grep -E '\| train \| epoch' "$1" | grep -oE '\| wps [0-9.]+' | awk '{s += $3; n++} END {if (n) printf "%.0f", s / n; else print "-"}'
}

# plot_curves METRIC N LOG... LABEL...: scripts/plot-curves.py of METRIC over the N logs, with
# their N labels, into OUT/curves.png; `curves` is curves.png when it was written
plot_curves() {
  local metric=$1 n=$2; shift 2
  if py "$root/scripts/plot-curves.py" "${@:1:n}" --labels "${@:n+1}" --metric "$metric" \
      --out "$out/curves.png" >&2; then
    curves=curves.png
  fi
}

# report_heading TITLE TEXT: the top of REPORT.md, its second paragraph starting with who wrote
# it when, followed by TEXT
report_heading() {
  echo "# $1"
  echo
  echo "Written by \`scripts/$prog\` on $(date -u '+%Y-%m-%d %H:%M UTC'). $2"
}

# report_commands: REPORT.md's "Commands" heading and the invocation (OUT/invocation.txt)
report_commands() {
  echo "## Commands"
  echo
  echo '```'
  cat "$out/invocation.txt"
  echo '```'
}

# report_run_commands HEADING FILE: one run's commands (FILE) under a heading
report_run_commands() {
  echo
  echo "### $1"
  echo
  echo '```'
  cat "$2"
  echo '```'
}

# report_done KIND: say that OUT/REPORT.md is written; with --doc, the results document of
# scripts/study-report.py KIND (labelled a smoke run with --smoke)
report_done() {
  echo "$prog: wrote $out/REPORT.md" >&2
  [[ -n $doc ]] || return 0
  local smoke_flag=()
  [[ $smoke == 1 ]] && smoke_flag=(--smoke)
  py "$root/scripts/study-report.py" "$1" "$out" --doc "$doc" ${smoke_flag[@]+"${smoke_flag[@]}"} \
    || die "could not write $doc (scripts/study-report.py $1 failed)"
  echo "$prog: wrote $doc" >&2
}
