# WMT'16 En->De with the Graph-Transformer's best setting (half dimension + weight-gate; d 512,
# ffn 2048, 8 heads, dropout 0.1, beam 4, lenpen 0.6; reported BLEU 28.3 vs 27.1); recipe of
# wmt16-ende-baseline.sh. Sourced by scripts/compare-nmt.sh.
source "$(dirname "${BASH_SOURCE[0]}")/wmt16-ende-baseline.sh"
NAME=wmt16-ende-graph-halfdim-weightgate
ARCH=graph_transformer_wmt_en_de
TRAIN_ARGS+=(--graph-half-dim --graph-fusion weight-gate)
