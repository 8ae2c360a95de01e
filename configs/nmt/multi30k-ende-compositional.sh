# Multi30k En->De study: Compositional Attention in every attention (encoder self, decoder self,
# encoder-decoder), S = R = 4 (= heads), d_s 32; otherwise the recipe of multi30k-ende-baseline.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-baseline.sh"
NAME=multi30k-ende-compositional
ARCH=compositional_transformer
TRAIN_ARGS+=(--attention-type compositional --num-searches 4 --num-retrievals 4)
