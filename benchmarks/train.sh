#!/usr/bin/env bash
# fairseq-train words/second (the wps of fairseq's log) of the plugin's presets against the stock
# transformer on the same data, shape and batch, interleaved runs (A B A B ...).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash benchmarks/train.sh [--quick] [--data BIN_DIR] [--updates N] [--rounds K]
                                [--max-tokens N] [--threads T] [--pairs "1 2 3"] [--name NAME]

For each round and each pair (preset, stock) runs fairseq-train for N updates on CPU
(--user-dir fairseq_plugins, --no-save, --disable-validation, --log-interval 1) and reads the
per-update wps of fairseq's log; a run's figure is the median wps over its updates after the
first two (warm-up). Per round the ratio preset/stock is taken; reported: median (IQR) over rounds.

Pairs:
  1  compositional_transformer_iwslt_de_en                          vs transformer_iwslt_de_en
  2  graph_transformer_iwslt_de_en --graph-half-dim --graph-fusion weight-gate
                                                                    vs transformer_iwslt_de_en
  3  compgen_rel2_eb_c                                              vs compgen_abs

Data: --data a fairseq-preprocess'd directory with a joined dictionary (e.g. made by
`bash scripts/prepare-multi30k.sh OUT --max-train-lines N`, use OUT/bin); default: the embedded
demo task (scripts/make-demo-data.py), binarised once into benchmarks/.data/demo.

  --quick        1 round, 6 updates, --max-tokens 1024 (a few minutes on 2 cores)
  --updates N    updates per run (default 20)      --rounds K   rounds (default 3)
  --max-tokens N batch size in tokens (default 4096)
  --threads T    OMP/torch threads per run (default 1: on a shared machine more threads spin)
  --pairs LIST   subset of the pairs, e.g. "1 3"   --name NAME  results/NAME.{json,md} (train)
Writes benchmarks/results/NAME.json and NAME.md (logs in benchmarks/.data/logs).
USAGE
}

source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"

data="" updates=20 rounds=3 max_tokens=4096 threads=1 pairs="1 2 3" name=train
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) updates=6; rounds=1; max_tokens=1024; shift ;;
    --data) need_value "$@"; data=$2; shift 2 ;;
    --updates) need_positive_int "$@"; updates=$2; shift 2 ;;
    --rounds) need_positive_int "$@"; rounds=$2; shift 2 ;;
    --max-tokens) need_positive_int "$@"; max_tokens=$2; shift 2 ;;
    --threads) need_positive_int "$@"; threads=$2; shift 2 ;;
    --pairs) need_value "$@"; pairs=$2; shift 2 ;;
    --name) need_value "$@"; name=$2; shift 2 ;;
    *) unknown_option "$1" ;;
  esac
done
(( updates > 2 )) || die "--updates must be at least 3 (2 warm-up updates)"

py=$root/.venv/bin/python
[[ -x $py ]] || die "no $py (run bash scripts/setup.sh)"
work=$root/benchmarks/.data
mkdir -p "$work/logs"
if [[ -z $data ]]; then
  data=$work/demo/bin
  if [[ ! -f $data/dict.src.txt ]]; then
    echo "== binarising the embedded demo task into $data"
    "$py" "$root/scripts/make-demo-data.py" "$work/demo/raw"
    "$root/.venv/bin/fairseq-preprocess" --source-lang src --target-lang tgt \
      --trainpref "$work/demo/raw/train" --validpref "$work/demo/raw/valid" \
      --destdir "$data" --joined-dictionary --workers 1 > "$work/demo/preprocess.log" 2>&1
  fi
fi
[[ -d $data ]] || die "--data $data is not a directory"
langs=$(cd "$data" && ls dict.*.txt | sed 's/dict\.\(.*\)\.txt/\1/' | tr '\n' ' ')
read -r src tgt _ <<< "$langs" || true
[[ -n ${src:-} && -n ${tgt:-} ]] || die "no dict.SRC.txt/dict.TGT.txt in $data"
# fairseq-preprocess names the pair by its own order; train.bin names it src-tgt or tgt-src
ls "$data"/train."$src-$tgt".* > /dev/null 2>&1 || { t=$src; src=$tgt; tgt=$t; }

declare -A preset stock
preset[1]="--arch compositional_transformer_iwslt_de_en"; stock[1]="--arch transformer_iwslt_de_en"
preset[2]="--arch graph_transformer_iwslt_de_en --graph-half-dim --graph-fusion weight-gate"
stock[2]="--arch transformer_iwslt_de_en"
preset[3]="--arch compgen_rel2_eb_c"; stock[3]="--arch compgen_abs"
for p in $pairs; do
  [[ -n ${preset[$p]:-} ]] || die "unknown pair '$p' (1, 2 or 3)"
done

run() {  # run LABEL ARGS... -> log file
  local log=$work/logs/$1.log; shift
  OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads "$root/.venv/bin/fairseq-train" "$data" \
    --user-dir "$root/fairseq_plugins" --task translation -s "$src" -t "$tgt" --cpu \
    --optimizer adam --adam-betas "(0.9, 0.98)" --lr 5e-4 --lr-scheduler inverse_sqrt \
    --warmup-updates 100 --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --max-tokens "$max_tokens" --max-update "$updates" --no-save --disable-validation \
    --log-format json --log-interval 1 --seed 1 --num-workers 0 "$@" > "$log" 2>&1 \
    || { tail -5 "$log" >&2; fail "fairseq-train failed, see $log"; }
  echo "$log"
}

manifest=$work/logs/$name.runs
: > "$manifest"
for ((r = 1; r <= rounds; r++)); do
  for p in $pairs; do
    for side in preset stock; do
      if [[ $side == preset ]]; then args=${preset[$p]}; else args=${stock[$p]}; fi
      echo "== round $r pair $p $side: $args"
      # shellcheck disable=SC2086  # args is a word list
      log=$(run "$name-r$r-p$p-$side" $args)
      printf '%s\t%s\t%s\t%s\n' "$r" "$p" "$side" "$log" >> "$manifest"
    done
  done
done

"$py" "$root/benchmarks/train_report.py" "$manifest" "$name" "$data" "$updates" "$rounds" \
  "$max_tokens" "$threads" "${preset[1]}" "${stock[1]}" "${preset[2]}" "${stock[2]}" \
  "${preset[3]}" "${stock[3]}"
