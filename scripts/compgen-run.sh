#!/usr/bin/env bash
# Train and evaluate one preset on one compositional-generalization task, for several seeds.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/compgen-run.sh PRESET TASK [options] [-- extra fairseq-train args]

PRESET  a fairseq --arch, e.g. compgen_rel2_eb_c, compgen_small_2s, compgen_large_6 (or transformer)
TASK    a scripts/compgen-data.py task: add addneg reverse dup cart inters scan-length scan-addjump
        scan-length-cutoff-N cogs pcfg-productivity pcfg-systematicity

For every seed: fairseq-train (--task translation_accuracy --eval-accuracy, best checkpoint by
valid sequence accuracy), fairseq-generate on the task's test split (COGS: gen) with the best
checkpoint, scripts/seq-accuracy.py, and one row appended to the results CSV:
preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,extra_args
(accuracy: fraction 0..1; wall_seconds: training + generation).

Options:
  --seeds N          seeds 1..N (default 1; the paper averages 5 repetitions)
  --out DIR          data, checkpoints and logs (default work/compgen)
  --csv FILE         results CSV (default results/compgen.csv)
  --max-update N     training updates (default 20000)
  --small            small data sets (compgen-data.py --small: 1000 train, 100 valid, 100 test)
  --beam N           beam size for the test generation (default 1: greedy)
  --lr LR            peak learning rate (default Noam: d^-0.5 * 4000^-0.5, d = 128 for
                     compgen_large_* presets, else 64)
  --warmup N         warm-up updates (default 4000, or max-update/10 when that is smaller)
  --raw-dir DIR      published files for SCAN/COGS/PCFG (compgen-data.py --raw-dir)
  --data-seed S      seed of the generated data set (default 1; same data for every seed)
  -h, --help         this text

Paper defaults used: Adam (0.9, 0.98, 1e-9), inverse_sqrt (Noam) schedule, dropout 0.1,
batch 64 sentences, cross-entropy. Arguments after `--` go to fairseq-train last (they win).
USAGE
}

die() {
  echo "compgen-run.sh: $*" >&2
  exit 2
}

root=$(cd "$(dirname "$0")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

seeds=1 out=$root/work/compgen csv=$root/results/compgen.csv max_update=20000 small=0 beam=1
lr="" warmup="" raw_dir="" data_seed=1
positional=() extra=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --seeds | --out | --csv | --max-update | --beam | --lr | --warmup | --raw-dir | --data-seed)
      (($# >= 2)) || die "$1 needs a value"
      case $1 in
        --seeds) seeds=$2 ;; --out) out=$2 ;; --csv) csv=$2 ;; --max-update) max_update=$2 ;;
        --beam) beam=$2 ;; --lr) lr=$2 ;; --warmup) warmup=$2 ;; --raw-dir) raw_dir=$2 ;;
        --data-seed) data_seed=$2 ;;
      esac
      shift 2 ;;
    --small) small=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
((${#positional[@]} == 2)) || die "need PRESET and TASK (see --help)"
preset=${positional[0]} task=${positional[1]}
for pair in "seeds:$seeds" "max-update:$max_update" "beam:$beam" "data-seed:$data_seed"; do
  [[ ${pair#*:} =~ ^[0-9]+$ && ${pair#*:} -ge 1 ]] || die "--${pair%%:*} ${pair#*:}: not a positive integer"
done
[[ -z $warmup || $warmup =~ ^[0-9]+$ ]] || die "--warmup $warmup: not an integer"
[[ -z $lr || $lr =~ ^[0-9.eE+-]+$ ]] || die "--lr $lr: not a number"
[[ -z $raw_dir || -d $raw_dir ]] || die "--raw-dir $raw_dir: not a directory"
command -v fairseq-train >/dev/null || die "fairseq-train not found (run scripts/setup.sh)"

# Fail fast on an unknown --arch (fairseq-train would say so only after data preparation).
arch_check=$(python - "$root" "$preset" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
try:
    import fairseq_plugins  # noqa: F401
except Exception as e:
    print(f"importing fairseq_plugins failed: {type(e).__name__}: {e}")
    sys.exit(1)
from fairseq.models import ARCH_MODEL_REGISTRY as R
if sys.argv[2] not in R:
    archs = " ".join(sorted(a for a in R if a.startswith("compgen"))) or "none"
    print(f"unknown --arch {sys.argv[2]} (registered compgen archs: {archs})")
    sys.exit(1)
PY
) || die "$(tail -n 1 <<<"$arch_check")"

# Learning rate and warm-up (paper: Noam schedule, 4000 warm-up; scaled down for short runs).
if [[ -z $warmup ]]; then
  warmup=$((max_update / 10 < 4000 ? max_update / 10 : 4000))
  ((warmup >= 1)) || warmup=1
fi
if [[ -z $lr ]]; then
  d=64
  [[ $preset == compgen_large* ]] && d=128
  lr=$(python -c "print(f'{$d ** -0.5 * 4000 ** -0.5:.6g}')")
fi

# Data: generate/load once per (task, size, data seed), binarize with a joined dictionary.
suffix=""
((small)) && suffix=-small
data=$out/data/$task$suffix-s$data_seed
# --raw-dir may point at different files than the cached copy: always rebuild then.
if [[ ! -f $data/bin/.done || -n $raw_dir ]]; then
  rm -rf "$data"
  data_args=(--seed "$data_seed")
  ((small)) && data_args+=(--small)
  [[ -n $raw_dir ]] && data_args+=(--raw-dir "$raw_dir")
  python "$root/scripts/compgen-data.py" "$task" "$data/raw" "${data_args[@]}"
fi
meta() { python -c "import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print('' if v is None else v)" "$data/raw/meta.json" "$1"; }
split=$(meta eval_split)
[[ -n $split ]] || die "$task has no test split in $data/raw (SCAN add-jump: the test file is held out of ../shared/data/scan; give --raw-dir with add_prim_split/tasks_test_addprim_jump.txt)"
categories=$(meta categories)
if [[ ! -f $data/bin/.done ]]; then
  fairseq-preprocess --source-lang src --target-lang tgt --joined-dictionary --workers 1 \
    --trainpref "$data/raw/train" --validpref "$data/raw/valid" --testpref "$data/raw/$split" \
    --destdir "$data/bin" >"$data/preprocess.log" 2>&1 ||
    die "fairseq-preprocess failed, see $data/preprocess.log"
  touch "$data/bin/.done"
fi
n_test=$(wc -l <"$data/raw/$split.tgt")
n_train=$(wc -l <"$data/raw/train.tgt")
# Generation may stop one token after the longest reference: longer outputs are wrong anyway.
max_len=$(awk '{ if (NF > m) m = NF } END { print m + 1 }' "$data/raw/$split.tgt")

mkdir -p "$(dirname "$csv")"
for ((seed = 1; seed <= seeds; seed++)); do
  run_dir=$out/runs/$preset/$task$suffix/seed$seed
  rm -rf "$run_dir"
  mkdir -p "$run_dir"
  start=$(date +%s.%N)
  echo "compgen-run.sh: $preset $task seed $seed: training ($max_update updates) -> $run_dir" >&2
  fairseq-train "$data/bin" --user-dir "$root/fairseq_plugins" \
    --task translation_accuracy --eval-accuracy --arch "$preset" \
    --criterion cross_entropy --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 \
    --lr "$lr" --lr-scheduler inverse_sqrt --warmup-updates "$warmup" --warmup-init-lr 1e-7 \
    --dropout 0.1 --batch-size 64 --required-batch-size-multiple 1 \
    --max-update "$max_update" --seed "$seed" \
    --best-checkpoint-metric accuracy --maximize-best-checkpoint-metric \
    --save-dir "$run_dir/checkpoints" --no-epoch-checkpoints \
    --log-format simple --log-interval 100 "${extra[@]}" >"$run_dir/train.log" 2>&1 ||
    die "fairseq-train failed, see $run_dir/train.log"
  updates=$(grep -o 'num_updates [0-9]*' "$run_dir/train.log" | tail -1 | awk '{print $2}')
  [[ -f $run_dir/checkpoints/checkpoint_best.pt ]] ||
    die "no checkpoint_best.pt after training, see $run_dir/train.log"
  fairseq-generate "$data/bin" --user-dir "$root/fairseq_plugins" --task translation_accuracy \
    --path "$run_dir/checkpoints/checkpoint_best.pt" --gen-subset test --beam "$beam" \
    --batch-size 128 --required-batch-size-multiple 1 --max-len-a 0 --max-len-b "$max_len" \
    >"$run_dir/generate.out" 2>"$run_dir/generate.log" ||
    die "fairseq-generate failed, see $run_dir/generate.log"
  score_args=(--ref "$data/raw/$split.tgt" --json "$run_dir/accuracy.json")
  [[ -n $categories ]] && score_args+=(--categories "$data/raw/$categories")
  python "$root/scripts/seq-accuracy.py" "$run_dir/generate.out" "${score_args[@]}" |
    tee "$run_dir/accuracy.txt" >&2
  wall=$(python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  python - "$csv" "$run_dir/accuracy.json" "$preset" "$task" "$seed" "${updates:-0}" "$wall" \
    "$split" "$n_test" "$n_train" "$beam" "${extra[*]:-}" <<'PY'
import csv, datetime, json, os, sys
path, acc_json, *fields = sys.argv[1:]
acc = json.load(open(acc_json))["accuracy"]
header = ["preset", "task", "seed", "updates", "accuracy", "wall_seconds", "date", "split",
          "n_test", "n_train", "beam", "extra_args"]
preset, task, seed, updates, wall, split, n_test, n_train, beam, extra = fields
row = [preset, task, seed, updates, f"{acc:.6f}", wall,
       datetime.datetime.now().isoformat(timespec="seconds"), split, n_test, n_train, beam, extra]
new = not os.path.exists(path) or os.path.getsize(path) == 0
with open(path, "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(header)
    w.writerow(row)
PY
  echo "compgen-run.sh: $preset $task seed $seed: accuracy $(python -c "import json,sys; print(json.load(open(sys.argv[1]))['accuracy'])" "$run_dir/accuracy.json") after $updates updates, ${wall}s -> $csv" >&2
done
