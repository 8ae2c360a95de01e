# Multi30k De->En, tiny Graph-Transformer (half dimension + weight-gate), same sizes and schedule as
# multi30k-small-baseline.sh, for CPU. Sourced by compare-nmt.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-small-baseline.sh"
NAME=multi30k-small-graph
ARCH=graph_transformer
TRAIN_ARGS+=(--graph-half-dim --graph-fusion weight-gate)
