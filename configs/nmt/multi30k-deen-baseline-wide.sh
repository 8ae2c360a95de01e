# Multi30k De->En: stock transformer at the parameter count of the largest De-En system (the self-gate one): ffn 768, as multi30k-ende-baseline-wide.sh;
# the recipe of multi30k-deen-baseline.sh, the architecture flags of multi30k-ende-baseline-wide.sh.
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-baseline-wide.sh"
NAME=multi30k-deen-baseline-wide
DATA=${MULTI30K_DEEN_BIN:-data-bin/multi30k.de-en/bin}
SRC=de
TGT=en
