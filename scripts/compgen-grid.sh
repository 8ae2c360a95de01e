#!/usr/bin/env bash
# The issue-13 grid: Ontañón et al.'s accuracy tables on the benchmarks we hold, plus the
# compositional-attention rows, one run at a time, resumable.
set -euo pipefail
# The body is one compound command, read whole before it runs: editing this file while the
# grid runs does not change or break the running grid (it takes effect at the next start).
{
usage() {
  cat <<'USAGE'
Usage: scripts/compgen-grid.sh [options]

Runs the whole grid of docs/compgen-results.md (issue 13) with scripts/compgen-run.sh, one
training run at a time, and appends each finished run to the results CSV. Safe to stop at any
point (kill the process group, Ctrl-C, shutdown) and to start again with the same command:
  - a cell (preset, task, seed) already in the CSV is skipped;
  - a run whose training finished but was not recorded is only evaluated;
  - an interrupted training continues from its checkpoint_last.pt (saved every 500 updates);
  - data preparation is atomic (built in DIR.partial, renamed when complete).
Order: seed 1 of every row x column first, then seed 2, then seed 3, so a partial grid is
already a table. Each grid runs one training at a time; to use more cores, start the same
command again (e.g. once per core with --threads 1): grids on the same --out share the work,
each cell is locked (OUT/locks) by the grid that runs it and skipped by the others, and data
preparation is locked too. wall_seconds then includes the sharing of the machine; cpu_seconds
does not.

The cogs-tagging column (COGS as sequence tagging, encoder-only) runs scripts/cogs-tagging-run.sh
with the tagging architecture that has the row's encoder (table TAGGING in this script; see
--list). rel2-eb and rel2-eb-c differ from rel-eb only in the decoder, so they have no tagging
cell of their own: the report shows rel-eb's. A tagging run appends one line to the same CSV
(preset = the row, task = cogs-tagging, split gen, extra_args = --arch TAGGING-ARCH ...); its
folder is OUT/cogs-tagging/runs/ROW/seedS (per-category accuracies in pred/gen.scores.json).

Two budgets (--budget):
  short  (default) the issue-13 grid: every column at the short budget below, 7 rows, the best
         checkpoint by valid accuracy (docs/compgen-grid.csv).
  paper  the authors' own budget per column (Ontañón et al.'s notebooks): Add 2 epochs, Reverse 2,
         COGS 16, Dup 4, SCAN-length 24, SCAN-add-jump 24, AddNeg 10, COGS tagging 16; an epoch is
         floor(n_train / 64) updates (their loader drops the last partial batch), Noam schedule
         with 4,000 warm-up updates at every budget, no early stopping; the FINAL checkpoint is
         reported (the paper's protocol), the best-by-valid one beside it (accuracy_best).
         Rows: compgen_abs, compgen_rel2_eb_c, compgen_comp_rel2_eb_c, compgen_comp_rel2_eb_cs
         (3 seeds) on the seq2seq columns; cogs_tagging_tuned, cogs_tagging_base and the tuned
         model with compositional attention (5 seeds) on COGS tagging. Run in blocks, each
         finished (all seeds) before the next starts: 1 COGS tagging; 2 Add, Reverse; 3 COGS,
         Dup; 4 SCAN-length, SCAN-add-jump; 5 AddNeg (docs/compgen-paper.csv, work/compgen-paper).

Options:
  --budget B       short or paper (see above; default short)
  --out DIR        data, runs, checkpoints, logs (default work/compgen-grid; paper: work/compgen-paper)
  --csv FILE       results CSV (default docs/compgen-grid.csv; paper: docs/compgen-paper.csv)
  --threads N      OMP_NUM_THREADS of every run (default 1; recorded in the CSV)
  --max-runs N     stop after N runs that trained or evaluated something (default: all)
  --only-task T    only the column T (repeatable), e.g. --only-task add
  --only-preset P  only the row P (repeatable)
  --list           print the plan (budget per column, every cell and its state) and exit
  --dry-run        print the command of every selected cell not yet in the CSV, in run order,
                   and exit (starts nothing)
  -h, --help       this text

Budget per column (fixed for every row of the column; batch 64 sentences, Adam 0.9/0.98/1e-9,
inverse_sqrt with peak lr 0.00198 after max-update/10 warm-up, dropout 0.1, greedy decoding,
validation every 500 updates and at the end, best checkpoint by valid sequence accuracy) and
rows: see --list and docs/compgen-results.md.
USAGE
}

die() {
  echo "compgen-grid.sh: $*" >&2
  exit 2
}

root=$(cd "$(dirname "$0")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH

out="" csv="" threads=1 max_runs="" list=0 dry_run=0 budget=short
only_tasks=() only_presets=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --out | --csv | --threads | --max-runs | --only-task | --only-preset | --budget)
      (($# >= 2)) || die "$1 needs a value"
      case $1 in
        --out) out=$2 ;; --csv) csv=$2 ;; --threads) threads=$2 ;; --max-runs) max_runs=$2 ;;
        --only-task) only_tasks+=("$2") ;; --only-preset) only_presets+=("$2") ;;
        --budget) budget=$2 ;;
      esac
      shift 2 ;;
    --list) list=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $threads =~ ^[0-9]+$ && $threads -ge 1 ]] || die "--threads $threads: not a positive integer"
[[ $budget =~ ^(short|paper)$ ]] || die "--budget $budget: choose short or paper"
if [[ $budget == paper ]]; then
  out=${out:-$root/work/compgen-paper} csv=${csv:-$root/docs/compgen-paper.csv}
else
  out=${out:-$root/work/compgen-grid} csv=${csv:-$root/docs/compgen-grid.csv}
fi
[[ -z $max_runs || $max_runs =~ ^[0-9]+$ ]] || die "--max-runs $max_runs: not an integer"
[[ $out == /* ]] || out=$PWD/$out
[[ $csv == /* ]] || csv=$PWD/$csv

# Columns: task | max updates | compgen-run.sh data options. Budgets are far below the paper's
# (see docs/compgen-results.md): 1,500 updates of 64 examples where the paper's abs-vs-rel2 gap
# shows (Add, AddNeg, Reverse, Dup), fewer where every row of the paper is near 0 or 0.5 or where
# sequences are long (Cart outputs up to 191 tokens, SCAN up to 48, COGS up to ~500).
# cogs: 2,000 updates (5.3 epochs of the 24,155 training sentences, about 0.15 CPU s each); at
# 700 every row measured (abs, rel-eb, rel2-eb) scored 0.000 on gen, with valid accuracy 0.35.
# cogs-tagging (scripts/cogs-tagging-run.sh, whole official splits, no data options): 4,000
# updates (10.6 epochs; the notebook's 6,000 less a third), measured at 0.03-0.04 CPU s per
# update, so one seed of its 5 models costs about 16 CPU minutes with evaluation.
# A column: task | budget (N updates, or eN: N epochs of the authors' loader) | data options |
# block (the plan runs block by block, all seeds of a block before the next).
COLUMNS=(
  "add|1500|--valid 256|1"
  "addneg|1500|--valid 256|1"
  "reverse|1500|--valid 256|1"
  "dup|1500|--valid 256|1"
  "cart|400|--valid 256 --test 512|1"
  "inters|1000|--valid 256|1"
  "scan-length|1000|--valid 500|1"
  "scan-addjump|1000|--valid 500|1"
  "cogs|2000|--valid 500 --test 2100|1"
  "cogs-tagging|4000||1"
)
# The authors' budgets (seq2seq.ipynb and cogs_tagging.ipynb, issue 21), blocks in the issue's
# order of priority. Same data options as the short grid (the valid split only picks the best
# checkpoint, reported beside the final one).
PAPER_COLUMNS=(
  "cogs-tagging|e16||1"
  "add|e2|--valid 256|2"
  "reverse|e2|--valid 256|2"
  "cogs|e16|--valid 500 --test 2100|3"
  "dup|e4|--valid 256|3"
  "scan-length|e24|--valid 500|4"
  "scan-addjump|e24|--valid 500|4"
  "addneg|e10|--valid 256|5"
)
# Rows: preset | seeds | extra fairseq-train options. The issue asks 3 seeds for abs, rel2-eb-c
# and comp-rel2-eb-c; the grid did not fit its budget (about 9 CPU hours against 5), and the
# issue's first cut is the fourth row's extra seed, so rel2-eb-c has 2. compgen_small_2s is the paper's small-2s
# of Table 4: rel2-eb-c with weight sharing (the preset alone is abs without copy decoder).
# A fourth field, when present, lists the only columns the row runs. The issue-26 rows (ALiBi, T5
# bias, RoPE, NoPE decoder, the Neural Data Router, each with the copy decoder as the best
# existing row, and one scheme with compositional attention; T5 until the grid says which scheme
# is best) run the issue's columns only, 2 seeds as rel2-eb-c: about 4.2 CPU hours.
NEW_SCHEME_COLUMNS="add addneg reverse dup scan-length cogs"
ROWS=(
  "compgen_abs|3|"
  "compgen_rel_eb|2|"
  "compgen_rel2_eb|2|"
  "compgen_rel2_eb_c|2|"
  "compgen_small_2s|2|--rel-pos eb --rel-pos-cross --copy-decoder"
  "compgen_comp_rel2_eb_c|3|"
  "compgen_comp_rel2_eb_cs|2|"
  "compgen_alibi_c|2||$NEW_SCHEME_COLUMNS"
  "compgen_t5_c|2||$NEW_SCHEME_COLUMNS"
  "compgen_rope_c|2||$NEW_SCHEME_COLUMNS"
  "compgen_rel_eb_nope_c|2||$NEW_SCHEME_COLUMNS"
  "compgen_ndr_c|2||$NEW_SCHEME_COLUMNS"
  "compgen_comp_t5_c|2||$NEW_SCHEME_COLUMNS"
)
SEQ2SEQ_COLUMNS="add reverse cogs dup scan-length scan-addjump addneg"
PAPER_ROWS=(
  "compgen_abs|3||$SEQ2SEQ_COLUMNS"
  "compgen_rel2_eb_c|3||$SEQ2SEQ_COLUMNS"
  "compgen_comp_rel2_eb_c|3||$SEQ2SEQ_COLUMNS"
  "compgen_comp_rel2_eb_cs|3||$SEQ2SEQ_COLUMNS"
  "cogs_tagging_tuned|5||cogs-tagging"
  "cogs_tagging_base|5||cogs-tagging"
  "cogs_tagging_tuned_comp|5||cogs-tagging"
)
# COGS tagging: the model is encoder-only, so each row is tagged by the tagging_transformer
# architecture with the row's encoder: row | tagging arch (or =ROW: the same encoder as ROW, whose
# tagging run stands for this row too; not trained again) | extra fairseq-train options.
# The parent head is each tagging preset's default (absolute for base, rel_eb and rel_eb_s).
# compgen_comp_rel2_eb_c's encoder: rel-eb self-attention made compositional with S = R = 4 (the
# preset's --attention-type compositional; S and R default to the 4 heads, written out here).
TAGGING=(
  "compgen_abs|cogs_tagging_base|"
  "compgen_rel_eb|cogs_tagging_rel_eb|"
  "compgen_rel2_eb|=compgen_rel_eb|"
  "compgen_rel2_eb_c|=compgen_rel_eb|"
  "compgen_small_2s|cogs_tagging_rel_eb_s|"
  "compgen_comp_rel2_eb_c|cogs_tagging_rel_eb|--attention-type compositional --num-searches 4 --num-retrievals 4"
  "compgen_comp_rel2_eb_cs|cogs_tagging_rel_eb_s|--attention-type compositional --num-searches 4 --num-retrievals 4"
  "cogs_tagging_tuned|cogs_tagging_tuned|"
  "cogs_tagging_base|cogs_tagging_base|"
  "cogs_tagging_tuned_comp|cogs_tagging_tuned|--attention-type compositional --num-searches 4 --num-retrievals 4"
)
if [[ $budget == paper ]]; then
  COLUMNS=("${PAPER_COLUMNS[@]}") ROWS=("${PAPER_ROWS[@]}")
fi
COMMON=(--cpu --save-interval-updates 500 --keep-interval-updates 1 --save-interval 1000000
  --validate-interval 1000000 --log-interval 100)

selected() { # selected VALUE FILTER...: true when no filter is given or VALUE is one of them
  local v=$1
  shift
  (($# == 0)) && return 0
  local f
  for f in "$@"; do [[ $f == "$v" ]] && return 0; done
  return 1
}

tagging_of() { # tagging_of ROW: "ARCH|OPTIONS", or "=OTHER|" when OTHER's tagging run is ROW's
  local t p a o
  for t in "${TAGGING[@]}"; do
    IFS='|' read -r p a o <<<"$t"
    [[ $p == "$1" ]] && echo "$a|$o" && return 0
  done
  return 1
}
runs_column() { # runs_column ROW TASK: true when ROW (a ROWS entry) runs column TASK
  local cols
  IFS='|' read -r _ _ _ cols <<<"$1"
  [[ -z $cols || " $cols " == *" $2 "* ]]
}
for row in "${ROWS[@]}"; do # every tagging row has a tagging entry; =OTHER names a row with its own run
  IFS='|' read -r preset _ _ <<<"$row"
  runs_column "$row" cogs-tagging || continue
  t=$(tagging_of "$preset") || die "internal: $preset has no TAGGING entry"
  if [[ $t == =* ]]; then
    t=${t#=} t=${t%%|*}
    [[ $(tagging_of "$t" || true) =~ ^cogs_tagging ]] || die "internal: TAGGING of $preset: $t has no tagging run"
  fi
done

# The plan, in order: block, then seed round, then column, then row. A cell is
# seed|task|budget|data|block|preset|seeds|extra|columns.
plan=()
max_seeds=0
for row in "${ROWS[@]}"; do
  IFS='|' read -r _ seeds _ <<<"$row"
  ((seeds > max_seeds)) && max_seeds=$seeds
done
blocks=$(for col in "${COLUMNS[@]}"; do IFS='|' read -r _ _ _ b <<<"$col"; echo "$b"; done | sort -un)
for block in $blocks; do
  for ((seed = 1; seed <= max_seeds; seed++)); do
    for col in "${COLUMNS[@]}"; do
      IFS='|' read -r task _ _ b <<<"$col"
      [[ $b == "$block" ]] || continue
      selected "$task" "${only_tasks[@]+"${only_tasks[@]}"}" || continue
      for row in "${ROWS[@]}"; do
        IFS='|' read -r preset seeds _ <<<"$row"
        selected "$preset" "${only_presets[@]+"${only_presets[@]}"}" || continue
        runs_column "$row" "$task" || continue
        [[ $task == cogs-tagging && $(tagging_of "$preset") == =* ]] && continue
        ((seed <= seeds)) && plan+=("$seed|$col|$row")
      done
    done
  done
done
((${#plan[@]})) || die "no cell matches --only-task/--only-preset"

# Cells already in the CSV: "preset task seed" lines.
done_cells() {
  [[ -s $csv ]] || return 0
  python - "$csv" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    for row in csv.DictReader(f):
        print(row["preset"], row["task"], row["seed"])
PY
}

suffix_of() { # the run folder suffix compgen-run.sh derives from the data options
  local s="" a=($1) i
  for ((i = 0; i < ${#a[@]}; i += 2)); do
    case ${a[i]} in --train) s+=-tr${a[i + 1]} ;; --valid) s+=-va${a[i + 1]} ;; --test) s+=-te${a[i + 1]} ;; esac
  done
  echo "$s"
}

# cell_command CELL: the script and arguments of a cell (array cmd) and its run folder (run_dir).
aj=$out/raw/scan-addjump
budget_args() { # budget_args BUDGET: the run script's options for a column budget
  if [[ $1 == e* ]]; then
    echo "--epochs ${1#e} --warmup 4000 --report-checkpoint last"
  else
    echo "--max-update $1"
  fi
}
cell_command() {
  local seed task updates data block preset seeds extra tag_arch tag_opts
  IFS='|' read -r seed task updates data block preset seeds extra _ <<<"$1"
  local budget_opts
  # shellcheck disable=SC2207 # plain words
  budget_opts=($(budget_args "$updates"))
  if [[ $task == cogs-tagging ]]; then
    IFS='|' read -r tag_arch tag_opts <<<"$(tagging_of "$preset")"
    # shellcheck disable=SC2206 # tag_opts is an option list of plain words
    cmd=(bash "$root/scripts/cogs-tagging-run.sh" "$tag_arch" --grid-row "$preset" --seed "$seed"
      --resume "${budget_opts[@]}" --out "$out/cogs-tagging" --csv "$csv" -- "${COMMON[@]}"
      $tag_opts)
    run_dir=$out/cogs-tagging/runs/$preset/seed$seed
    return
  fi
  local raw=()
  [[ $task == scan-addjump ]] && raw=(--raw-dir "$aj")
  # shellcheck disable=SC2206 # data and extra are option lists of plain words
  cmd=(bash "$root/scripts/compgen-run.sh" "$preset" "$task" --seed "$seed" --resume
    "${budget_opts[@]}" $data "${raw[@]+"${raw[@]}"}" --out "$out" --csv "$csv" --
    "${COMMON[@]}" $extra)
  run_dir=$out/runs/$preset/$task$(suffix_of "$data")/seed$seed
}

if ((list)); then
  echo "budget $budget; columns (task, updates or eN = N epochs, data options, block):"
  for col in "${COLUMNS[@]}"; do
    IFS='|' read -r t u d b <<<"$col"
    printf '  %-13s %5s  %-28s %s\n' "$t" "$u" "$d" "$b"
  done
  echo "rows (preset, seeds, extra options, only these columns):"
  for row in "${ROWS[@]}"; do
    IFS='|' read -r p s e c <<<"$row"
    printf '  %-24s %s  %s%s\n' "$p" "$s" "$e" "${c:+ [only: $c]}"
  done
  echo "cogs-tagging (encoder-only; row -> tagging arch with the row's encoder, extra options):"
  for row in "${ROWS[@]}"; do
    IFS='|' read -r p _ _ <<<"$row"
    runs_column "$row" cogs-tagging || continue
    IFS='|' read -r a o <<<"$(tagging_of "$p")"
    if [[ $a == =* ]]; then
      printf '  %-24s = %s (same encoder, differs in the decoder only): not trained again\n' "$p" "${a#=}"
    else
      printf '  %-24s %s%s\n' "$p" "$a" "${o:+ $o}"
    fi
  done
  finished=$(done_cells)
  n_done=0
  echo "cells in run order (state: done = in $csv, partial = has a run folder, todo):"
  for cell in "${plan[@]}"; do
    IFS='|' read -r seed task updates data _ preset seeds extra _ <<<"$cell"
    cell_command "$cell"
    state=todo
    [[ -d $run_dir ]] && state=partial
    grep -qxF "$preset $task $seed" <<<"$finished" && state=done && n_done=$((n_done + 1))
    arrow=""
    [[ $task == cogs-tagging ]] && arrow=" -> $(tagging_of "$preset" | tr '|' ' ' | sed 's/ *$//')"
    printf '  %-8s seed %s  %-13s %s%s\n' "$state" "$seed" "$task" "$preset" "$arrow"
  done
  echo "${#plan[@]} cells, $n_done done"
  exit 0
fi

if ((dry_run)); then
  finished=$(done_cells)
  for cell in "${plan[@]}"; do
    IFS='|' read -r seed task _ _ _ preset _ _ _ <<<"$cell"
    grep -qxF "$preset $task $seed" <<<"$finished" && continue
    cell_command "$cell"
    echo "${cmd[*]}"
  done
  exit 0
fi

command -v flock >/dev/null || die "flock not found (util-linux)"
mkdir -p "$out/locks"
log() { echo "$(date -u '+%F %T') compgen-grid: $*" >&2; }

# SCAN add-jump: the official test file is held out of ../shared/data/scan. Its content is
# derivable: SOURCE.md says all its 7706 lines are in tasks.txt, and tasks.txt holds every SCAN
# command once, so tasks.txt minus the lines of the add-jump train file is that test set (in
# tasks.txt order, not the official file's order). Built once, atomically, and checked.
scan=$root/../shared/data/scan
exec 8>"$out/locks/scan-addjump-test.lock"
flock 8
if [[ ! -f $aj/.done ]]; then
  [[ -f $scan/tasks.txt && -f $scan/add_prim_split/tasks_train_addprim_jump.txt ]] ||
    die "SCAN files missing under $scan"
  rm -rf "$aj.partial"
  mkdir -p "$aj.partial/add_prim_split"
  cp "$scan/add_prim_split/tasks_train_addprim_jump.txt" "$aj.partial/add_prim_split/"
  python - "$scan" "$aj.partial" <<'PY' || die "could not derive the SCAN add-jump test set"
import sys
from pathlib import Path
scan, dest = Path(sys.argv[1]), Path(sys.argv[2])
train = set((scan / "add_prim_split" / "tasks_train_addprim_jump.txt").read_text().splitlines())
test = [l for l in (scan / "tasks.txt").read_text().splitlines() if l.strip() and l not in train]
if len(test) != 7706 or len(set(test)) != 7706:
    sys.exit(f"derived {len(test)} add-jump test lines ({len(set(test))} distinct), expected 7706")
if not all(" jump " in f" {l[4:].split(' OUT: ')[0]} " for l in test):
    sys.exit("a derived add-jump test command has no `jump`")
(dest / "add_prim_split" / "tasks_test_addprim_jump.txt").write_text("\n".join(test) + "\n")
(dest / "DERIVED.md").write_text(
    "tasks_test_addprim_jump.txt derived by scripts/compgen-grid.sh: the lines of tasks.txt\n"
    "that are not in tasks_train_addprim_jump.txt (7706, all with `jump`), tasks.txt order.\n"
    "Not the official file (same content per SOURCE.md, order may differ).\n"
)
PY
  touch "$aj.partial/.done"
  rm -rf "$aj"
  mv "$aj.partial" "$aj"
  log "derived the SCAN add-jump test set (7706 lines) in $aj"
fi
exec 8>&-

export OMP_NUM_THREADS=$threads
n_ran=0 failed=() elsewhere=()
log "start: budget $budget, ${#plan[@]} cells, csv $csv, out $out, OMP_NUM_THREADS=$threads"
for cell in "${plan[@]}"; do
  IFS='|' read -r seed task updates data _ preset seeds extra _ <<<"$cell"
  if grep -qxF "$preset $task $seed" <<<"$(done_cells)"; then
    continue
  fi
  if [[ -n $max_runs ]] && ((n_ran >= max_runs)); then
    log "stopping after --max-runs $max_runs runs"
    break
  fi
  # The cell's lock, held (fd 9, inherited by the run) until the run ends; another grid on
  # this --out holding it runs the cell now. The CSV is read again once the lock is ours: the
  # other grid may have recorded the cell in between.
  exec 9>"$out/locks/$preset.$task.seed$seed.lock"
  if ! flock -n 9; then
    exec 9>&-
    elsewhere+=("seed $seed $task $preset")
    continue
  fi
  if grep -qxF "$preset $task $seed" <<<"$(done_cells)"; then
    exec 9>&-
    continue
  fi
  cell_command "$cell"
  log "run: seed $seed $task $preset ($updates updates)"
  start=$(date +%s)
  if "${cmd[@]}"; then
    log "done: seed $seed $task $preset in $(($(date +%s) - start))s"
    # Keep only the best (and, at the paper budget, the final) checkpoint of a recorded run
    # (the others are for resuming).
    keep_last=()
    [[ $updates == e* ]] && keep_last=(! -name checkpoint_last.pt)
    find "$run_dir/checkpoints" -name '*.pt' ! -name checkpoint_best.pt "${keep_last[@]}" -delete \
      2>/dev/null || true
  else
    log "FAILED: seed $seed $task $preset (see the run's train.log); continuing"
    failed+=("seed $seed $task $preset")
  fi
  exec 9>&-
  n_ran=$((n_ran + 1))
done
((${#elsewhere[@]})) && log "left to the other grid(s) on $out: ${elsewhere[*]}"
if ((${#failed[@]})); then
  log "finished with ${#failed[@]} failed run(s): ${failed[*]}"
  exit 1
fi
if ((${#elsewhere[@]})); then
  log "finished here; ${#elsewhere[@]} cell(s) were left to other grids on $out (see --list)"
else
  log "finished: every selected cell is in $csv"
fi
exit 0
}
