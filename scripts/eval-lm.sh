#!/usr/bin/env bash
# Perplexity of a language-model checkpoint with fairseq-eval-lm; last line "ppl: X".
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/eval-lm.sh CHECKPOINT DATA_BIN [--context-window 400] [--subset test]
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

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
user_dir=${FAIRSEQ_USER_DIR:-$root/fairseq_plugins}  # --user-dir; FAIRSEQ_USER_DIR overrides

pos=() extra=() cw=400 subset=test bsz=8 tps=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --context-window) need_nonnegative_int "$@"; cw=$2; shift 2 ;;
    --subset) need_value "$@"; subset=$2; shift 2 ;;
    --batch-size) need_positive_int "$@"; bsz=$2; shift 2 ;;
    --tokens-per-sample) need_positive_int "$@"; tps=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) unknown_option "$1" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[[ ${#pos[@]} -eq 2 ]] || die_usage "needs CHECKPOINT and DATA_BIN"
ckpt=${pos[0]} data=${pos[1]}
[[ -d $user_dir ]] || die "FAIRSEQ_USER_DIR '$user_dir' is not a directory (the --user-dir of fairseq_plugins)"
[[ -f $ckpt ]] || die "$ckpt: no such checkpoint"
[[ -f $data/dict.txt ]] || die "$data: no dict.txt (not a fairseq-preprocess'd folder)"
[[ -f $data/$subset.idx ]] || die "$data: no '$subset' subset ($data/$subset.idx missing)"
command -v fairseq-eval-lm >/dev/null || die "fairseq-eval-lm not on PATH (run scripts/setup.sh)"

if [[ -z $tps ]]; then
  # the training value (fairseq-eval-lm itself would default to 1024); the plugin of --user-dir
  tps_err=$(mktemp)
  tps=$(PYTHONPATH=$(dirname "$user_dir"):$root${PYTHONPATH:+:$PYTHONPATH} \
        py "$root/scripts/checkpoint-setting.py" "$ckpt" tokens_per_sample 2>"$tps_err") \
    || { err=$(grep '^fairseq_plugins: error: ' "$tps_err" | tail -n 1 || true); rm -f "$tps_err"
         [[ -n $err ]] && die "${err#fairseq_plugins: error: }"
         die "$ckpt: could not read tokens_per_sample from it (pass --tokens-per-sample)"; }
  rm -f "$tps_err"
fi
if (( cw >= tps )); then
  die "--context-window $cw must be smaller than tokens-per-sample $tps (pass a smaller --context-window)"
fi

eval_log=$(mktemp)
trap 'rm -f "$eval_log"' EXIT
cmd=(fairseq-eval-lm "$data" --path "$ckpt" --user-dir "$user_dir" --gen-subset "$subset"
  --tokens-per-sample "$tps" --context-window "$cw" --batch-size "$bsz"
  ${extra[@]+"${extra[@]}"})
log "$(printf '%q ' "${cmd[@]}")"
"${cmd[@]}" > "$eval_log" 2>&1 || { cat "$eval_log" >&2; err=$(grep '^fairseq_plugins: error: ' "$eval_log" | tail -n 1 || true)
                                die "fairseq-eval-lm failed${err:+: ${err#fairseq_plugins: error: }}"; }
cat "$eval_log" >&2
line=$(grep -E 'Loss \(base 2\): [0-9.eE+-]+, Perplexity: ' "$eval_log" | tail -n 1) \
  || die "no perplexity in fairseq-eval-lm's output"
loss=$(sed -E 's/.*Loss \(base 2\): ([^,]+), Perplexity: .*/\1/' <<<"$line")
ppl=$(sed -E 's/.*Perplexity: ([^ ]+).*/\1/' <<<"$line")
echo "subset: $subset (tokens-per-sample $tps, context window $cw)"
echo "loss: $loss"
echo "ppl: $ppl"
