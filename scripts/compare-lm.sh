#!/usr/bin/env bash
# Train and evaluate language models on the same data and token budget: one markdown report.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/compare-lm.sh [options] CONFIG...

Each CONFIG is a shell-variables file (see configs/lm/wikitext2-study-*.sh) that sets NAME (the
system's folder under --out), ARCH and a bash array TRAIN_ARGS (as scripts/train-lm.sh reads them),
and optionally DATA (a fairseq-preprocess'd --only-source folder, e.g. prepare-wikitext.sh's
OUTDIR/bin). For every config in turn: scripts/train-lm.sh into OUT/NAME/checkpoints, then
scripts/eval-lm.sh of checkpoint_best.pt on the valid and the test subset (--context-window);
then scripts/plot-curves.py of the validation perplexity and OUT/REPORT.md (parameters, tokens,
tokens/s, wall and CPU seconds, valid/test perplexity).

Resumable: a finished training (OUT/NAME/train.done) is not repeated, an unfinished one resumes
from checkpoint_last.pt (OUT/NAME/train.log collects the logs of all attempts); an evaluation
newer than checkpoint_best.pt is reused. Delete OUT/NAME to redo a system.

Options:
  --out DIR             output folder (default outputs/compare-lm)
  --data DIR            DATA for every config (overrides the configs)
  --context-window N    eval-lm.sh context window (default 64; must be < tokens-per-sample)
  --eval-batch-size N   eval-lm.sh batch size (default 8)
  --train-args STR      extra fairseq-train arguments for every system (after the config's;
                        later flags win), e.g. "--max-update 20" for a smoke run
  --tensorboard         also log training to TensorBoard: --tensorboard-logdir OUT/tensorboard/NAME
  --skip-train          do not train; evaluate the checkpoints already in OUT/NAME/checkpoints
  --doc FILE            also write a results document (scripts/study-report.py lm) to FILE
  --smoke               label that document "smoke run, not results"
USAGE
}

prog=compare-lm.sh
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"  # die, root, PATH; the shared steps

out=outputs/compare-lm data_override="" cw=64 ebsz=8 extra_str="" tensorboard=0 skip_train=0
doc="" smoke=0 configs=() invocation=("$0" "$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --context-window) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--context-window needs a non-negative integer"; cw=$2; shift 2 ;;
    --eval-batch-size) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--eval-batch-size needs a positive integer"; ebsz=$2; shift 2 ;;
    *) compare_option "$@"; shift "$taken" ;;
  esac
done
compare_options_done

# load_config CONFIG: sets NAME ARCH DATA TRAIN_ARGS (validated)
load_config() {
  local cfg=$1
  [[ -f $cfg ]] || die "$cfg: no such config file"
  NAME="" ARCH="" DATA="" TRAIN_ARGS=()
  # shellcheck disable=SC1090
  source "$cfg" || die "$cfg: could not be sourced"
  [[ -n $NAME ]] || die "$cfg: does not set NAME"
  [[ $NAME =~ ^[A-Za-z0-9._+-]+$ ]] || die "$cfg: NAME '$NAME' may only use letters, digits and ._+-"
  [[ -n $ARCH ]] || die "$cfg: does not set ARCH"
  [[ -n $data_override ]] && DATA=$data_override
  [[ -n $DATA ]] || die "$cfg: does not set DATA (or pass --data)"
  [[ -f $DATA/dict.txt ]] || die "$cfg: DATA $DATA: no dict.txt (prepare it with scripts/prepare-wikitext.sh, or pass --data)"
}

check_configs
write_invocation invocation.txt

# ppl_of FILE: the "ppl: X" line of eval-lm.sh's output
ppl_of() { sed -n 's/^ppl: //p' "$1" | tail -n 1; }

printf 'name\tarch\tconfig\tdir\tdata\n' > "$out/runs.tsv"
rows=() logs=()
for cfg in "${configs[@]}"; do
  load_config "$cfg"
  dir=$out/$NAME ckpt=$out/$NAME/checkpoints
  mkdir -p "$ckpt"
  cp "$cfg" "$dir/config.sh"
  args=(${extra[@]+"${extra[@]}"})
  [[ $tensorboard == 1 ]] && args+=(--tensorboard-logdir "$out/tensorboard/$NAME")
  train=(bash "$root/scripts/train-lm.sh" "$cfg" "$DATA" "$ckpt" -- ${args[@]+"${args[@]}"})
  if [[ $skip_train == 0 && ! -f $dir/train.done ]]; then
    # the log of an interrupted attempt first (train-lm.sh starts its log afresh)
    [[ -f $ckpt/train.log ]] && { cat "$ckpt/train.log" >> "$dir/train.log"; rm -f "$ckpt/train.log"; }
    training_starts "$NAME" "$dir" "$ckpt"
    python "$root/scripts/experiment.py" timed "$dir" -- "${train[@]}" > /dev/null 2> "$dir/train-lm.stderr" \
      || { [[ -f $ckpt/train.log ]] && tail -n 20 "$ckpt/train.log" >&2; tail -n 3 "$dir/train-lm.stderr" >&2
           die "[$NAME] training failed (see $ckpt/train.log)"; }
    cat "$ckpt/train.log" >> "$dir/train.log"; rm -f "$ckpt/train.log"
    training_done "$NAME" "$dir" "$ckpt"
  elif [[ -f $dir/train.done ]]; then
    echo "compare-lm.sh: [$NAME] already trained ($dir/train.done)" >&2
  fi
  [[ -f $ckpt/checkpoint_best.pt ]] || die "[$NAME] no $ckpt/checkpoint_best.pt"
  cp "$ckpt/command.txt" "$dir/train-command.txt" 2>/dev/null || true
  evals=()
  for subset in valid test; do
    ev=(bash "$root/scripts/eval-lm.sh" "$ckpt/checkpoint_best.pt" "$DATA" --subset "$subset"
      --context-window "$cw" --batch-size "$ebsz")
    evals+=("$(printf '%q ' "${ev[@]}")")
    if [[ -f $dir/eval-$subset.txt && $dir/eval-$subset.txt -nt $ckpt/checkpoint_best.pt ]] \
        && [[ -n $(ppl_of "$dir/eval-$subset.txt") ]]; then
      echo "compare-lm.sh: [$NAME] $subset already evaluated ($dir/eval-$subset.txt)" >&2
      continue
    fi
    echo "compare-lm.sh: [$NAME] perplexity on $subset (context window $cw)" >&2
    "${ev[@]}" > "$dir/eval-$subset.tmp" 2> "$dir/eval-$subset.log" \
      || { tail -n 5 "$dir/eval-$subset.log" >&2; die "[$NAME] eval-lm.sh on $subset failed (see $dir/eval-$subset.log)"; }
    mv "$dir/eval-$subset.tmp" "$dir/eval-$subset.txt"
  done
  { cat "$dir/train-command.txt" 2>/dev/null || true; printf '%s\n' "${evals[@]}"; } > "$dir/commands.txt"
  params=- updates=- tokens=- wps=- seconds=- cpu=-
  [[ -f $dir/train.seconds ]] && read -r seconds cpu < "$dir/train.seconds"
  if [[ -f $dir/train.log ]]; then
    logs+=("$dir/train.log")
    params=$(log_params "$dir/train.log")
    updates=$(grep -E '\| train \| epoch|\| valid \|' "$dir/train.log" | tail -n 1 | grep -oE 'num_updates [0-9]+' | grep -oE '[0-9]+$' || echo -)
    wps=$(log_wps "$dir/train.log")
    params=${params:--} updates=${updates:--}
  fi
  rows+=("| $NAME | \`$ARCH\` | \`$cfg\` | $params | $updates | $seconds | $cpu | $wps | $(ppl_of "$dir/eval-valid.txt") | $(ppl_of "$dir/eval-test.txt") |")
  printf '%s\t%s\t%s\t%s\t%s\n' "$NAME" "$ARCH" "$cfg" "$dir" "$DATA" >> "$out/runs.tsv"
done

curves=""
if [[ ${#logs[@]} -eq ${#names[@]} ]]; then
  plot_curves ppl "${#logs[@]}" "${logs[@]}" "${names[@]}"
fi
{
  report_heading "Language-model comparison: ${names[*]}" "Perplexity of"
  echo "checkpoint_best.pt (lowest validation loss during training) with \`scripts/eval-lm.sh"
  echo "--context-window $cw\` (fairseq-eval-lm) on the full valid and test subsets."
  echo
  echo "| System | Arch | Config | Params | Updates | Train wall (s) | Train CPU (s) | Train tokens/s | Valid ppl | Test ppl |"
  echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  if [[ -n $curves ]]; then
    echo "![validation perplexity vs epoch and updates]($curves)"
    echo
  fi
  report_commands
  for n in "${names[@]}"; do
    report_run_commands "$n" "$out/$n/commands.txt"
  done
} > "$out/REPORT.md"
report_done lm
