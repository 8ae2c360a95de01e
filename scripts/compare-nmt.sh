#!/usr/bin/env bash
# Train, decode and compare NMT systems: one markdown report with paired significance tests.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/compare-nmt.sh [options] CONFIG...

Each CONFIG is a small shell-variables file (see configs/nmt/multi30k-ende-*.sh):
  NAME        system name (unique; also its folder under --out)
  ARCH        fairseq arch (transformer, compositional_transformer, graph_transformer, ...)
  DATA        fairseq-preprocess'd folder (e.g. from scripts/prepare-multi30k.sh OUTDIR: OUTDIR/bin)
  SRC, TGT    language pair (default: the single pair found in DATA)
  TRAIN_ARGS  bash array (or string) of fairseq-train arguments
  BEAM LENPEN beam settings; default the paper's: beam 5 for De-En, beam 4 + lenpen 0.6 otherwise
  GEN_ARGS    bash array (or string) of extra fairseq-generate arguments (e.g. --remove-bpe)
A selection config instead sets NAME, SELECT_FROM (bash array of candidate CONFIGs, paths
relative to the selection config's folder) and SELECT_EPOCHS (K): every candidate trains K
epochs (OUT/NAME/select/CANDIDATE, first seed), the one with the lowest validation loss wins
(OUT/NAME/selection.txt) and the system continues its run (same checkpoint) to the full recipe;
further seeds train the winner from scratch.

For every config (and seed) in turn: fairseq-train --user-dir fairseq_plugins, fairseq-generate
with checkpoint_best.pt on the test subset; then scripts/significance.sh (BLEU, chrF, tok-BLEU;
paired bootstrap and approximate randomization) of every system against the first one, per seed,
scripts/plot-curves.py of the validation loss, and OUT/REPORT.md.

Two processes started with the same command (one per core) share the work: each run folder
is locked while it trains or decodes, a process skips the runs another holds, and both wait for
every run before the significance tests and the report.

Resumable: a run whose training finished (RUN/train.done) is not trained again; an unfinished
one resumes from RUN/checkpoints/checkpoint_last.pt (the log is appended to RUN/train.log); a
decoding that finished after the last training (RUN/generate.done) is reused. Delete a run's
folder (and its --archive folder) to redo it.

Options:
  --out DIR          output folder (default outputs/compare-nmt)
  --data DIR         use DIR as DATA for every config (overrides the configs)
  --seeds LIST       comma-separated training seeds (e.g. 1,2): runs go to OUT/NAME/seedS, the
                     seed is appended to TRAIN_ARGS (--seed S), significance is per seed.
                     Default: the configs' own seed, runs in OUT/NAME.
  --train-args STR   extra fairseq-train arguments for every system (after the config's; later
                     flags win), e.g. "--max-update 50" for a smoke run
  --tensorboard      also log training to TensorBoard: --tensorboard-logdir OUT/tensorboard/RUN
  --select-epochs K  override the selection configs' SELECT_EPOCHS (e.g. 1 for a smoke run)
  --subset NAME      subset to decode and score (default test)
  --batch-size N     fairseq-generate batch size (default 128)
  --skip-train       do not train; use the checkpoints already in OUT/NAME/checkpoints
  --archive DIR      keep finished runs in DIR (e.g. a committed folder): every run, once decoded,
                     is saved to DIR/NAME/[seedS/] (its logs, hypotheses, times and done markers,
                     not its checkpoints; scripts/experiment.py run-archive), and a run OUT lacks
                     is restored from there first, so it is neither trained nor decoded again
  --detokenized      the hypotheses/references are detokenized text (default: fairseq's H-/T-
                     lines are tokenized text, scored with significance.sh --tokenized)
  --doc FILE         also write a results document (scripts/study-report.py nmt) to FILE
  --smoke            label that document "smoke run, not results"
  --resamples N, --trials N, --seed N, --moses, --no-chrf   passed to scripts/significance.sh
USAGE
}

prog=compare-nmt.sh
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"  # die, root, PATH; the shared steps
user_dir=${FAIRSEQ_USER_DIR:-$root/fairseq_plugins}  # --user-dir; FAIRSEQ_USER_DIR overrides

out=outputs/compare-nmt data_override="" subset=test bsz=128 skip_train=0 tokenized=1
seeds_arg="" extra_str="" tensorboard=0 doc="" smoke=0 select_epochs="" archive=""
sig_args=() configs=() invocation=("$0" "$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --subset) [[ -n ${2:-} ]] || die "--subset needs a value"; subset=$2; shift 2 ;;
    --batch-size) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--batch-size needs a positive integer"; bsz=$2; shift 2 ;;
    --seeds) [[ ${2:-} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--seeds needs comma-separated positive integers (e.g. 1,2)"
      seeds_arg=$2; shift 2 ;;
    --select-epochs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--select-epochs needs a positive integer"; select_epochs=$2; shift 2 ;;
    --detokenized) tokenized=0; shift ;;
    --archive) [[ -n ${2:-} ]] || die "--archive needs a folder"; archive=$2; shift 2 ;;
    --resamples|--trials|--seed)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 needs a positive integer"; sig_args+=("$1" "$2"); shift 2 ;;
    --moses|--no-chrf) sig_args+=("$1"); shift ;;
    *) compare_option "$@"; shift "$taken" ;;
  esac
done
compare_options_done
for tool in fairseq-train fairseq-generate; do
  command -v "$tool" >/dev/null || die "$tool not on PATH (run scripts/setup.sh)"
done
seeds=("")
[[ -n $seeds_arg ]] && IFS=, read -r -a seeds <<<"$seeds_arg"
if [[ ${#seeds[@]} -gt 1 ]]; then
  for ((i = 0; i < ${#seeds[@]}; i++)); do
    for ((j = i + 1; j < ${#seeds[@]}; j++)); do
      [[ ${seeds[$i]} != "${seeds[$j]}" ]] || die "--seeds: seed ${seeds[$i]} given twice"
    done
  done
fi

# load_config CONFIG: sets NAME ARCH DATA SRC TGT BEAM LENPEN TRAIN_ARGS GEN_ARGS (validated) and,
# for a selection config, SELECT_FROM (absolute paths) and SELECT_EPOCHS
load_config() {
  local cfg=$1
  [[ -f $cfg ]] || die "$cfg: no such config file"
  NAME="" ARCH="" DATA="" SRC="" TGT="" BEAM="" LENPEN="" SELECT_EPOCHS=""
  TRAIN_ARGS=() GEN_ARGS=() SELECT_FROM=()
  # shellcheck disable=SC1090
  source "$cfg" || die "$cfg: could not be sourced"
  [[ ${#SELECT_FROM[@]} -gt 0 && -n $select_epochs ]] && SELECT_EPOCHS=$select_epochs
  [[ -n $NAME ]] || die "$cfg: does not set NAME"
  [[ $NAME =~ ^[A-Za-z0-9._+-]+$ ]] || die "$cfg: NAME '$NAME' may only use letters, digits and ._+-"
  if [[ ${#SELECT_FROM[@]} -gt 0 ]]; then
    [[ $SELECT_EPOCHS =~ ^[1-9][0-9]*$ ]] || die "$cfg: SELECT_FROM needs SELECT_EPOCHS (a positive integer)"
    local sel_name=$NAME sel_epochs=$SELECT_EPOCHS dir cands=() c
    dir=$(cd "$(dirname "$cfg")" && pwd)
    for c in "${SELECT_FROM[@]}"; do
      [[ $c == /* ]] || c=$dir/$c
      cands+=("$c")
    done
    for c in "${cands[@]}"; do  # validate the candidates
      load_config "$c"
      [[ ${#SELECT_FROM[@]} -eq 0 ]] || die "$cfg: candidate $c is itself a selection config"
    done
    NAME=$sel_name SELECT_EPOCHS=$sel_epochs SELECT_FROM=("${cands[@]}")
    return 0
  fi
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

# best_valid_loss LOG: the lowest validation loss in a fairseq-train log (empty if none)
best_valid_loss() {
  grep -E '\| valid \|' "$1" 2>/dev/null | grep -oE '\| loss [0-9.]+' | awk '{print $3}' | sort -g | head -n 1 || true
}

# train_run DIR TB_NAME ARGS...: fairseq-train into DIR (skipped when DIR/train.done exists;
# resumes from DIR/checkpoints/checkpoint_last.pt), log appended to DIR/train.log
train_run() {
  local dir=$1 tb=$2; shift 2
  local cmd=(fairseq-train "$DATA" --user-dir "$user_dir" --task translation
    --source-lang "$SRC" --target-lang "$TGT" --arch "$ARCH" --save-dir "$dir/checkpoints"
    --log-format simple "$@")
  [[ $tensorboard == 1 ]] && cmd+=(--tensorboard-logdir "$out/tensorboard/$tb")
  mkdir -p "$dir/checkpoints"
  { printf '%q ' "${cmd[@]}"; echo; } > "$dir/train-command.txt"
  if [[ -f $dir/train.done ]]; then
    echo "compare-nmt.sh: [$tb] already trained ($dir/train.done)" >&2
    return 0
  fi
  training_starts "$tb" "$dir" "$dir/checkpoints"
  # wall and CPU (user + sys) seconds of fairseq-train, summed over attempts: on a shared machine
  # the CPU seconds are what the run would take alone (one thread)
  python "$root/scripts/experiment.py" timed "$dir" -- "${cmd[@]}" >> "$dir/train.log" 2>&1 \
    || { tail -n 20 "$dir/train.log" >&2; die "[$tb] fairseq-train failed (see $dir/train.log)"; }
  training_done "$tb" "$dir" "$dir/checkpoints"
  rm -f "$dir/generate.done"
}

# run_archive save|restore FROM TO: scripts/experiment.py run-archive
run_archive() {
  python "$root/scripts/experiment.py" run-archive "$@" || die "run-archive $1 $2 failed"
}

# validate every config before spending time on training
check_configs
command -v python >/dev/null || die "no python on PATH"
write_invocation invocation.txt

# Two passes, so that several processes started with the same command share the runs (one
# process per core; each run folder is locked, RUN/run.lock, while it trains or decodes): the
# claim pass takes the runs no other process holds and skips the others; the collect pass, under
# OUT/report.lock, waits for every run (doing what is left), then collects the rows, the
# significance tests and the report (the last process to get there writes them last).
declare -A hyps_by_seed=()
for pass in claim collect; do
if [[ $pass == collect ]]; then
  exec {report_fd}>"$out/report.lock"
  flock "$report_fd"
  printf 'name\tseed\tarch\tconfig\tdir\tsrc\ttgt\tbeam\tlenpen\tselected\n' > "$out/runs.tsv"
  rows=() logs=() labels=() hyps_by_seed=()
fi
for seed in "${seeds[@]}"; do
  for cfg in "${configs[@]}"; do
    load_config "$cfg"
    sysdir=$out/$NAME dir=$out/$NAME tb=$NAME
    [[ -n $seed ]] && dir=$sysdir/seed$seed tb=$NAME-seed$seed
    mkdir -p "$dir"
    arch_dir=""
    if [[ -n $archive ]]; then
      arch_dir=$archive/${dir#"$out"/}
      if [[ $pass == claim && ! -f $dir/generate.done && -f $arch_dir/generate.done ]]; then
        run_archive restore "$arch_dir" "$dir"
        [[ -f $archive/$NAME/selection.txt ]] && cp "$archive/$NAME/selection.txt" "$sysdir/"
        echo "compare-nmt.sh: [$tb] restored from $arch_dir (finished earlier)" >&2
      fi
    fi
    if [[ $pass == claim && -f $dir/train.done && -f $dir/generate.done \
          && $dir/generate.done -nt $dir/checkpoints/checkpoint_best.pt ]]; then
      continue  # finished: the collect pass reports it
    fi
    exec {run_fd}>"$dir/run.lock"
    if [[ $pass == claim ]] && ! flock -n "$run_fd"; then
      echo "compare-nmt.sh: [$tb] busy in another process, skipped for now" >&2
      exec {run_fd}>&-
      continue
    fi
    [[ $pass == claim ]] || flock "$run_fd"
    cp "$cfg" "$sysdir/config.sh"
    selected=""
    if [[ ${#SELECT_FROM[@]} -gt 0 ]]; then
      sel_name=$NAME sel_epochs=$SELECT_EPOCHS cands=("${SELECT_FROM[@]}")
      exec {select_fd}>"$sysdir/select.lock"  # one process selects, the others wait for it
      flock "$select_fd"
      if [[ ! -f $sysdir/selection.txt ]]; then
        [[ $skip_train == 0 ]] || die "[$sel_name] --skip-train but no $sysdir/selection.txt"
        best_cfg="" best_loss="" lines=()
        for cand in "${cands[@]}"; do
          load_config "$cand"
          cdir=$sysdir/select/$NAME
          args=(${TRAIN_ARGS[@]+"${TRAIN_ARGS[@]}"})
          [[ -n ${seeds[0]} ]] && args+=(--seed "${seeds[0]}")
          args+=(${extra[@]+"${extra[@]}"} --max-epoch "$sel_epochs")
          train_run "$cdir" "$sel_name-select-$NAME" "${args[@]}"
          loss=$(best_valid_loss "$cdir/train.log")
          [[ -n $loss ]] || die "[$sel_name] candidate $NAME: no validation loss in $cdir/train.log"
          lines+=("$NAME	$cand	$loss")
          if [[ -z $best_loss ]] || awk -v a="$loss" -v b="$best_loss" 'BEGIN{exit !(a < b)}'; then
            best_loss=$loss best_cfg=$cand
          fi
        done
        {
          echo "winner	$best_cfg"
          echo "epochs	$sel_epochs"
          printf '%s\n' "${lines[@]}"
        } > "$sysdir/selection.txt"
        echo "compare-nmt.sh: [$sel_name] selected $best_cfg (best valid loss $best_loss after $sel_epochs epochs)" >&2
      fi
      exec {select_fd}>&-
      win_cfg=$(awk -F'\t' '$1 == "winner" {print $2}' "$sysdir/selection.txt")
      # an archived selection names its configs relative to the checkout
      [[ $win_cfg == /* || -f $win_cfg ]] || win_cfg=$root/$win_cfg
      load_config "$win_cfg"
      selected=$NAME
      NAME=$sel_name
      # the first seed continues the winner's selection run from its checkpoint
      first=${seeds[0]}
      if [[ $seed == "$first" && ! -f $dir/checkpoints/checkpoint_last.pt && ! -f $dir/train.done ]]; then
        src_dir=$sysdir/select/$selected
        mkdir -p "$dir/checkpoints"
        cp "$src_dir/checkpoints/checkpoint_last.pt" "$src_dir/checkpoints/checkpoint_best.pt" "$dir/checkpoints/"
        cp "$src_dir/train.log" "$dir/train.log"
        cp "$src_dir/wall.pieces" "$src_dir/cpu.pieces" "$dir/"  # its time counts too
      fi
      ARCH_CFG=$win_cfg
    else
      ARCH_CFG=$cfg
    fi
    args=(${TRAIN_ARGS[@]+"${TRAIN_ARGS[@]}"})
    [[ -n $seed ]] && args+=(--seed "$seed")
    args+=(${extra[@]+"${extra[@]}"})
    gen=(fairseq-generate "$DATA" --user-dir "$user_dir" --task translation
      --source-lang "$SRC" --target-lang "$TGT" --path "$dir/checkpoints/checkpoint_best.pt"
      --gen-subset "$subset" --beam "$BEAM" --lenpen "$LENPEN" --batch-size "$bsz"
      --required-batch-size-multiple 1
      ${GEN_ARGS[@]+"${GEN_ARGS[@]}"})
    if [[ $skip_train == 0 ]]; then
      train_run "$dir" "$tb" "${args[@]}"
    fi
    {
      cat "$dir/train-command.txt" 2>/dev/null || true
      printf '%q ' "${gen[@]}"; echo
    } > "$dir/commands.txt"
    # (a run restored from --archive has its hypotheses but no checkpoint)
    [[ -f $dir/checkpoints/checkpoint_best.pt || -f $dir/generate.done ]] \
      || die "[$tb] no $dir/checkpoints/checkpoint_best.pt"
    decoded=0
    if [[ -f $dir/generate.done && $dir/generate.done -nt $dir/checkpoints/checkpoint_best.pt ]]; then
      echo "compare-nmt.sh: [$tb] already decoded ($dir/generate-$subset.txt)" >&2
    else
      echo "compare-nmt.sh: [$tb] decoding $subset (beam $BEAM, lenpen $LENPEN) -> $dir/generate-$subset.txt" >&2
      start=$SECONDS
      "${gen[@]}" > "$dir/generate-$subset.txt" 2> "$dir/generate.log" \
        || { tail -n 20 "$dir/generate.log" >&2; die "[$tb] fairseq-generate failed (see $dir/generate.log)"; }
      # every sentence must be scored (with the default --required-batch-size-multiple 8 this
      # fairseq build silently drops the remainder batch)
      n_data=$(grep -oE " $subset $SRC-$TGT [0-9]+ examples" "$dir/generate.log" | grep -oE '[0-9]+' | tail -n 1 || true)
      n_hyp=$(grep -c '^H-' "$dir/generate-$subset.txt" || true)
      [[ -z $n_data || $n_data == "$n_hyp" ]] \
        || die "[$tb] fairseq-generate wrote $n_hyp hypotheses for $n_data $subset sentences (see $dir/generate.log)"
      echo $((SECONDS - start)) > "$dir/generate.seconds"
      touch "$dir/generate.done"
      decoded=1
    fi
    if [[ -n $arch_dir && ( $decoded == 1 || ! -f $arch_dir/generate.done ) ]]; then
      run_archive save "$dir" "$arch_dir"
      # (the archive holds paths relative to the checkout only)
      [[ -f $sysdir/selection.txt && $seed == "${seeds[0]}" ]] \
        && sed "s#$root/##g" "$sysdir/selection.txt" > "$archive/$NAME/selection.txt"
      echo "compare-nmt.sh: [$tb] archived in $arch_dir" >&2
    fi
    exec {run_fd}>&-
    [[ $pass == collect ]] || continue
    hyps_by_seed[s$seed]+="$dir/generate-$subset.txt"$'\n'
    params=- updates=- best=- epochs=- wps=- seconds=-
    cpu=-
    [[ -f $dir/train.seconds ]] && read -r seconds cpu < "$dir/train.seconds"
    if [[ -f $dir/train.log ]]; then
      logs+=("$dir/train.log") labels+=("$NAME")
      params=$(log_params "$dir/train.log")
      updates=$(grep -E '\| valid \|' "$dir/train.log" | tail -n 1 | grep -oE 'num_updates [0-9]+' | grep -oE '[0-9]+$' || echo -)
      epochs=$(grep -E '\| train \| epoch' "$dir/train.log" | tail -n 1 | grep -oE 'epoch [0-9]+' | grep -oE '[0-9]+$' | sed 's/^0*//' || echo -)
      wps=$(log_wps "$dir/train.log")
      best=$(best_valid_loss "$dir/train.log")
      best=${best:--} epochs=${epochs:--} params=${params:--} updates=${updates:--}
    fi
    arch_shown=$ARCH
    [[ -n $selected ]] && arch_shown="$ARCH ($selected)"
    rows+=("| $NAME | \`$arch_shown\` | ${seed:-config} | \`$cfg\` | $SRC→$TGT | $BEAM | $LENPEN | $params | $epochs | $updates | $best | $seconds | ${cpu:--} | $wps |")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$NAME" "${seed:-}" "$ARCH" "$ARCH_CFG" "$dir" \
      "$SRC" "$TGT" "$BEAM" "$LENPEN" "$selected" >> "$out/runs.tsv"
  done
done
done

tok_flag=(--tokenized); [[ $tokenized == 0 ]] && tok_flag=()
sig_files=()
for seed in "${seeds[@]}"; do
  mapfile -t hyps < <(printf '%s' "${hyps_by_seed[s$seed]}")
  stem=significance
  [[ -n $seed ]] && stem=significance-seed$seed
  echo "compare-nmt.sh: significance of ${names[*]:1} against ${names[0]}${seed:+ (seed $seed)}" >&2
  python "$root/scripts/bleu-significance.py" "${hyps[@]}" --names "${names[@]}" \
    ${tok_flag[@]+"${tok_flag[@]}"} --lang "$TGT" --format markdown --json "$out/$stem.json" \
    ${sig_args[@]+"${sig_args[@]}"} > "$out/$stem.md" \
    || die "significance test failed"
  sig_files+=("$stem")
done

curves=""
if [[ ${#logs[@]} -gt 0 ]]; then
  # one line per system: the mean over its seeds with a band from the lowest to the highest
  if python "$root/scripts/plot-curves.py" "${logs[@]}" --labels "${labels[@]}" --group \
      --metric loss --out "$out/curves.png" >&2; then
    curves=curves.png
  fi
fi

{
  report_heading "NMT comparison: ${names[*]}" "Decoded subset: \`$subset\`;"
  echo "baseline: **${names[0]}**; references: the T- lines of fairseq-generate."
  echo
  echo "## Systems"
  echo
  echo "| System | Arch | Seed | Config | Pair | Beam | Lenpen | Params | Epochs | Updates | Best valid loss | Train wall (s) | Train CPU (s) | Train words/s |"
  echo "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  for stem in "${sig_files[@]}"; do
    echo "## Paired significance against ${names[0]}${stem#significance}"
    echo
    cat "$out/$stem.md"
    echo
    echo "Machine-readable: \`$stem.json\`. Hypotheses: \`NAME/[seedS/]generate-$subset.txt\`."
    echo
  done
  if [[ -n $curves ]]; then
    echo "## Validation loss"
    echo
    echo "![validation loss vs epoch and updates]($curves)"
    echo
  fi
  report_commands
  # (a unit separator, not a tab: read would merge the empty seed field of a run without --seeds)
  awk -F'\t' 'NR > 1 {print $1 "\037" $2 "\037" $5}' "$out/runs.tsv" | while IFS=$'\037' read -r n s d; do
    report_run_commands "$n${s:+ (seed $s)}" "$d/commands.txt"
  done
} > "$out/REPORT.md"
report_done nmt
