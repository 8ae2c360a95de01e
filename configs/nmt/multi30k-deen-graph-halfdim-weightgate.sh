# Multi30k De->En: Graph-Transformer, half-dimension parts fused by the weight-gate (the paper's best);
# the recipe of multi30k-deen-baseline.sh, the architecture flags of multi30k-ende-graph-halfdim-weightgate.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-graph-halfdim-weightgate.sh"
NAME=multi30k-deen-graph-halfdim-weightgate
DATA=${MULTI30K_DEEN_BIN:-data-bin/multi30k.de-en/bin}
SRC=de
TGT=en
