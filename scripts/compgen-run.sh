#!/usr/bin/env bash
# Train and evaluate one preset on one compositional-generalization task, for several seeds.
set -euo pipefail
# The body is one compound command, read whole before it runs: editing this file while a run is
# in progress (a grid in the background) does not change or break that run.
{

usage() {
  cat <<'USAGE'
Usage: scripts/compgen-run.sh PRESET TASK [options] [-- extra fairseq-train args]

PRESET  a fairseq --arch, e.g. compgen_rel2_eb_c, compgen_small_2s, compgen_large_6 (or transformer)
TASK    a scripts/compgen-data.py task: add addneg reverse dup cart inters scan-length scan-addjump
        scan-length-cutoff-N cogs pcfg-productivity pcfg-systematicity

For every seed: fairseq-train (--task translation_accuracy --eval-accuracy, best checkpoint by
valid sequence accuracy), fairseq-generate on the task's test split (COGS: gen) with the best
checkpoint (and with the final one, see --report-checkpoint), scripts/seq-accuracy.py, and one row
appended to the results CSV:
preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,extra_args,threads,
cpu_seconds,checkpoint,accuracy_best,accuracy_last (accuracy: fraction 0..1, of the checkpoint
named in `checkpoint`; accuracy_best / accuracy_last: each checkpoint's, empty when not evaluated;
wall_seconds: training + generation, summed over resumed pieces; threads: OMP_NUM_THREADS of the
run; cpu_seconds: user + system CPU time of the same commands, which unlike the wall time does not
grow when other jobs share the CPU).

Options:
  --seeds N          seeds 1..N (default 1; the paper averages 5 repetitions)
  --seed S           only seed S
  --resume           keep run folders: a seed already in the CSV (same preset, task, seed, data
                     sizes) is skipped, a finished training is only evaluated, and an interrupted
                     one continues from its checkpoint_last.pt (pass --save-interval-updates N
                     after `--` to checkpoint within an epoch). Without it a seed starts afresh.
  --out DIR          data, checkpoints and logs (default work/compgen)
  --csv FILE         results CSV (default results/compgen.csv)
  --max-update N     training updates (default 20000)
  --epochs N         train N epochs of the authors' loader instead: N * floor(n_train / 64)
                     updates (their loader drops the last partial batch; fairseq's does not, so
                     the count of updates, not of fairseq epochs, is what matches them)
  --report-checkpoint best|last
                     which checkpoint's accuracy the CSV's `accuracy` holds (default best: the
                     best by valid accuracy; last: the final one, the paper's protocol). With
                     last, both are evaluated and recorded (accuracy_best, accuracy_last).
  --small            small data sets (compgen-data.py --small: 1000 train, 100 valid, 100 test)
  --train N, --valid N, --test N
                     data set sizes (compgen-data.py --train/--valid/--test; COGS: --test
                     subsamples the gen split too)
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

seeds=1 only_seed="" resume=0 out=$root/work/compgen csv=$root/results/compgen.csv max_update=20000
small=0 beam=1 lr="" warmup="" raw_dir="" data_seed=1 n_train_opt="" n_valid_opt="" n_test_opt=""
epochs="" report_checkpoint=best
positional=() extra=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --seeds | --seed | --out | --csv | --max-update | --beam | --lr | --warmup | --raw-dir | \
      --data-seed | --train | --valid | --test | --epochs | --report-checkpoint)
      (($# >= 2)) || die "$1 needs a value"
      case $1 in
        --seeds) seeds=$2 ;; --seed) only_seed=$2 ;; --out) out=$2 ;; --csv) csv=$2 ;;
        --max-update) max_update=$2 ;; --beam) beam=$2 ;; --lr) lr=$2 ;; --warmup) warmup=$2 ;;
        --raw-dir) raw_dir=$2 ;; --data-seed) data_seed=$2 ;; --train) n_train_opt=$2 ;;
        --valid) n_valid_opt=$2 ;; --test) n_test_opt=$2 ;; --epochs) epochs=$2 ;;
        --report-checkpoint) report_checkpoint=$2 ;;
      esac
      shift 2 ;;
    --small) small=1; shift ;;
    --resume) resume=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
((${#positional[@]} == 2)) || die "need PRESET and TASK (see --help)"
preset=${positional[0]} task=${positional[1]}
for pair in "seeds:$seeds" "max-update:$max_update" "beam:$beam" "data-seed:$data_seed" \
  "seed:${only_seed:-1}" "train:${n_train_opt:-1}" "valid:${n_valid_opt:-1}" "test:${n_test_opt:-1}" \
  "epochs:${epochs:-1}"; do
  [[ ${pair#*:} =~ ^[0-9]+$ && ${pair#*:} -ge 1 ]] || die "--${pair%%:*} ${pair#*:}: not a positive integer"
done
[[ -z $warmup || $warmup =~ ^[0-9]+$ ]] || die "--warmup $warmup: not an integer"
[[ $report_checkpoint =~ ^(best|last)$ ]] ||
  die "--report-checkpoint $report_checkpoint: choose best or last"
[[ -z $lr || $lr =~ ^[0-9.eE+-]+$ ]] || die "--lr $lr: not a number"
[[ -z $raw_dir || -d $raw_dir ]] || die "--raw-dir $raw_dir: not a directory"
command -v fairseq-train >/dev/null || die "fairseq-train not found (run scripts/setup.sh)"

# Fail fast on an unknown --arch (fairseq-train would say so only after data preparation).
arch_check=$(python "$root/scripts/check-arch.py" "$preset" --list-prefix compgen 2>&1) || die "$(tail -n 1 <<<"$arch_check")"

# Learning rate (paper: Noam schedule; the warm-up is set once the data size is known).
if [[ -z $lr ]]; then
  d=64
  [[ $preset == compgen_large* ]] && d=128
  lr=$(python -c "print(f'{$d ** -0.5 * 4000 ** -0.5:.6g}')")
fi


# Data: generate/load once per (task, sizes, data seed), binarize with a joined dictionary.
# Built in a scratch folder and renamed when complete, so an interrupted preparation leaves
# nothing that looks finished.
suffix=""
((small)) && suffix=-small
[[ -n $n_train_opt ]] && suffix+=-tr$n_train_opt
[[ -n $n_valid_opt ]] && suffix+=-va$n_valid_opt
[[ -n $n_test_opt ]] && suffix+=-te$n_test_opt
data=$out/data/$task$suffix-s$data_seed
# --raw-dir may point at different files than the cached copy: rebuild when their content
# (a hash of every file under it) differs from the one the copy was built from.
raw_key=""
if [[ -n $raw_dir ]]; then
  raw_key=$(cd "$raw_dir" && find -L . -type f -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
fi
# Two grids on one --out may reach here together: one prepares, the other waits.
mkdir -p "$out/data"
exec 7>"$data.lock"
! command -v flock >/dev/null || flock 7  # util-linux; without it, one grid at a time
if [[ ! -f $data/bin/.done || $(cat "$data/raw-dir.key" 2>/dev/null || true) != "$raw_key" ]]; then
  tmp=$data.partial
  rm -rf "$tmp"
  data_args=(--seed "$data_seed")
  ((small)) && data_args+=(--small)
  [[ -n $n_train_opt ]] && data_args+=(--train "$n_train_opt")
  [[ -n $n_valid_opt ]] && data_args+=(--valid "$n_valid_opt")
  [[ -n $n_test_opt ]] && data_args+=(--test "$n_test_opt")
  [[ -n $raw_dir ]] && data_args+=(--raw-dir "$raw_dir")
  python "$root/scripts/compgen-data.py" "$task" "$tmp/raw" "${data_args[@]}"
  eval_split=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['eval_split'] or '')" "$tmp/raw/meta.json")
  [[ -n $eval_split ]] || die "$task has no test split in $tmp/raw (SCAN add-jump: the test file is held out of ../shared/data/scan; give --raw-dir with add_prim_split/tasks_test_addprim_jump.txt)"
  fairseq-preprocess --source-lang src --target-lang tgt --joined-dictionary --workers 1 \
    --trainpref "$tmp/raw/train" --validpref "$tmp/raw/valid" --testpref "$tmp/raw/$eval_split" \
    --destdir "$tmp/bin" >"$tmp/preprocess.log" 2>&1 ||
    die "fairseq-preprocess failed, see $tmp/preprocess.log"
  [[ -n $raw_key ]] && echo "$raw_key" >"$tmp/raw-dir.key"
  touch "$tmp/bin/.done"
  rm -rf "$data"
  mv "$tmp" "$data"
fi
exec 7>&-
meta() { python -c "import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print('' if v is None else v)" "$data/raw/meta.json" "$1"; }
split=$(meta eval_split)
categories=$(meta categories)
n_test=$(wc -l <"$data/raw/$split.tgt")
n_train=$(wc -l <"$data/raw/train.tgt")
# Generation may stop one token after the longest reference: longer outputs are wrong anyway.
max_len=$(awk '{ if (NF > m) m = NF } END { print m + 1 }' "$data/raw/$split.tgt")
threads=$OMP_NUM_THREADS

# Is (preset, task, seed) with these data sizes already a row of the CSV?
recorded() {
  [[ -s $csv ]] || return 1
  python - "$csv" "$preset" "$task" "$1" "$n_train" "$n_test" <<'PY'
import csv, sys
path, *key = sys.argv[1:]
with open(path, newline="") as f:
    for row in csv.DictReader(f):
        if [row.get(k) for k in ("preset", "task", "seed", "n_train", "n_test")] == key:
            sys.exit(0)
sys.exit(1)
PY
}

prog=compgen-run.sh
source "$root/scripts/lib/run-pieces.sh"  # set_budget, seed_range, start_seed, train_seed,
# end_training, end_piece, total; traps
set_budget "$n_train"

seed_range
mkdir -p "$(dirname "$csv")"
for ((seed = first_seed; seed <= last_seed; seed++)); do
  run_dir=$out/runs/$preset/$task$suffix/seed$seed
  start_seed "$preset $task" || continue
  if ((need_training)); then
    train_seed "$data/bin" --task translation_accuracy --eval-accuracy --arch "$preset" \
      --criterion cross_entropy
  fi
  end_training
  # The best checkpoint's files keep their names (generate.out, accuracy.json); the final
  # checkpoint's get a -last suffix.
  evaluated_checkpoints
  for which in "${checkpoints[@]}"; do
    sfx=""
    [[ $which == last ]] && sfx=-last
    fairseq-generate "$data/bin" --user-dir "$root/fairseq_plugins" --task translation_accuracy \
      --path "$run_dir/checkpoints/checkpoint_$which.pt" --gen-subset test --beam "$beam" \
      --batch-size 128 --required-batch-size-multiple 1 --max-len-a 0 --max-len-b "$max_len" \
      >"$run_dir/generate$sfx.out" 2>"$run_dir/generate$sfx.log" ||
      die "fairseq-generate failed, see $run_dir/generate$sfx.log"
    score_args=(--ref "$data/raw/$split.tgt" --json "$run_dir/accuracy$sfx.json")
    [[ -n $categories ]] && score_args+=(--categories "$data/raw/$categories")
    python "$root/scripts/seq-accuracy.py" "$run_dir/generate$sfx.out" "${score_args[@]}" |
      tee "$run_dir/accuracy$sfx.txt" >&2
  done
  end_piece
  wall=$(total "$run_dir/wall.pieces")
  cpu=$(total "$run_dir/cpu.pieces")
  RESULTS_CSV_LIB=$root/scripts/lib python - "$csv" "$run_dir" "$report_checkpoint" "$preset" "$task" "$seed" "${updates:-0}" \
    "$wall" "$split" "$n_test" "$n_train" "$beam" "${extra[*]:-}" "$threads" "$cpu" <<'PY' || die "could not append to $csv"
import datetime, json, os, sys
sys.path.insert(0, os.environ["RESULTS_CSV_LIB"])
import results_csv
path, run_dir, report, *fields = sys.argv[1:]
acc = {}
for which, sfx in (("best", ""), ("last", "-last")):
    if report == "last" or which == "best":
        acc[which] = f"{json.load(open(os.path.join(run_dir, f'accuracy{sfx}.json')))['accuracy']:.6f}"
header = ["preset", "task", "seed", "updates", "accuracy", "wall_seconds", "date", "split",
          "n_test", "n_train", "beam", "extra_args", "threads", "cpu_seconds", "checkpoint",
          "accuracy_best", "accuracy_last"]
preset, task, seed, updates, wall, split, n_test, n_train, beam, extra, threads, cpu = fields
row = [preset, task, seed, updates, acc[report], wall,
       datetime.datetime.now().isoformat(timespec="seconds"), split, n_test, n_train, beam, extra,
       threads, cpu, report, acc["best"], acc.get("last", "")]
try:
    results_csv.append_rows(path, header, [row])
except results_csv.HeaderError as e:
    sys.exit(f"compgen-run.sh: {e}")
PY
  reported=$run_dir/accuracy.json
  [[ $report_checkpoint == last ]] && reported=$run_dir/accuracy-last.json
  echo "compgen-run.sh: $preset $task seed $seed: accuracy $(python -c "import json,sys; print(json.load(open(sys.argv[1]))['accuracy'])" "$reported") ($report_checkpoint checkpoint) after $updates updates, ${wall}s (CPU ${cpu}s) -> $csv" >&2
done
}; exit
