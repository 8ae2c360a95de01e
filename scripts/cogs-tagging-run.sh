#!/usr/bin/env bash
# COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1): tag files -> fairseq-train ->
# predictions and both metrics on test and gen, for several seeds.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/cogs-tagging-run.sh [PRESET] [options] [-- extra fairseq-train args]

PRESET  a tagging_transformer --arch (default cogs_tagging_tuned): cogs_tagging_base (notebook
        "base": small-2, sinusoidal positions, absolute parent head), cogs_tagging_rel_eb,
        cogs_tagging_rel_eb_s (Table 5's rel-eb small-2 / small-2s), cogs_tagging_tuned (notebook
        "tuned": small-2s, rel-eb radius 16, attention parent head)

For every seed: fairseq-train (--task cogs_tagging --criterion cogs_tagging, best checkpoint by
the official valid accuracy), scripts/cogs-tagging-predict.py on test and gen with the best
checkpoint (per-category tables in RUN/predict.txt, predictions in RUN/pred/), and one row per
split appended to the results CSV:
preset,task,seed,updates,split,accuracy,lf_accuracy,n_test,n_train,parent_head,wall_seconds,date,extra_args
(accuracy: the official metric, all five tag rows exact; lf_accuracy: the rebuilt logical form
exact; fractions 0..1; task is `cogs-tagging`).

Options:
  --seeds N          seeds 1..N (default 1)
  --out DIR          data, checkpoints and logs (default work/cogs-tagging)
  --csv FILE         results CSV (default results/cogs-tagging.csv)
  --max-update N     training updates (default 6000: the notebook's 16 epochs of 64 sentences)
  --parent-head H    absolute, relative or attention (default: the preset's)
  --lr LR            peak learning rate (default Noam: 64^-0.5 * 4000^-0.5 = 0.00198)
  --warmup N         warm-up updates (default 4000, or max-update/10 when that is smaller)
  --raw-dir DIR      COGS tsv files (default ../shared/data/cogs, see scripts/cogs-tags.py)
  -h, --help         this text

Notebook defaults used: Adam (0.9, 0.98, 1e-9), Noam schedule, dropout 0.1, batch 64 sentences.
Arguments after `--` go to fairseq-train last (they win).
USAGE
}

die() {
  echo "cogs-tagging-run.sh: $*" >&2
  exit 2
}

root=$(cd "$(dirname "$0")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

seeds=1 out=$root/work/cogs-tagging csv=$root/results/cogs-tagging.csv max_update=6000
parent_head="" lr="" warmup="" raw_dir=""
positional=() extra=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --seeds | --out | --csv | --max-update | --parent-head | --lr | --warmup | --raw-dir)
      (($# >= 2)) || die "$1 needs a value"
      case $1 in
        --seeds) seeds=$2 ;; --out) out=$2 ;; --csv) csv=$2 ;; --max-update) max_update=$2 ;;
        --parent-head) parent_head=$2 ;; --lr) lr=$2 ;; --warmup) warmup=$2 ;;
        --raw-dir) raw_dir=$2 ;;
      esac
      shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
((${#positional[@]} <= 1)) || die "one PRESET at most (see --help)"
preset=${positional[0]:-cogs_tagging_tuned}
for pair in "seeds:$seeds" "max-update:$max_update"; do
  [[ ${pair#*:} =~ ^[0-9]+$ && ${pair#*:} -ge 1 ]] || die "--${pair%%:*} ${pair#*:}: not a positive integer"
done
[[ -z $warmup || $warmup =~ ^[0-9]+$ ]] || die "--warmup $warmup: not an integer"
[[ -z $lr || $lr =~ ^[0-9.eE+-]+$ ]] || die "--lr $lr: not a number"
[[ -z $parent_head || $parent_head =~ ^(absolute|relative|attention)$ ]] ||
  die "--parent-head $parent_head: choose from absolute, relative, attention"
[[ -z $raw_dir || -d $raw_dir ]] || die "--raw-dir $raw_dir: not a directory"
command -v fairseq-train >/dev/null || die "fairseq-train not found (run scripts/setup.sh)"

# Fail fast on an unknown --arch.
arch_check=$(python - "$root" "$preset" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
try:
    import fairseq_plugins  # noqa: F401
except Exception as e:
    print(f"importing fairseq_plugins failed: {type(e).__name__}: {e}")
    sys.exit(1)
from fairseq.models import ARCH_MODEL_NAME_REGISTRY as R
if R.get(sys.argv[2]) != "tagging_transformer":
    archs = " ".join(sorted(a for a, m in R.items() if m == "tagging_transformer"))
    print(f"unknown tagging --arch {sys.argv[2]} (registered: {archs})")
    sys.exit(1)
PY
) || die "$(tail -n 1 <<<"$arch_check")"

if [[ -z $warmup ]]; then
  warmup=$((max_update / 10 < 4000 ? max_update / 10 : 4000))
  ((warmup >= 1)) || warmup=1
fi
[[ -n $lr ]] || lr=$(python -c "print(f'{64 ** -0.5 * 4000 ** -0.5:.6g}')")

# Data: the tag files (absolute parents; the task maps them to every head's classes).
data=$out/data
if [[ ! -f $data/meta.json || -n $raw_dir ]]; then
  rm -rf "$data"
  tag_args=(--outdir "$data")
  [[ -n $raw_dir ]] && tag_args+=(--raw-dir "$raw_dir")
  python "$root/scripts/cogs-tags.py" "${tag_args[@]}"
fi
n_train=$(wc -l <"$data/train.src")
head_args=()
[[ -n $parent_head ]] && head_args=(--parent-head "$parent_head")

mkdir -p "$(dirname "$csv")"
for ((seed = 1; seed <= seeds; seed++)); do
  run_dir=$out/runs/$preset${parent_head:+-$parent_head}/seed$seed
  rm -rf "$run_dir"
  mkdir -p "$run_dir"
  start=$(date +%s.%N)
  echo "cogs-tagging-run.sh: $preset seed $seed: training ($max_update updates) -> $run_dir" >&2
  fairseq-train "$data" --user-dir "$root/fairseq_plugins" \
    --task cogs_tagging --criterion cogs_tagging --arch "$preset" "${head_args[@]}" \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 \
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
  python "$root/scripts/cogs-tagging-predict.py" "$data" "$run_dir/checkpoints/checkpoint_best.pt" \
    --split test --split gen --outdir "$run_dir/pred" >"$run_dir/predict.txt" 2>"$run_dir/predict.log" ||
    die "cogs-tagging-predict.py failed, see $run_dir/predict.log"
  grep -E '^(test|gen):' "$run_dir/predict.txt" >&2
  wall=$(python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  head_used=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['parent_head'])" "$run_dir/pred/test.scores.json")
  python - "$csv" "$run_dir/pred" "$preset" "$seed" "${updates:-0}" "$n_train" "$head_used" "$wall" \
    "${extra[*]:-}" <<'PY'
import csv, datetime, json, os, sys
path, pred, preset, seed, updates, n_train, head, wall, extra = sys.argv[1:]
header = ["preset", "task", "seed", "updates", "split", "accuracy", "lf_accuracy", "n_test",
          "n_train", "parent_head", "wall_seconds", "date", "extra_args"]
new = not os.path.exists(path) or os.path.getsize(path) == 0
now = datetime.datetime.now().isoformat(timespec="seconds")
with open(path, "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(header)
    for split in ("test", "gen"):
        s = json.load(open(os.path.join(pred, f"{split}.scores.json")))
        w.writerow([preset, "cogs-tagging", seed, updates, split, f"{s['accuracy']:.6f}",
                    f"{s['lf_accuracy']:.6f}", s["total"], n_train, head, wall, now, extra])
PY
  echo "cogs-tagging-run.sh: $preset seed $seed: $(grep -E '^(test|gen):' "$run_dir/predict.txt" | tr '\n' ' ')after $updates updates, ${wall}s -> $csv" >&2
done
