#!/usr/bin/env bash
# COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1): tag files -> fairseq-train ->
# predictions and both metrics on test and gen, for several seeds.
set -euo pipefail
# The body is one compound command, read whole before it runs: editing this file while a run is
# in progress (the grid of scripts/compgen-grid.sh in the background) does not change that run.
{

usage() {
  cat <<'USAGE'
Usage: scripts/cogs-tagging-run.sh [PRESET] [options] [-- extra fairseq-train args]

PRESET  a tagging_transformer --arch (default cogs_tagging_tuned): cogs_tagging_base (notebook
        "base": small-2, sinusoidal positions, absolute parent head), cogs_tagging_rel_eb,
        cogs_tagging_rel_eb_s (rel-eb small-2 / small-2s, absolute parent head),
        cogs_tagging_tuned (notebook "tuned": small-2s, rel-eb radius 16, attention parent head)

For every seed: fairseq-train (--task cogs_tagging --criterion cogs_tagging, best checkpoint by
the official valid accuracy), scripts/cogs-tagging-predict.py on test and gen with the best
checkpoint (per-category tables in RUN/predict.txt, predictions in RUN/pred/, scores with the
per-category accuracies in RUN/pred/SPLIT.scores.json; with --report-checkpoint last also with the
final checkpoint, in RUN/predict-last.txt and RUN/pred-last/), and one row per split appended to
the results CSV:
preset,task,seed,updates,split,accuracy,lf_accuracy,n_test,n_train,parent_head,wall_seconds,date,
extra_args,checkpoint
(accuracy: the official metric, all five tag rows exact; lf_accuracy: the rebuilt logical form
exact; fractions 0..1, of the checkpoint named in `checkpoint`; task is `cogs-tagging`). RUN is
OUT/runs/PRESET[-HEAD]/seedS. A CSV written before a column was added gets it (empty) first.

Options:
  --seeds N          seeds 1..N (default 1)
  --seed S           only seed S
  --resume           keep run folders: a seed already in the CSV (same preset, seed, data sizes,
                     parent head and extra args; with --grid-row: same row, seed and data sizes)
                     is skipped, a finished training (RUN/.trained) is only evaluated, and an
                     interrupted one continues from its checkpoint_last.pt (pass
                     --save-interval-updates N after `--` to checkpoint within an epoch).
                     Without it a seed starts afresh.
  --grid-row ROW     record in the layout of scripts/compgen-run.sh, for scripts/compgen-grid.sh:
                     ONE row per seed, preset,task,seed,updates,accuracy,wall_seconds,date,split,
                     n_test,n_train,beam,extra_args,threads,cpu_seconds with preset = ROW, task
                     cogs-tagging, split gen (accuracy: the official metric on gen), beam empty,
                     extra_args = `--arch PRESET` + the fairseq-train args after `--`. RUN is
                     OUT/runs/ROW/seedS. The row ends with checkpoint,accuracy_best,
                     accuracy_last as in compgen-run.sh.
  --out DIR          data, checkpoints and logs (default work/cogs-tagging)
  --csv FILE         results CSV (default results/cogs-tagging.csv)
  --max-update N     training updates (default 6000: the notebook's 16 epochs of 64 sentences)
  --epochs N         N * floor(n_train / 64) updates instead (the notebook's loader drops the last
                     partial batch): 16 epochs of the 24,155 sentences are 6,032 updates
  --report-checkpoint best|last
                     which checkpoint the CSV's accuracy is of (default best by valid accuracy;
                     last: the final one, the notebook's protocol; both are then evaluated)
  --parent-head H    absolute, relative or attention (default: the preset's)
  --lr LR            peak learning rate (default Noam: 64^-0.5 * 4000^-0.5 = 0.00198)
  --warmup N         warm-up updates (default 4000, or max-update/10 when that is smaller)
  --raw-dir DIR      COGS tsv files (default ../shared/data/cogs, see scripts/cogs-tags.py)
  -h, --help         this text

wall_seconds: training + prediction, summed over the pieces of a resumed run; cpu_seconds (grid
layout): user + system CPU time of the same commands; threads: OMP_NUM_THREADS.
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

seeds=1 only_seed="" resume=0 grid_row="" out=$root/work/cogs-tagging
csv=$root/results/cogs-tagging.csv max_update=6000 parent_head="" lr="" warmup="" raw_dir=""
epochs="" report_checkpoint=best
positional=() extra=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --seeds | --seed | --grid-row | --out | --csv | --max-update | --parent-head | --lr | \
      --warmup | --raw-dir | --epochs | --report-checkpoint)
      (($# >= 2)) || die "$1 needs a value"
      case $1 in
        --seeds) seeds=$2 ;; --seed) only_seed=$2 ;; --grid-row) grid_row=$2 ;; --out) out=$2 ;;
        --csv) csv=$2 ;; --max-update) max_update=$2 ;; --parent-head) parent_head=$2 ;;
        --lr) lr=$2 ;; --warmup) warmup=$2 ;; --raw-dir) raw_dir=$2 ;; --epochs) epochs=$2 ;;
        --report-checkpoint) report_checkpoint=$2 ;;
      esac
      shift 2 ;;
    --resume) resume=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
((${#positional[@]} <= 1)) || die "one PRESET at most (see --help)"
preset=${positional[0]:-cogs_tagging_tuned}
for pair in "seeds:$seeds" "seed:${only_seed:-1}" "max-update:$max_update" "epochs:${epochs:-1}"; do
  [[ ${pair#*:} =~ ^[0-9]+$ && ${pair#*:} -ge 1 ]] || die "--${pair%%:*} ${pair#*:}: not a positive integer"
done
[[ -z $warmup || $warmup =~ ^[0-9]+$ ]] || die "--warmup $warmup: not an integer"
[[ $report_checkpoint =~ ^(best|last)$ ]] ||
  die "--report-checkpoint $report_checkpoint: choose best or last"
[[ -z $lr || $lr =~ ^[0-9.eE+-]+$ ]] || die "--lr $lr: not a number"
[[ -z $parent_head || $parent_head =~ ^(absolute|relative|attention)$ ]] ||
  die "--parent-head $parent_head: choose from absolute, relative, attention"
[[ -z $grid_row || $grid_row =~ ^[A-Za-z0-9_.-]+$ ]] || die "--grid-row $grid_row: letters, digits, _ . - only"
[[ -z $raw_dir || -d $raw_dir ]] || die "--raw-dir $raw_dir: not a directory"
command -v fairseq-train >/dev/null || die "fairseq-train not found (run scripts/setup.sh)"

# Fail fast on an unknown --arch.
arch_check=$(python "$root/scripts/check-arch.py" "$preset" --model tagging_transformer --what tagging 2>&1) || die "$(tail -n 1 <<<"$arch_check")"

[[ -n $lr ]] || lr=$(python -c "print(f'{64 ** -0.5 * 4000 ** -0.5:.6g}')")

# Data: the tag files (absolute parents; the task maps them to every head's classes). Built in
# DATA.partial and renamed when complete; rebuilt when --raw-dir's content (a hash of its files)
# differs from the one the folder was built from.
data=$out/data
raw_key=""
if [[ -n $raw_dir ]]; then
  raw_key=$(cd "$raw_dir" && find -L . -type f -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
fi
# Two grids on one --out may reach here together: one prepares, the other waits.
mkdir -p "$out"
exec 7>"$data.lock"
! command -v flock >/dev/null || flock 7  # util-linux; without it, one grid at a time
if [[ ! -f $data/meta.json || $(cat "$data/raw-dir.key" 2>/dev/null || true) != "$raw_key" ]]; then
  rm -rf "$data.partial"
  tag_args=(--outdir "$data.partial")
  [[ -n $raw_dir ]] && tag_args+=(--raw-dir "$raw_dir")
  python "$root/scripts/cogs-tags.py" "${tag_args[@]}" || die "cogs-tags.py failed"
  [[ -n $raw_key ]] && echo "$raw_key" >"$data.partial/raw-dir.key"
  rm -rf "$data"
  mv "$data.partial" "$data"
fi
exec 7>&-
n_train=$(wc -l <"$data/train.src")
n_gen=$(wc -l <"$data/gen.src")
head_args=()
[[ -n $parent_head ]] && head_args=(--parent-head "$parent_head")
threads=$OMP_NUM_THREADS

# Is this seed already a row of the CSV (see --resume)?
recorded() {
  [[ -s $csv ]] || return 1
  python - "$csv" "$1" "$grid_row" "$preset" "$n_train" "$n_gen" "$parent_head" "${extra[*]:-}" <<'PY'
import csv, sys
path, seed, row, preset, n_train, n_gen, head, extra = sys.argv[1:]
with open(path, newline="") as f:
    for r in csv.DictReader(f):
        key = [r.get(k) for k in ("task", "seed", "split", "n_train", "n_test")]
        if key != ["cogs-tagging", seed, "gen", n_train, n_gen]:
            continue
        if row and r.get("preset") == row:
            sys.exit(0)
        if not row and r.get("preset") == preset and r.get("extra_args") == extra and (
            not head or r.get("parent_head") == head
        ):
            sys.exit(0)
sys.exit(1)
PY
}

prog=cogs-tagging-run.sh
source "$root/scripts/lib/run-pieces.sh"  # set_budget, seed_range, start_seed, train_seed,
# end_training, end_piece, total; traps
set_budget "$n_train"

seed_range
mkdir -p "$(dirname "$csv")"
for ((seed = first_seed; seed <= last_seed; seed++)); do
  if [[ -n $grid_row ]]; then
    run_dir=$out/runs/$grid_row/seed$seed
  else
    run_dir=$out/runs/$preset${parent_head:+-$parent_head}/seed$seed
  fi
  start_seed "$preset" || continue
  if ((need_training)); then
    train_seed "$data" --task cogs_tagging --criterion cogs_tagging --arch "$preset" \
      "${head_args[@]}"
  fi
  end_training
  evaluated_checkpoints
  for which in "${checkpoints[@]}"; do
    sfx=""
    [[ $which == last ]] && sfx=-last
    python "$root/scripts/cogs-tagging-predict.py" "$data" "$run_dir/checkpoints/checkpoint_$which.pt" \
      --split test --split gen --outdir "$run_dir/pred$sfx" >"$run_dir/predict$sfx.txt" \
      2>"$run_dir/predict$sfx.log" || die "cogs-tagging-predict.py failed, see $run_dir/predict$sfx.log"
    grep -E '^(test|gen):' "$run_dir/predict$sfx.txt" | sed "s/^/$which checkpoint, /" >&2
  done
  end_piece
  wall=$(total "$run_dir/wall.pieces")
  cpu=$(total "$run_dir/cpu.pieces")
  head_used=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['parent_head'])" "$run_dir/pred/test.scores.json")
  RESULTS_CSV_LIB=$root/scripts/lib python - "$csv" "$run_dir" "$report_checkpoint" "$grid_row" "$preset" "$seed" "${updates:-0}" \
    "$n_train" "$head_used" "$wall" "${extra[*]:-}" "$threads" "$cpu" "$parent_head" <<'PY' || die "could not append to $csv"
import datetime, json, os, sys
sys.path.insert(0, os.environ["RESULTS_CSV_LIB"])
import results_csv
path, run_dir, report, row, preset, seed, updates, n_train, head, wall, extra, threads, cpu, head_opt = (
    sys.argv[1:]
)
now = datetime.datetime.now().isoformat(timespec="seconds")
def scores_of(pred):
    return {s: json.load(open(os.path.join(run_dir, pred, f"{s}.scores.json"))) for s in ("test", "gen")}
best = scores_of("pred")
last = scores_of("pred-last") if report == "last" else None
scores = last if report == "last" else best
if row:  # the layout of scripts/compgen-run.sh (docs/compgen-grid.csv)
    header = ["preset", "task", "seed", "updates", "accuracy", "wall_seconds", "date", "split",
              "n_test", "n_train", "beam", "extra_args", "threads", "cpu_seconds", "checkpoint",
              "accuracy_best", "accuracy_last"]
    args = " ".join(["--arch", preset] + (["--parent-head", head_opt] if head_opt else [])
                    + ([extra] if extra else []))
    g = scores["gen"]
    rows = [[row, "cogs-tagging", seed, updates, f"{g['accuracy']:.6f}", wall, now, "gen",
             g["total"], n_train, "", args, threads, cpu, report,
             f"{best['gen']['accuracy']:.6f}", f"{last['gen']['accuracy']:.6f}" if last else ""]]
else:
    header = ["preset", "task", "seed", "updates", "split", "accuracy", "lf_accuracy", "n_test",
              "n_train", "parent_head", "wall_seconds", "date", "extra_args", "checkpoint"]
    rows = [[preset, "cogs-tagging", seed, updates, s, f"{v['accuracy']:.6f}",
             f"{v['lf_accuracy']:.6f}", v["total"], n_train, head, wall, now, extra, report]
            for s, v in scores.items()]
try:
    results_csv.append_rows(path, header, rows)
except results_csv.HeaderError as e:
    sys.exit(f"cogs-tagging-run.sh: {e}")
PY
  echo "cogs-tagging-run.sh: $preset${grid_row:+ ($grid_row)} seed $seed: $(grep -E '^(test|gen):' "$run_dir/predict${sfx}.txt" | tr '\n' ' ')($report_checkpoint checkpoint) after $updates updates, ${wall}s (CPU ${cpu}s) -> $csv" >&2
done
}; exit
