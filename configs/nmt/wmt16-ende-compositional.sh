# WMT'16 En->De, transformer base shapes with Compositional Attention (S = R = 8 = heads); recipe of
# wmt16-ende-baseline.sh. Sourced by scripts/compare-nmt.sh.
source "$(dirname "${BASH_SOURCE[0]}")/wmt16-ende-baseline.sh"
NAME=wmt16-ende-compositional
ARCH=compositional_transformer_wmt_en_de
