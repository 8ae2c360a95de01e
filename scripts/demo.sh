#!/usr/bin/env bash
# The main job on an embedded default: synthetic translation task, stock Transformer vs this
# plugin's architectures (compositional attention, Graph-Transformer), beam search, BLEU with
# paired significance tests, sequence accuracy (also on longer sentences than seen).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/demo.sh [--updates N] [--reverse-updates N] [--out DIR] [--skip-reverse]

Runs on a fresh clone with no download (sets up ./.venv on first use), in three parts:
 Part 1, the NMT pipeline on an embedded synthetic translation task (scripts/make-demo-data.py: a
   toy language pair with a lexicon, adjective/noun reordering and verb-final clauses):
   prepare (scripts/prepare-translation.sh), then the same small model (d 64, 2+2 layers, same
   recipe and updates) three times on CPU (scripts/train.sh, with a progress bar): stock fairseq
   (transformer), compositional attention in every attention (variant_transformer
   --attention-type compositional, S = R = 4) and the Graph-Transformer encoder (graph_transformer
   --graph-half-dim --graph-fusion weight-gate); beam search (scripts/generate.sh, beam 5) on the
   test set and on test-long (3-clause sentences, longer than any seen in training); prints BLEU,
   sequence accuracy, time and parameters, and the paired bootstrap p-value of each system's BLEU
   against stock (scripts/significance.sh).
 Part 2, what this plugin's variants do that stock fairseq does not: the Reverse task of Ontanon
   et al. (scripts/compgen-data.py; train on digit strings of length 1-16, test on 17-24), the
   same small model (d 64, 2+2 layers) trained for the same updates with absolute positions
   (compgen_abs: fairseq's own layers) and with rel2-eb relative positions + copy decoder
   (compgen_rel2_eb_c), via scripts/compgen-run.sh; prints test sequence accuracy.
 Part 3, the Contextual Retrieval Task (scripts/demo-retrieval.sh, about 2 minutes): multi-head
   (8 heads) and compositional attention (2 searches, 4 retrievals) on the task compositional
   attention is built for; prints their L1 side by side.
 Two cores, one thread each: stock and graph train on the first; Part 2 and then the
   compositional system on the second (in the background, its own process group).
Outputs: DIR (default data-bin/demo), the summary in DIR/results.md.
  --updates N           Part 1 training updates per system (default 800)
  --reverse-updates N   Part 2 training updates per model (default 2000)
  --skip-reverse        Part 1 only
USAGE
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

updates=800 reverse_updates=2000 out=$root/data-bin/demo skip_reverse=0 only_system=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --system-only) need_value "$@"; only_system=$2; shift 2 ;;  # internal: the second core's part 1 system
    --updates) need_positive_int "$@"; updates=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --reverse-updates) need_positive_int "$@"; reverse_updates=$2; shift 2 ;;
    --skip-reverse) skip_reverse=1; shift ;;
    *) unknown_option "$1" ;;
  esac
done

bash "$root/scripts/setup.sh"
use_venv
# Small models: one thread per process is as fast, and immune to the 10x slow-down that torch's
# spinning OpenMP threads suffer when anything else runs on the machine.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$out"

small=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
       --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256 --encoder-attention-heads 4
       --decoder-attention-heads 4)
common=(--optimizer adam --adam-betas "(0.9, 0.98)" --lr 2e-3 --lr-scheduler inverse_sqrt
        --warmup-updates 200 --criterion label_smoothed_cross_entropy --label-smoothing 0.1
        --dropout 0.1 --max-tokens 4096 --max-update "$updates" --no-epoch-checkpoints
        --log-interval 50 --seed 1)
progress_bar() {  # reads fairseq's log, draws "[#####-----] 600/1200 updates, loss 2.31"
  awk -v total="$1" '
    /train_inner|\| train \|/ && /num_updates[ =]/ {
      if (match($0, /num_updates[ =][0-9]+/)) { n = substr($0, RSTART + 12, RLENGTH - 12) + 0 }
      if (match($0, /[| ]loss[ =][0-9.]+/)) { loss = substr($0, RSTART + 6, RLENGTH - 6) }
      done = int(30 * n / total); bar = ""
      for (i = 0; i < 30; i++) bar = bar (i < done ? "#" : "-")
      printf "\r   [%s] %d/%d updates, loss %s", bar, n, total, loss; fflush()
    }
    END { printf "\n" }'
}
declare -A system_args=(
  [stock]="--arch transformer"
  [compositional]="--arch variant_transformer --attention-type compositional"
  [graph]="--arch graph_transformer --graph-half-dim --graph-fusion weight-gate"
)
systems=(stock compositional graph)
# train_system NAME [quiet]: train NAME (progress bar unless quiet), decode test and test-long,
# write the row start "| name | params | seconds" to $out/row-NAME.txt
train_system() {
  local name=$1 quiet=${2:-} margs=${system_args[$1]} start seconds params
  start=$(date +%s)
  # fairseq's log goes to a file; the terminal gets a progress bar from its train_inner lines.
  # shellcheck disable=SC2086
  if ! bash "$root/scripts/train.sh" "$out/prep/bin" "$out/checkpoints/$name" -- $margs "${small[@]}" "${common[@]}" 2>&1 \
    | tee "$out/train-$name.log" | if [[ -n $quiet ]]; then cat > /dev/null; else progress_bar "$updates"; fi; then
    log "training '$name' failed; see $out/train-$name.log"
    tail -n 5 "$out/train-$name.log" >&2
    return 1
  fi
  seconds=$(( $(date +%s) - start ))
  params=$(sed -n 's/.*num. shared model params: \([0-9,]*\).*/\1/p' "$out/train-$name.log" | head -n 1)
  [[ -n $quiet ]] || grep -E "\| valid \|" "$out/train-$name.log" | tail -n 1 | sed 's/.*| valid |/   valid:/'
  for subset in test test1; do
    bash "$root/scripts/generate.sh" "$out/prep/bin" "$out/checkpoints/$name/checkpoint_last.pt" \
      "$out/generate/$name-$subset" --subset "$subset" --beam 5 --remove-bpe none --detok none > "$out/generate-$name-$subset.log"
  done
  echo "| $name | $params | $seconds" > "$out/row-$name.txt"
}
if [[ -n $only_system ]]; then
  train_system "$only_system" quiet
  exit
fi

echo "== 1. embedded synthetic translation task"
py "$root/scripts/make-demo-data.py" "$out/raw"
echo "== 2. prepare (fairseq-preprocess, joined dictionary)"
bash "$root/scripts/prepare-translation.sh" --src src --tgt tgt --train "$out/raw/train" \
  --valid "$out/raw/valid" --test "$out/raw/test" --out "$out/prep" --tokenizer none --bpe none \
  --joined-dictionary
# test-long as a second test subset ("test1") with the same dictionary
fairseq-preprocess --source-lang src --target-lang tgt --testpref "$out/prep/tok/test,$out/raw/test-long" \
  --destdir "$out/prep/bin" --srcdict "$out/prep/bin/dict.src.txt" --tgtdict "$out/prep/bin/dict.tgt.txt" \
  --workers 1 > "$out/prep/preprocess-test-long.log" 2>&1

# Two cores, one thread each: the first trains part 1's stock and graph systems, the second part 2
# (Reverse) and then part 1's compositional system (its own process group, stopped with the demo).
reverse_pid=""
stop_reverse() { if [[ -n $reverse_pid ]]; then kill -- "-$reverse_pid" 2>/dev/null || true; fi; }
trap stop_reverse EXIT
trap 'stop_reverse; exit 130' INT TERM
rm -f "$out/reverse.csv" "$out/reverse.failed" "$out"/row-*.txt
if [[ $skip_reverse == 0 ]]; then
  echo "== part 2 (Reverse: compgen_abs, then compgen_rel2_eb_c, $reverse_updates updates each) starts in the background; logs $out/reverse-*.log"
fi
# The second core: part 2 (unless skipped), then part 1's compositional system (the slowest).
setsid bash -c '
  root=$1 out=$2 updates=$3 reverse_updates=$4 skip_reverse=$5
  if [[ $skip_reverse == 0 ]]; then
    for preset in compgen_abs compgen_rel2_eb_c; do
      bash "$root/scripts/compgen-run.sh" "$preset" reverse --max-update "$reverse_updates" \
        --out "$out/reverse" --csv "$out/reverse.csv" -- --cpu > "$out/reverse-$preset.log" 2>&1 \
        || { echo "$preset" > "$out/reverse.failed"; exit 1; }
    done
  fi
  bash "$root/scripts/demo.sh" --system-only compositional --updates "$updates" --out "$out" \
    > "$out/system-compositional.log" 2>&1 || { echo compositional > "$out/reverse.failed"; exit 1; }
  ' second-core "$root" "$out" "$updates" "$reverse_updates" "$skip_reverse" &
reverse_pid=$!

step=3
for name in stock graph; do
  echo "== $step. train '$name' (${system_args[$name]}, d 64, 2+2 layers) for $updates updates"
  step=$((step + 1))
  train_system "$name" || exit 1
done
echo "== $step. waiting for the second core: 'compositional' (${system_args[compositional]}, $updates updates)$([[ $skip_reverse == 0 ]] && echo ", after part 2")"
step=$((step + 1))
if ! wait "$reverse_pid"; then
  reverse_pid=""
  failed=$(cat "$out/reverse.failed" 2>/dev/null || echo "the second core")
  if [[ $failed == compositional ]]; then
    log "training 'compositional' failed; see $out/system-compositional.log and $out/train-compositional.log"
    tail -n 5 "$out/system-compositional.log" >&2 || true
  else
    log "$failed on reverse failed; see $out/reverse-$failed.log"
    tail -n 5 "$out/reverse-$failed.log" >&2 || true
  fi
  exit 1
fi
reverse_pid=""

echo "== $step. paired significance of each system against stock (bootstrap, 1000 resamples)"
for subset in test test1; do
  hyps=()
  for name in "${systems[@]}"; do hyps+=("$out/generate/$name-$subset/generate-$subset.txt"); done
  bash "$root/scripts/significance.sh" "${hyps[@]}" --names "${systems[@]}" --tokenized \
    --json "$out/significance-$subset.json" > "$out/significance-$subset.txt"
done
echo
# the table and its reading (what holds on every machine, not this run's decimals)
tool demo_report "$out" "${systems[@]}" | tee "$out/results.md"

if [[ $skip_reverse == 0 ]]; then
  echo
  echo "== $((step + 1)). Reverse (train length 1-16, test 17-24): absolute vs rel2-eb relative positions + copy"
  {
    echo
    echo "Part 2: Reverse, sequence accuracy on strings longer than any seen in training"
    echo "| model | what | test accuracy | train+decode time (s) |"
    echo "|---|---|---|---|"
    awk -F, 'NR > 1 {
      what = ($1 == "compgen_abs") ? "absolute positions (fairseq'"'"'s layers)" : "rel2-eb relative positions + copy decoder"
      printf "| %s | %s | %.3f | %.0f |\n", $1, what, $5, $6 }' "$out/reverse.csv"
  } | tee -a "$out/results.md"
fi
echo
echo "== part 3. Contextual Retrieval Task: multi-head vs compositional attention (scripts/demo-retrieval.sh)"
bash "$root/scripts/demo-retrieval.sh" --out "$out/retrieval"
{ echo; cat "$out/retrieval/results.md"; } >> "$out/results.md"
echo
echo "Demo wall time: $((SECONDS / 60)) min $((SECONDS % 60)) s" | tee -a "$out/results.md"
echo "Outputs: $out (hypotheses in generate/*/hyp.txt, checkpoints in checkpoints/ and reverse/, summary in results.md)"
