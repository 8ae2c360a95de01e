#!/usr/bin/env bash
# The main job on an embedded default: synthetic translation task, stock Transformer vs this
# plugin's variants, beam search, BLEU and sequence accuracy (also on longer sentences than seen).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/demo.sh [--updates N] [--out DIR] [--models "stock relative compositional"]

Runs on a fresh clone with no download (sets up ./.venv on first use):
  1. writes an embedded synthetic translation task (scripts/make-demo-data.py): a toy language
     pair with a lexicon, adjective/noun reordering and verb-final clauses; test-long has longer
     sentences (3 clauses) than any seen in training (1-2);
  2. prepares it (scripts/prepare-translation.sh: no tokenizer or BPE needed, joined dictionary);
  3. trains small models on CPU (scripts/train.sh), each the same size and number of updates:
       stock          fairseq's transformer (absolute positions)
       relative       rel2-eb relative positions (no absolute positions) + copy decoder
       compositional  compositional attention (S=R=4) with rel2-eb relative positions
  4. decodes test and test-long with beam 5 (scripts/generate.sh) and prints a table of BLEU and
     sequence accuracy. Outputs: DIR (default data-bin/demo) and DIR/results.md.
--updates N: training updates per model (default 1200, a few minutes each on 2 CPU cores).
USAGE
}
root=$(cd "$(dirname "$0")/.." && pwd)
updates=1200; out=$root/data-bin/demo; models="stock relative compositional"
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --updates) updates=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $updates =~ ^[1-9][0-9]*$ ]] || { echo "demo.sh: --updates must be a positive integer" >&2; exit 2; }

bash "$root/scripts/setup.sh"
export PATH=$root/.venv/bin:$PATH
mkdir -p "$out"

echo "== 1. embedded synthetic translation task"
python "$root/scripts/make-demo-data.py" "$out/raw"
echo "== 2. prepare (fairseq-preprocess, joined dictionary)"
bash "$root/scripts/prepare-translation.sh" --src src --tgt tgt --train "$out/raw/train" \
  --valid "$out/raw/valid" --test "$out/raw/test" --out "$out/prep" --tokenizer none --bpe none \
  --joined-dictionary
# test-long as a second test subset ("test1") with the same dictionary
fairseq-preprocess --source-lang src --target-lang tgt --testpref "$out/prep/tok/test,$out/raw/test-long" \
  --destdir "$out/prep/bin" --srcdict "$out/prep/bin/dict.src.txt" --tgtdict "$out/prep/bin/dict.tgt.txt" \
  --workers 1 > "$out/prep/preprocess-test-long.log" 2>&1

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
model_args() {
  case "$1" in
    stock) echo "--arch transformer" ;;
    relative) echo "--arch variant_transformer --rel-pos eb --rel-pos-cross --copy-decoder" ;;
    compositional) echo "--arch variant_transformer --attention-type compositional --num-searches 4 --num-retrievals 4 --retrieval-qk-dim 16 --rel-pos eb --rel-pos-cross" ;;
    *) echo "demo.sh: unknown model '$1' (stock, relative, compositional)" >&2; return 2 ;;
  esac
}

table="| model | params | train time (s) | BLEU test | acc test | BLEU test-long | acc test-long |"
table+=$'\n|---|---|---|---|---|---|---|'
for name in $models; do
  margs=$(model_args "$name")
  echo "== 3. train '$name' ($margs) for $updates updates"
  start=$(date +%s)
  # fairseq's log goes to a file; the terminal gets a progress bar from its train_inner lines.
  # shellcheck disable=SC2086
  if ! bash "$root/scripts/train.sh" "$out/prep/bin" "$out/checkpoints/$name" -- $margs "${small[@]}" "${common[@]}" 2>&1 \
    | tee "$out/train-$name.log" | progress_bar "$updates"; then
    echo "demo.sh: training '$name' failed; see $out/train-$name.log" >&2
    tail -n 5 "$out/train-$name.log" >&2
    exit 1
  fi
  seconds=$(( $(date +%s) - start ))
  params=$(sed -n 's/.*num. shared model params: \([0-9,]*\).*/\1/p' "$out/train-$name.log" | head -n 1)
  grep -E "\| valid \|" "$out/train-$name.log" | tail -n 1 | sed 's/.*| valid |/   valid:/'
  row="| $name | $params | $seconds"
  for subset in test test1; do
    echo "== 4. beam search '$name' on $([[ $subset == test ]] && echo test || echo test-long)"
    bash "$root/scripts/generate.sh" "$out/prep/bin" "$out/checkpoints/$name/checkpoint_last.pt" \
      "$out/generate/$name-$subset" --subset "$subset" --beam 5 --remove-bpe none --detok none > "$out/generate-$name-$subset.log"
    read -r bleu acc < <(python -c "import json,sys; s=json.load(open(sys.argv[1])); print(s['sacrebleu'], s['sequence_accuracy'])" "$out/generate/$name-$subset/scores.json")
    row+=" | $bleu | $acc"
  done
  table+=$'\n'"$row |"
done
echo
echo "$table" | tee "$out/results.md"
echo
echo "Outputs: $out (hypotheses in generate/*/hyp.txt, checkpoints in checkpoints/, table in results.md)"
