# Multi30k German->English: the Graph-Transformer at the paper's own direction (its
# De-En result, docs/method.md §3.7). Data: bash scripts/prepare-multi30k.sh
# data-bin/multi30k.de-en --src de --tgt en (the same corpus and joint BPE as the En-De study).
# The study: bash scripts/study-nmt.sh --direction de-en. Recipe, budget and decoding (beam 5,
# lenpen 1.0, the paper's De-En setting) are multi30k-ende-baseline.sh's; stock `transformer`.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-baseline.sh"
NAME=multi30k-deen-baseline
DATA=${MULTI30K_DEEN_BIN:-data-bin/multi30k.de-en/bin}
SRC=de
TGT=en
