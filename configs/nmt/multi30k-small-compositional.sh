# Multi30k De->En, tiny Transformer with Compositional Attention (4 searches, 4 retrievals), same
# sizes and schedule as multi30k-small-baseline.sh, for CPU. Sourced by compare-nmt.sh.
# The arch `compositional_transformer` comes from fairseq_plugins (--user-dir).
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-small-baseline.sh"
NAME=multi30k-small-compositional
ARCH=compositional_transformer
TRAIN_ARGS+=(--attention-type compositional --num-searches 4 --num-retrievals 4)
