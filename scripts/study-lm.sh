#!/usr/bin/env bash
# Issue 14, LM study: WikiText-2, stock transformer_lm vs compositional LM, one command.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/study-lm.sh [--out DIR] [--doc FILE] [--smoke] [--threads N] [-- compare-lm.sh options]

The WikiText-2 language-modelling study, resumable (run the same command again after an
interruption: a finished system is skipped, an unfinished one resumes from checkpoint_last.pt):
  1. data: scripts/prepare-wikitext.sh 2 --out data-bin/wikitext-2 (once);
  2. scripts/compare-lm.sh configs/lm/wikitext2-study-{baseline,compositional}.sh
     --context-window 128 --tensorboard: same tokens for both, perplexity of the best
     checkpoint on the full valid and test subsets with fairseq-eval-lm --context-window;
  3. scripts/study-report.py lm: the results document (tables, curves, commands, machine).

  --out DIR     study folder (default outputs/study-lm; with --smoke outputs/study-lm-smoke)
  --doc FILE    results document (default docs/results-lm.md; with --smoke
                OUT/results-lm.md, so a smoke run never replaces the results)
  --smoke       pipeline check at a tiny budget: 3000 training / 300 evaluation lines
                (data-bin/wikitext-2-smoke), 60 updates, validation every 30; the document is
                labelled "smoke run, not results"
  --threads N   OMP_NUM_THREADS for training and evaluation (default: the environment's, else 1)
Options after `--` go to scripts/compare-lm.sh (e.g. -- --train-args "--max-update 3000").
USAGE
}
prog=study-lm.sh
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"  # die, root, PATH; the shared steps
cd "$root"

out="" doc="" smoke=0 threads=${OMP_NUM_THREADS:-1} pass=()
invocation=(bash "scripts/study-lm.sh" "$@")
while [[ $# -gt 0 ]]; do
  study_option "$@"; shift "$taken"
done
export OMP_NUM_THREADS=$threads

cfgs=(configs/lm/wikitext2-study-baseline.sh configs/lm/wikitext2-study-compositional.sh)
if [[ $smoke == 1 ]]; then
  out=${out:-outputs/study-lm-smoke} data=data-bin/wikitext-2-smoke
  prep=(--max-train-lines 3000 --max-eval-lines 300)
  opts=(--train-args "--max-update 60 --validate-interval-updates 30 --save-interval-updates 30 --warmup-updates 20" --smoke)
else
  out=${out:-outputs/study-lm} data=data-bin/wikitext-2
  prep=() opts=()
fi
study_defaults lm
prepare_data "$data/bin/dict.txt" "scripts/prepare-wikitext.sh 2 --out $data" \
  bash scripts/prepare-wikitext.sh 2 --out "$data" ${prep[@]+"${prep[@]}"}
write_invocation study-invocation.txt
exec bash scripts/compare-lm.sh "${cfgs[@]}" --data "$data/bin" --out "$out" --context-window 128 \
  --tensorboard --doc "$doc" ${opts[@]+"${opts[@]}"} ${pass[@]+"${pass[@]}"}
