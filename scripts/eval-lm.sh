#!/usr/bin/env bash
# Perplexity of a language-model checkpoint with fairseq-eval-lm; last line "ppl: X".
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/eval-lm.sh CHECKPOINT DATA_BIN [--context-window 400] [--subset test]
                          [--batch-size 8] [--tokens-per-sample N] [-- extra fairseq-eval-lm args]

Runs fairseq-eval-lm --user-dir fairseq_plugins on DATA_BIN's SUBSET. Each block scores
tokens-per-sample - context-window new tokens, each with at least context-window tokens of
left context (the paper: tokens-per-sample 512, context window 400). --tokens-per-sample defaults
to the value the checkpoint was trained with; the context window must be smaller than it
(--context-window 0 disables it). fairseq's log goes to stderr; stdout ends with
  loss: L   (base 2, per token)
  ppl: X
USAGE
}

die() { echo "eval-lm.sh: $*" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH
user_dir=${FAIRSEQ_USER_DIR:-$root/fairseq_plugins}  # --user-dir; FAIRSEQ_USER_DIR overrides

pos=() extra=() cw=400 subset=test bsz=8 tps=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --context-window) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--context-window needs a non-negative integer"; cw=$2; shift 2 ;;
    --subset) [[ -n ${2:-} ]] || die "--subset needs a value"; subset=$2; shift 2 ;;
    --batch-size) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--batch-size needs a positive integer"; bsz=$2; shift 2 ;;
    --tokens-per-sample) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--tokens-per-sample needs a positive integer"; tps=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[[ ${#pos[@]} -eq 2 ]] || { usage >&2; exit 2; }
ckpt=${pos[0]} data=${pos[1]}
[[ -d $user_dir ]] || die "FAIRSEQ_USER_DIR '$user_dir' is not a directory (the --user-dir of fairseq_plugins)"
[[ -f $ckpt ]] || die "$ckpt: no such checkpoint"
[[ -f $data/dict.txt ]] || die "$data: no dict.txt (not a fairseq-preprocess'd folder)"
[[ -f $data/$subset.idx ]] || die "$data: no '$subset' subset ($data/$subset.idx missing)"
command -v fairseq-eval-lm >/dev/null || die "fairseq-eval-lm not on PATH (run scripts/setup.sh)"

if [[ -z $tps ]]; then
  # the training value (fairseq-eval-lm itself would default to 1024)
  tps_err=$(mktemp)
  tps=$(PYTHONPATH=$(dirname "$user_dir")${PYTHONPATH:+:$PYTHONPATH} python - "$ckpt" <<'PY' 2>"$tps_err"
import sys

import fairseq_plugins  # noqa: F401  (safe globals for weights_only loading)
from fairseq import checkpoint_utils
from plugin_tools.errors import PREFIX, PluginError

try:
    state = checkpoint_utils.load_checkpoint_to_cpu(sys.argv[1])
except PluginError as e:
    sys.exit(f"{PREFIX} {' '.join(str(e).split())}")
cfg = state.get("cfg")
task = cfg["task"] if cfg is not None else None
tps = task["tokens_per_sample"] if task is not None else vars(state["args"])["tokens_per_sample"]
print(int(tps))
PY
  ) || { err=$(grep '^fairseq_plugins: error: ' "$tps_err" | tail -n 1 || true); rm -f "$tps_err"
         [[ -n $err ]] && die "${err#fairseq_plugins: error: }"
         die "$ckpt: could not read tokens_per_sample from it (pass --tokens-per-sample)"; }
  rm -f "$tps_err"
fi
if (( cw >= tps )); then
  die "--context-window $cw must be smaller than tokens-per-sample $tps (pass a smaller --context-window)"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cmd=(fairseq-eval-lm "$data" --path "$ckpt" --user-dir "$user_dir" --gen-subset "$subset"
  --tokens-per-sample "$tps" --context-window "$cw" --batch-size "$bsz"
  ${extra[@]+"${extra[@]}"})
echo "eval-lm.sh: $(printf '%q ' "${cmd[@]}")" >&2
"${cmd[@]}" > "$log" 2>&1 || { cat "$log" >&2; err=$(grep '^fairseq_plugins: error: ' "$log" | tail -n 1 || true)
                                die "fairseq-eval-lm failed${err:+: ${err#fairseq_plugins: error: }}"; }
cat "$log" >&2
line=$(grep -E 'Loss \(base 2\): [0-9.eE+-]+, Perplexity: ' "$log" | tail -n 1) \
  || die "no perplexity in fairseq-eval-lm's output"
loss=$(sed -E 's/.*Loss \(base 2\): ([^,]+), Perplexity: .*/\1/' <<<"$line")
ppl=$(sed -E 's/.*Perplexity: ([^ ]+).*/\1/' <<<"$line")
echo "subset: $subset (tokens-per-sample $tps, context window $cw)"
echo "loss: $loss"
echo "ppl: $ppl"
