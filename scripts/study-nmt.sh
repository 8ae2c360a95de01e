#!/usr/bin/env bash
# Issue 14, NMT study: Multi30k En->De, stock vs compositional vs Graph-Transformer, one command.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/study-nmt.sh [--out DIR] [--seeds LIST] [--doc FILE] [--smoke] [--threads N]
                            [-- compare-nmt.sh options]

The Multi30k English->German study, resumable (run the same command again after an interruption:
finished systems/seeds are skipped, unfinished training resumes from checkpoint_last.pt):
  1. data: scripts/prepare-multi30k.sh data-bin/multi30k.en-de --src en --tgt de (once);
  2. scripts/compare-nmt.sh with configs/nmt/multi30k-ende-{baseline,compositional,
     graph-halfdim-weightgate,graph-best}.sh (graph-best picks sum or self-gate on validation),
     --tensorboard, per seed; paired bootstrap/approximate randomization on BLEU, chrF, tok-BLEU;
  3. scripts/study-report.py nmt: the results document with tables, curves, commands, machine.

  --out DIR     study folder (default outputs/study-nmt; with --smoke outputs/study-nmt-smoke)
  --seeds LIST  training seeds, comma-separated (default 1; 1,2 when the budget allows)
  --doc FILE    results document (default docs/results-nmt.md; with --smoke
                OUT/results-nmt.md, so a smoke run never replaces the results)
  --smoke       pipeline check at a tiny budget: 1000 training / 100 evaluation sentences
                (data-bin/multi30k.en-de-smoke), 2 epochs (selection: 1), 200 bootstrap
                resamples, 500 randomization trials; the document is labelled
                "smoke run, not results"
  --threads N   OMP_NUM_THREADS for training and decoding (default: the environment's, else 1)
Options after `--` go to scripts/compare-nmt.sh (e.g. -- --train-args "--max-epoch 20").
USAGE
}
prog=study-nmt.sh
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"  # die, root, PATH; the shared steps
cd "$root"

out="" seeds=1 doc="" smoke=0 threads=${OMP_NUM_THREADS:-1} pass=()
invocation=(bash "scripts/study-nmt.sh" "$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) [[ ${2:-} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--seeds needs comma-separated positive integers (e.g. 1,2)"
      seeds=$2; shift 2 ;;
    *) study_option "$@"; shift "$taken" ;;
  esac
done
export OMP_NUM_THREADS=$threads

cfgs=()
for s in baseline compositional graph-halfdim-weightgate graph-best; do
  cfgs+=("configs/nmt/multi30k-ende-$s.sh")
done
if [[ $smoke == 1 ]]; then
  out=${out:-outputs/study-nmt-smoke} data=data-bin/multi30k.en-de-smoke
  prep=(--max-train-lines 1000 --max-eval-lines 100)
  opts=(--train-args "--max-epoch 2" --select-epochs 1 --resamples 200 --trials 500 --smoke)
else
  out=${out:-outputs/study-nmt} data=data-bin/multi30k.en-de
  prep=() opts=()
fi
study_defaults nmt
prepare_data "$data/bin/dict.de.txt" "scripts/prepare-multi30k.sh $data" \
  bash scripts/prepare-multi30k.sh "$data" --src en --tgt de ${prep[@]+"${prep[@]}"}
write_invocation study-invocation.txt
exec bash scripts/compare-nmt.sh "${cfgs[@]}" --data "$data/bin" --out "$out" --seeds "$seeds" \
  --tensorboard --doc "$doc" ${opts[@]+"${opts[@]}"} ${pass[@]+"${pass[@]}"}
