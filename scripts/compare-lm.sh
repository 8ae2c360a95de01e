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

die() { echo "compare-lm.sh: $*" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH

out=outputs/compare-lm data_override="" cw=64 ebsz=8 extra_str="" tensorboard=0 skip_train=0
doc="" smoke=0 configs=() invocation=("$0" "$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) [[ -n ${2:-} ]] || die "--out needs a value"; out=$2; shift 2 ;;
    --data) [[ -n ${2:-} ]] || die "--data needs a value"; data_override=$2; shift 2 ;;
    --context-window) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--context-window needs a non-negative integer"; cw=$2; shift 2 ;;
    --eval-batch-size) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--eval-batch-size needs a positive integer"; ebsz=$2; shift 2 ;;
    --train-args) [[ $# -ge 2 ]] || die "--train-args needs a value"; extra_str=$2; shift 2 ;;
    --tensorboard) tensorboard=1; shift ;;
    --skip-train) skip_train=1; shift ;;
    --doc) [[ -n ${2:-} ]] || die "--doc needs a value"; doc=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) configs+=("$1"); shift ;;
  esac
done
[[ ${#configs[@]} -ge 1 ]] || { usage >&2; exit 2; }
extra=()
[[ -n $extra_str ]] && read -r -a extra <<<"$extra_str"

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

names=()
for cfg in "${configs[@]}"; do
  load_config "$cfg"
  for n in ${names[@]+"${names[@]}"}; do [[ $n == "$NAME" ]] && die "$cfg: NAME '$NAME' used twice"; done
  names+=("$NAME")
done
mkdir -p "$out"
printf '%q ' "${invocation[@]}" > "$out/invocation.txt"; echo >> "$out/invocation.txt"

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
    what=training
    [[ -f $ckpt/checkpoint_last.pt ]] && what="resuming from checkpoint_last.pt"
    echo "compare-lm.sh: [$NAME] $what ($ARCH) -> $dir/train.log" >&2
    echo "compare-lm.sh: $what at $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$dir/train.log"
    TIMEFORMAT='%R %U %S'
    { time "${train[@]}" > /dev/null 2> "$dir/train-lm.stderr"; } 2> "$dir/train.time" \
      || { [[ -f $ckpt/train.log ]] && tail -n 20 "$ckpt/train.log" >&2; tail -n 3 "$dir/train-lm.stderr" >&2
           die "[$NAME] training failed (see $ckpt/train.log)"; }
    cat "$ckpt/train.log" >> "$dir/train.log"; rm -f "$ckpt/train.log"
    read -r -a times < "$dir/train.time"
    prev=(0 0)
    [[ -f $dir/train.seconds ]] && read -r -a prev < "$dir/train.seconds"
    awk -v w="${prev[0]}" -v c="${prev[1]:-0}" -v r="${times[0]}" -v u="${times[1]}" -v s="${times[2]}" \
      'BEGIN {printf "%.0f %.0f\n", w + r, c + u + s}' > "$dir/train.seconds"
    [[ -f $ckpt/checkpoint_best.pt ]] || die "[$NAME] no $ckpt/checkpoint_best.pt after training"
    touch "$dir/train.done"
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
    params=$(grep -oE 'num\. (shared )?model params: [0-9,]+' "$dir/train.log" | head -n 1 | grep -oE '[0-9,]+$' || echo -)
    updates=$(grep -E '\| train \| epoch|\| valid \|' "$dir/train.log" | tail -n 1 | grep -oE 'num_updates [0-9]+' | grep -oE '[0-9]+$' || echo -)
    # words (tokens) per second of the training epochs, averaged
    wps=$(grep -E '\| train \| epoch' "$dir/train.log" | grep -oE '\| wps [0-9.]+' | awk '{s += $3; n++} END {if (n) printf "%.0f", s / n; else print "-"}')
    params=${params:--} updates=${updates:--}
  fi
  rows+=("| $NAME | \`$ARCH\` | \`$cfg\` | $params | $updates | $seconds | $cpu | $wps | $(ppl_of "$dir/eval-valid.txt") | $(ppl_of "$dir/eval-test.txt") |")
  printf '%s\t%s\t%s\t%s\t%s\n' "$NAME" "$ARCH" "$cfg" "$dir" "$DATA" >> "$out/runs.tsv"
done

curves=""
if [[ ${#logs[@]} -eq ${#names[@]} ]]; then
  if python "$root/scripts/plot-curves.py" "${logs[@]}" --labels "${names[@]}" --metric ppl \
      --out "$out/curves.png" >&2; then
    curves=curves.png
  fi
fi
{
  echo "# Language-model comparison: ${names[*]}"
  echo
  echo "Written by \`scripts/compare-lm.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Perplexity of"
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
  echo "## Commands"
  echo
  echo '```'
  cat "$out/invocation.txt"
  echo '```'
  for n in "${names[@]}"; do
    echo
    echo "### $n"
    echo
    echo '```'
    cat "$out/$n/commands.txt"
    echo '```'
  done
} > "$out/REPORT.md"
echo "compare-lm.sh: wrote $out/REPORT.md" >&2
if [[ -n $doc ]]; then
  smoke_flag=(); [[ $smoke == 1 ]] && smoke_flag=(--smoke)
  python "$root/scripts/study-report.py" lm "$out" --doc "$doc" ${smoke_flag[@]+"${smoke_flag[@]}"} \
    || die "could not write $doc (scripts/study-report.py lm failed)"
  echo "compare-lm.sh: wrote $doc" >&2
fi
