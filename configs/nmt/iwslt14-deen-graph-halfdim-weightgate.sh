# IWSLT'14 De->En with the Graph-Transformer's best setting (half dimension + weight-gate fusion;
# the paper's De-En model: 6+6 layers, d 512, ffn 1024, dropout 0.3, beam 5; reported BLEU 37.6 vs
# 36.5). Sourced by scripts/compare-nmt.sh; data and recipe as in iwslt14-deen-baseline.sh.
source "$(dirname "${BASH_SOURCE[0]}")/iwslt14-deen-baseline.sh"
NAME=iwslt14-deen-graph-halfdim-weightgate
ARCH=graph_transformer_iwslt_de_en
TRAIN_ARGS+=(--graph-half-dim --graph-fusion weight-gate)
