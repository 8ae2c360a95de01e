# Multi30k En->De study: Graph-Transformer encoder (multi-order-graph layers from layer 2 on), the
# paper's best variant: half-dimension parts fused by the weight-gate; otherwise the recipe of
# multi30k-ende-baseline.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-baseline.sh"
NAME=multi30k-ende-graph-halfdim-weightgate
ARCH=graph_transformer
TRAIN_ARGS+=(--graph-half-dim --graph-fusion weight-gate)
