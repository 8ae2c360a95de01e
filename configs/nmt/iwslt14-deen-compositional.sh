# IWSLT'14 De->En with Compositional Attention in every attention (S = R = 4 = heads, d_s = 32),
# same recipe as iwslt14-deen-baseline.sh (the paper reports ~10% training overhead).
# Sourced by scripts/compare-nmt.sh; data as in iwslt14-deen-baseline.sh.
source "$(dirname "${BASH_SOURCE[0]}")/iwslt14-deen-baseline.sh"
NAME=iwslt14-deen-compositional
ARCH=compositional_transformer_iwslt_de_en
