# Multi30k En->De study, selection candidate (see multi30k-ende-graph-best.sh): Graph-Transformer
# encoder, full-dimension parts fused by their sum; otherwise the recipe of multi30k-ende-baseline.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-baseline.sh"
NAME=multi30k-ende-graph-sum
ARCH=graph_transformer
TRAIN_ARGS+=(--graph-fusion sum)
