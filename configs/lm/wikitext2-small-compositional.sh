# WikiText-2, tiny Compositional-Attention LM for CPU: wikitext2-small.sh (same sizes, data and
# schedule) with the plugin's compositional LM arch, S = R = 4 searches/retrievals, layers shared
# as in the paper, and the paper's compositional learning rate (0.004; the baseline's is 0.002 there
# and here).
#   bash scripts/train-lm.sh configs/lm/wikitext2-small-compositional.sh data-bin/wikitext-2/bin checkpoints/wt2-small-comp
#   bash scripts/eval-lm.sh checkpoints/wt2-small-comp/checkpoint_best.pt data-bin/wikitext-2/bin --context-window 64
source "$(dirname "${BASH_SOURCE[0]}")/wikitext2-small.sh"
ARCH=compositional_transformer_lm
TRAIN_ARGS+=(--num-searches 4 --num-retrievals 4 --lr 0.004)  # later flags win
