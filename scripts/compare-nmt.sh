#!/usr/bin/env bash
# Train, decode and compare NMT systems: one markdown report with paired significance tests.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/compare-nmt.sh [options] CONFIG...

Each CONFIG is a small shell-variables file (see configs/nmt/multi30k-small-*.sh):
  NAME        system name (unique; also its folder under --out)
  ARCH        fairseq arch (transformer, compositional_transformer, graph_transformer, ...)
  DATA        fairseq-preprocess'd folder (e.g. from scripts/prepare-multi30k.sh OUTDIR: OUTDIR/bin)
  SRC, TGT    language pair (default: the single pair found in DATA)
  TRAIN_ARGS  bash array (or string) of fairseq-train arguments
  BEAM LENPEN beam settings; default the paper's: beam 5 for De-En, beam 4 + lenpen 0.6 otherwise
  GEN_ARGS    bash array (or string) of extra fairseq-generate arguments (e.g. --remove-bpe)
For every config in turn: fairseq-train --user-dir fairseq_plugins (resumes from an existing
checkpoint_last.pt), fairseq-generate with checkpoint_best.pt on the test subset; then
scripts/significance.sh of every system against the first one, scripts/plot-curves.py of the
validation loss, and OUT/REPORT.md.

Options:
  --out DIR          output folder (default outputs/compare-nmt)
  --data DIR         use DIR as DATA for every config (overrides the configs)
  --subset NAME      subset to decode and score (default test)
  --batch-size N     fairseq-generate batch size (default 128)
  --skip-train       do not train; use the checkpoints already in OUT/NAME/checkpoints
  --detokenized      the hypotheses/references are detokenized text (default: fairseq's H-/T-
                     lines are tokenized text, scored with significance.sh --tokenized)
  --resamples N, --trials N, --seed N, --moses   passed to scripts/significance.sh
USAGE
}

die() { echo "compare-nmt.sh: $*" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH
user_dir=${FAIRSEQ_USER_DIR:-$root/fairseq_plugins}  # --user-dir; FAIRSEQ_USER_DIR overrides

out=outputs/compare-nmt data_override="" subset=test bsz=128 skip_train=0 tokenized=1
sig_args=() configs=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) [[ -n ${2:-} ]] || die "--out needs a value"; out=$2; shift 2 ;;
    --data) [[ -n ${2:-} ]] || die "--data needs a value"; data_override=$2; shift 2 ;;
    --subset) [[ -n ${2:-} ]] || die "--subset needs a value"; subset=$2; shift 2 ;;
    --batch-size) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--batch-size needs a positive integer"; bsz=$2; shift 2 ;;
    --skip-train) skip_train=1; shift ;;
    --detokenized) tokenized=0; shift ;;
    --resamples|--trials|--seed)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 needs a positive integer"; sig_args+=("$1" "$2"); shift 2 ;;
    --moses) sig_args+=(--moses); shift ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) configs+=("$1"); shift ;;
  esac
done
[[ ${#configs[@]} -ge 1 ]] || { usage >&2; exit 2; }
for tool in fairseq-train fairseq-generate; do
  command -v "$tool" >/dev/null || die "$tool not on PATH (run scripts/setup.sh)"
done

# load_config CONFIG: sets NAME ARCH DATA SRC TGT BEAM LENPEN TRAIN_ARGS GEN_ARGS (validated)
load_config() {
  local cfg=$1
  [[ -f $cfg ]] || die "$cfg: no such config file"
  NAME="" ARCH="" DATA="" SRC="" TGT="" BEAM="" LENPEN=""
  TRAIN_ARGS=() GEN_ARGS=()
  # shellcheck disable=SC1090
  source "$cfg" || die "$cfg: could not be sourced"
  [[ -n $NAME ]] || die "$cfg: does not set NAME"
  [[ $NAME =~ ^[A-Za-z0-9._+-]+$ ]] || die "$cfg: NAME '$NAME' may only use letters, digits and ._+-"
  [[ -n $ARCH ]] || die "$cfg: does not set ARCH"
  [[ -n $data_override ]] && DATA=$data_override
  [[ -n $DATA ]] || die "$cfg: does not set DATA (or pass --data)"
  [[ -d $DATA ]] || die "$cfg: DATA $DATA: no such directory (prepare it, e.g. scripts/prepare-multi30k.sh, or pass --data)"
  [[ "$(declare -p TRAIN_ARGS)" == "declare -a"* ]] || read -r -a TRAIN_ARGS <<<"$TRAIN_ARGS"
  [[ "$(declare -p GEN_ARGS)" == "declare -a"* ]] || read -r -a GEN_ARGS <<<"$GEN_ARGS"
  if [[ -z $SRC || -z $TGT ]]; then
    local pairs
    pairs=$(find "$DATA" -maxdepth 1 -name 'train.*-*.*.idx' | sed -E 's#.*/train\.([^.]+)-([^.]+)\..*#\1 \2#' | sort -u)
    [[ $(wc -l <<<"$pairs") -eq 1 && -n $pairs ]] || die "$cfg: set SRC and TGT (DATA $DATA has no single language pair)"
    read -r SRC TGT <<<"$pairs"
  fi
  [[ -f $DATA/dict.$SRC.txt && -f $DATA/dict.$TGT.txt ]] || die "$cfg: $DATA has no dict.$SRC.txt/dict.$TGT.txt"
  if [[ -z $BEAM ]]; then
    if [[ $SRC == de && $TGT == en ]]; then BEAM=5 LENPEN=${LENPEN:-1.0}; else BEAM=4 LENPEN=${LENPEN:-0.6}; fi
  fi
  LENPEN=${LENPEN:-1.0}
}

# validate every config before spending time on training
names=()
for cfg in "${configs[@]}"; do
  load_config "$cfg"
  for n in ${names[@]+"${names[@]}"}; do [[ $n == "$NAME" ]] && die "$cfg: NAME '$NAME' used twice"; done
  names+=("$NAME")
done
command -v python >/dev/null || die "no python on PATH"
mkdir -p "$out"

hyps=() logs=() rows=()
for cfg in "${configs[@]}"; do
  load_config "$cfg"
  dir=$out/$NAME
  mkdir -p "$dir/checkpoints"
  cp "$cfg" "$dir/config.sh"
  train=(fairseq-train "$DATA" --user-dir "$user_dir" --task translation
    --source-lang "$SRC" --target-lang "$TGT" --arch "$ARCH" --save-dir "$dir/checkpoints"
    --log-format simple ${TRAIN_ARGS[@]+"${TRAIN_ARGS[@]}"})
  gen=(fairseq-generate "$DATA" --user-dir "$user_dir" --task translation
    --source-lang "$SRC" --target-lang "$TGT" --path "$dir/checkpoints/checkpoint_best.pt"
    --gen-subset "$subset" --beam "$BEAM" --lenpen "$LENPEN" --batch-size "$bsz"
    --required-batch-size-multiple 1
    ${GEN_ARGS[@]+"${GEN_ARGS[@]}"})
  {
    printf '%q ' "${train[@]}"; echo
    printf '%q ' "${gen[@]}"; echo
  } > "$dir/commands.txt"
  seconds=-
  if [[ $skip_train == 0 ]]; then
    echo "compare-nmt.sh: [$NAME] training ($ARCH) -> $dir/train.log" >&2
    start=$SECONDS
    "${train[@]}" > "$dir/train.log" 2>&1 \
      || { tail -n 20 "$dir/train.log" >&2; die "[$NAME] fairseq-train failed (see $dir/train.log)"; }
    seconds=$((SECONDS - start))
  fi
  [[ -f $dir/checkpoints/checkpoint_best.pt ]] || die "[$NAME] no $dir/checkpoints/checkpoint_best.pt"
  echo "compare-nmt.sh: [$NAME] decoding $subset (beam $BEAM, lenpen $LENPEN) -> $dir/generate-$subset.txt" >&2
  "${gen[@]}" > "$dir/generate-$subset.txt" 2> "$dir/generate.log" \
    || { tail -n 20 "$dir/generate.log" >&2; die "[$NAME] fairseq-generate failed (see $dir/generate.log)"; }
  # every sentence must be scored (with the default --required-batch-size-multiple 8 this
  # fairseq build silently drops the remainder batch)
  n_data=$(grep -oE " $subset $SRC-$TGT [0-9]+ examples" "$dir/generate.log" | grep -oE '[0-9]+' | tail -n 1 || true)
  n_hyp=$(grep -c '^H-' "$dir/generate-$subset.txt" || true)
  [[ -z $n_data || $n_data == "$n_hyp" ]] \
    || die "[$NAME] fairseq-generate wrote $n_hyp hypotheses for $n_data $subset sentences (see $dir/generate.log)"
  hyps+=("$dir/generate-$subset.txt")
  params=- updates=- best=-
  if [[ -f $dir/train.log ]]; then
    logs+=("$dir/train.log")
    params=$(grep -oE 'num\. (shared )?model params: [0-9,]+' "$dir/train.log" | head -n 1 | grep -oE '[0-9,]+$' || echo -)
    updates=$(grep -E '\| valid \|' "$dir/train.log" | tail -n 1 | grep -oE 'num_updates [0-9]+' | grep -oE '[0-9]+$' || echo -)
    best=$(grep -E '\| valid \|' "$dir/train.log" | grep -oE '\| loss [0-9.]+' | awk '{print $3}' | sort -g | head -n 1 || true)
    best=${best:--}
  fi
  rows+=("| $NAME | \`$ARCH\` | \`$cfg\` | $SRC→$TGT | $BEAM | $LENPEN | $params | $updates | $best | $seconds |")
done

echo "compare-nmt.sh: significance of ${names[*]:1} against ${names[0]}" >&2
tok_flag=(--tokenized); [[ $tokenized == 0 ]] && tok_flag=()
python "$root/scripts/bleu-significance.py" "${hyps[@]}" --names "${names[@]}" \
  ${tok_flag[@]+"${tok_flag[@]}"} --lang "$TGT" --format markdown --json "$out/significance.json" \
  ${sig_args[@]+"${sig_args[@]}"} > "$out/significance.md" \
  || die "significance test failed"

curves=""
if [[ ${#logs[@]} -eq ${#names[@]} ]]; then
  if python "$root/scripts/plot-curves.py" "${logs[@]}" --labels "${names[@]}" --metric loss \
      --out "$out/curves.png" >&2; then
    curves=curves.png
  fi
fi

{
  echo "# NMT comparison: ${names[*]}"
  echo
  echo "Written by \`scripts/compare-nmt.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Decoded subset: \`$subset\`;"
  echo "baseline: **${names[0]}**; references: the T- lines of fairseq-generate."
  echo
  echo "## Systems"
  echo
  echo "| System | Arch | Config | Pair | Beam | Lenpen | Params | Updates | Best valid loss | Train time (s) |"
  echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "## Paired significance against ${names[0]}"
  echo
  cat "$out/significance.md"
  echo
  echo "Machine-readable: \`significance.json\`. Hypotheses: \`NAME/generate-$subset.txt\`."
  if [[ -n $curves ]]; then
    echo
    echo "## Validation loss"
    echo
    echo "![validation loss vs epoch and updates]($curves)"
  fi
  echo
  echo "## Commands"
  for i in "${!names[@]}"; do
    echo
    echo "### ${names[$i]}"
    echo
    echo '```'
    cat "$out/${names[$i]}/commands.txt"
    echo '```'
  done
} > "$out/REPORT.md"
echo "compare-nmt.sh: wrote $out/REPORT.md" >&2
