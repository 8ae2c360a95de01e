# Multi30k De->En: Graph-Transformer, full-dimension parts fused by the self-gate (the paper's other gate);
# the recipe of multi30k-deen-baseline.sh, the architecture flags of multi30k-ende-graph-selfgate.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-graph-selfgate.sh"
NAME=multi30k-deen-graph-selfgate
DATA=${MULTI30K_DEEN_BIN:-data-bin/multi30k.de-en/bin}
SRC=de
TGT=en
