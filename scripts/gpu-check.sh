#!/usr/bin/env bash
# Prove the GPU path in one command: the CUDA tests, short fp16 trainings of each model family
# on one GPU and on all of them, the benchmarks on the GPU, and one JSON + Markdown summary.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/gpu-check.sh [--out DIR] [--updates N] [--results DIR]
                                 [--skip-tests] [--skip-train] [--skip-bench]

On a machine with CUDA, runs and records (a failed step is recorded and the next one runs):
  1. the CUDA-marked tests (pytest -m cuda): every attention type x relative positions x copy
     decoder x graph fusion, forward against the CPU result, incremental decoding against the
     full pass, in float32, float16 and bfloat16 (tests/test_cuda.py);
  2. N fp16 updates (default 200) of each model family through scripts/train.sh on 1 GPU and on
     all GPUs (when there are more than one): stock transformer, compositional attention,
     rel2-eb + copy decoder, Graph-Transformer, the compositional LM, and COGS tagging when the
     COGS corpus is found; data: the embedded demo task (scripts/make-demo-data.py);
  3. benchmarks/attention.py, model_step.py and decode.py on the GPU (--quick), their results as
     benchmarks/results/gpu-*.{json,md};
then writes RESULTS/gpu-check.json and RESULTS/gpu-check.md (scripts/gpu-report.py) and exits
non-zero if any step failed.
Without CUDA it says so in one line and exits 0.

  --out DIR      work folder: data, checkpoints, logs (default data-bin/gpu-check)
  --updates N    fp16 updates per training run (default 200)
  --results DIR  where the summary goes (default benchmarks/results)
  --skip-tests / --skip-train / --skip-bench   leave a step out (recorded as skipped)
USAGE
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

out=$root/data-bin/gpu-check updates=200 results=$root/benchmarks/results
run_tests=1 run_train=1 run_bench=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --updates) need_positive_int "$@"; updates=$2; shift 2 ;;
    --results) need_value "$@"; results=$2; shift 2 ;;
    --skip-tests) run_tests=0; shift ;;
    --skip-train) run_train=0; shift ;;
    --skip-bench) run_bench=0; shift ;;
    *) unknown_option "$1" ;;
  esac
done

python=$(python_cmd)
gpus=$(cuda_devices)
if [[ $gpus == 0 ]]; then
  echo "$prog: no CUDA device here (torch.cuda.is_available() is False): nothing to check"
  exit 0
fi

mkdir -p "$out/logs" "$results"
steps=$out/steps.tsv  # one line per step: name, status, seconds, log, detail
: > "$steps"
record() {  # record NAME STATUS SECONDS LOG DETAIL
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >> "$steps"
  log "$1: $2 (${3}s)${5:+ - $5}"
}
step() {  # step NAME -- COMMAND...: runs it, logs to $out/logs/NAME.log, records pass/fail
  local name=$1; shift 2
  local log=$out/logs/$name.log start=$SECONDS status=pass
  "$@" > "$log" 2>&1 || status=fail
  record "$name" "$status" $((SECONDS - start)) "$log"
}

# -- 1. the CUDA tests --------------------------------------------------------------------------
if [[ $run_tests == 1 ]]; then
  step cuda-tests -- "$python" -m pytest -q -m cuda -p no:cacheprovider \
    --junitxml "$out/cuda-tests.xml" "$root/tests"
else
  record cuda-tests skip 0 "" "--skip-tests"
fi

# -- 2. fp16 training of each family, 1 GPU and all GPUs ----------------------------------------
small=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
       --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256 --encoder-attention-heads 4
       --decoder-attention-heads 4)
recipe=(--fp16 --optimizer adam --adam-betas "(0.9, 0.98)" --lr 2e-3 --lr-scheduler inverse_sqrt
        --warmup-updates 50 --dropout 0.1 --max-tokens 4096 --max-update "$updates"
        --no-save --disable-validation --log-format simple --log-interval 20 --seed 1)
translation=(--task translation --criterion label_smoothed_cross_entropy --label-smoothing 0.1)
declare -A family_args=(
  [stock]="--arch transformer"
  [compositional]="--arch variant_transformer --attention-type compositional"
  [rel2-eb-copy]="--arch compgen_rel2_eb_c"
  [graph]="--arch graph_transformer --graph-half-dim --graph-fusion weight-gate"
)
train_run() {  # train_run NAME GPUS -- COMMAND...: on the first GPUS devices; pass = N updates
  local name=$1 n=$2; shift 3
  local log=$out/logs/$name.log start=$SECONDS status=pass detail=""
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) "$@" > "$log" 2>&1 || status=fail
  if ! grep -Eq "num_updates[ =]$updates\b" "$log"; then
    # the last line of the log says why (pipes would break the Markdown table)
    status=fail; detail="did not reach $updates updates: $(tail -n 1 "$log" | tr '|\t' '/ ' | cut -c1-160)"
  fi
  local loss
  loss=$(grep -Eo "\| loss [0-9.naninf]+" "$log" | tail -1 | awk '{print $3}' || true)
  record "$name" "$status" $((SECONDS - start)) "$log" "${detail:-last loss ${loss:-?}}"
}
if [[ $run_train == 1 ]]; then
  demo=$out/data/demo
  if [[ ! -f $demo/lm/dict.txt ]]; then
    step prepare-data -- bash -c "
      set -euo pipefail
      '$python' '$root/scripts/make-demo-data.py' '$demo/raw' --train 4000 --valid 200 --test 200
      fairseq-preprocess --source-lang src --target-lang tgt --trainpref '$demo/raw/train' \
        --validpref '$demo/raw/valid' --testpref '$demo/raw/test' --destdir '$demo/bin' \
        --joined-dictionary --workers 4
      fairseq-preprocess --only-source --trainpref '$demo/raw/train.tgt' \
        --validpref '$demo/raw/valid.tgt' --destdir '$demo/lm' --workers 4"
  fi
  cogs=$(tool corpora --prog "$prog" path cogs 2>/dev/null || true)
  if [[ -n $cogs && ! -f $out/data/cogs-tags/meta.json ]]; then
    step prepare-cogs -- "$python" "$root/scripts/cogs-tags.py" --raw-dir "$cogs" --outdir "$out/data/cogs-tags"
  fi
  counts=(1)
  [[ $gpus -gt 1 ]] && counts+=("$gpus")
  for n in "${counts[@]}"; do
    for family in stock compositional rel2-eb-copy graph; do
      read -r -a arch <<< "${family_args[$family]}"
      train_run "train-$family-${n}gpu" "$n" -- bash "$root/scripts/train.sh" "$demo/bin" \
        "$out/ckpt/$family-${n}gpu" --nproc "$n" -- "${arch[@]}" "${small[@]}" \
        "${translation[@]}" "${recipe[@]}"
    done
    train_run "train-lm-${n}gpu" "$n" -- bash "$root/scripts/train.sh" "$demo/lm" \
      "$out/ckpt/lm-${n}gpu" --nproc "$n" -- --task language_modeling \
      --arch compositional_transformer_lm --decoder-layers 2 --decoder-embed-dim 64 \
      --decoder-ffn-embed-dim 256 --decoder-attention-heads 4 --rel-pos eb \
      --tokens-per-sample 64 --criterion cross_entropy "${recipe[@]}"
    if [[ -f $out/data/cogs-tags/meta.json ]]; then
      # fairseq-train itself: the tagging data has no dict.*.txt, which train.sh asks for.
      train_run "train-tagging-${n}gpu" "$n" -- fairseq-train "$out/data/cogs-tags" \
        --user-dir "$root/fairseq_plugins" --distributed-world-size "$n" --task cogs_tagging \
        --criterion cogs_tagging --arch cogs_tagging_tuned --batch-size 64 "${recipe[@]}"
    else
      record "train-tagging-${n}gpu" skip 0 "" "COGS corpus not found (scripts/get-corpora.sh)"
    fi
  done
else
  record train skip 0 "" "--skip-train"
fi

# -- 3. benchmarks on the GPU -------------------------------------------------------------------
if [[ $run_bench == 1 ]]; then
  step bench-attention -- "$python" "$root/benchmarks/attention.py" --quick --device cuda --name gpu-attention
  step bench-model-step -- "$python" "$root/benchmarks/model_step.py" --quick --device cuda --name gpu-model-step
  step bench-decode -- "$python" "$root/benchmarks/decode.py" --quick --device cuda --name gpu-decode
else
  record bench skip 0 "" "--skip-bench"
fi

# exit status: 1 when a step failed
"$python" "$root/scripts/gpu-report.py" "$steps" --junit "$out/cuda-tests.xml" \
  --updates "$updates" --out "$results/gpu-check"
