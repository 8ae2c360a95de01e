# Sourced by scripts/compgen-run.sh and scripts/cogs-tagging-run.sh: what their seed loops share.
#
# Wall and CPU time of a run, summed over the pieces of an interrupted and resumed run. Every piece (also one ended by a
# signal) appends its seconds to DIR/wall.pieces and DIR/cpu.pieces. CPU: user + system time of
# the sourcing shell's finished children (cutime and cstime of /proc/$$/stat; $$ is that shell
# also inside $(...)). Start a piece with: piece_dir=DIR piece_start=$(date +%s.%N)
# piece_cpu=$(children_cpu); end it with end_piece (also run on EXIT, INT and TERM).
clk_tck=$(getconf CLK_TCK)
children_cpu() {
  awk -v hz="$clk_tck" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($14 + $15) / hz }' "/proc/$$/stat"
}
piece_start="" piece_cpu="" piece_dir=""
end_piece() {
  if [[ -n $piece_start && -n $piece_dir && -d $piece_dir ]]; then
    python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
      "$piece_start" "$(date +%s.%N)" >>"$piece_dir/wall.pieces"
    python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
      "$piece_cpu" "$(children_cpu)" >>"$piece_dir/cpu.pieces"
  fi
  piece_start=""
}
# total FILE: the sum of a pieces file
total() { python -c "import sys; print(f'{sum(float(x) for x in open(sys.argv[1])):.1f}')" "$1"; }
trap end_piece EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The steps of one seed that both run scripts share. They read the caller's prog (its name, for
# messages), resume, csv, seed, max_update, run_dir, recorded() and die() (train_seed also root,
# lr, warmup and extra); seed_range reads seeds and only_seed.
set_budget() { # set_budget N_TRAIN: max_update from --epochs (N * floor(N_TRAIN / 64) updates, the
  # authors' loader drops the last partial batch) when given; warmup, when not given, the paper's
  # 4000 scaled down for short runs (max_update / 10). Reads and sets epochs, max_update, warmup.
  if [[ -n $epochs ]]; then
    max_update=$((epochs * ($1 / 64)))
    ((max_update >= 1)) || die "--epochs $epochs: $1 training examples make no full batch of 64"
  fi
  if [[ -z $warmup ]]; then
    warmup=$((max_update / 10 < 4000 ? max_update / 10 : 4000))
    ((warmup >= 1)) || warmup=1
  fi
}
evaluated_checkpoints() { # sets checkpoints to the names evaluated after training: best, and
  # last with --report-checkpoint last (reads report_checkpoint), each checked to exist
  checkpoints=(best)
  [[ $report_checkpoint == last ]] && checkpoints+=(last)
  local which
  for which in "${checkpoints[@]}"; do
    [[ -f $run_dir/checkpoints/checkpoint_$which.pt ]] ||
      die "no checkpoint_$which.pt after training, see $run_dir/train.log"
  done
}
seed_range() { # sets first_seed and last_seed: --seed S alone, or 1..--seeds
  if [[ -n $only_seed ]]; then
    first_seed=$only_seed last_seed=$only_seed
  else
    first_seed=1 last_seed=$seeds
  fi
}
# start_seed LABEL: false when the seed is in the CSV (skip it, with --resume); otherwise makes
# run_dir (afresh without --resume), starts a time piece and sets need_training (0: a resumed
# run whose training had finished).
start_seed() {
  local label=$1
  if ((resume)) && recorded "$seed"; then
    echo "$prog: $label seed $seed: already in $csv, skipped" >&2
    return 1
  fi
  ((resume)) || rm -rf "$run_dir"
  mkdir -p "$run_dir"
  piece_dir=$run_dir piece_start=$(date +%s.%N) piece_cpu=$(children_cpu)
  need_training=1
  if ((resume)) && [[ -f $run_dir/.trained ]]; then
    echo "$prog: $label seed $seed: training already finished, evaluating" >&2
    need_training=0
  elif [[ -f $run_dir/checkpoints/checkpoint_last.pt ]]; then
    echo "$prog: $label seed $seed: resuming from $run_dir/checkpoints/checkpoint_last.pt" >&2
  else
    echo "$prog: $label seed $seed: training ($max_update updates) -> $run_dir" >&2
  fi
}
# train_seed DATA OPTIONS...: fairseq-train DATA with OPTIONS (task, criterion, arch) and the
# paper's recipe: Adam (0.9, 0.98, 1e-9), inverse_sqrt from 1e-7 to the caller's lr after its
# warmup, dropout 0.1, 64 sentences a batch, best checkpoint by valid accuracy; the caller's
# extra options last (they win). Appends to run_dir/train.log; marks run_dir/.trained.
train_seed() {
  local data=$1
  shift
  fairseq-train "$data" --user-dir "$root/fairseq_plugins" "$@" \
    --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 \
    --lr "$lr" --lr-scheduler inverse_sqrt --warmup-updates "$warmup" --warmup-init-lr 1e-7 \
    --dropout 0.1 --batch-size 64 --required-batch-size-multiple 1 \
    --max-update "$max_update" --seed "$seed" \
    --best-checkpoint-metric accuracy --maximize-best-checkpoint-metric \
    --save-dir "$run_dir/checkpoints" --no-epoch-checkpoints \
    --log-format simple --log-interval 100 "${extra[@]}" >>"$run_dir/train.log" 2>&1 ||
    die "fairseq-train failed, see $run_dir/train.log"
  touch "$run_dir/.trained"
}
# end_training: after fairseq-train, sets updates (the last num_updates logged) and checks that
# a best checkpoint exists.
end_training() {
  updates=$(grep -o 'num_updates [0-9]*' "$run_dir/train.log" | tail -1 | awk '{print $2}')
  [[ -f $run_dir/checkpoints/checkpoint_best.pt ]] ||
    die "no checkpoint_best.pt after training, see $run_dir/train.log"
}
