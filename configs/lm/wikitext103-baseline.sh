# WikiText-103 language model, multi-head attention baseline of the paper: the model and schedule of
# wikitext103-compositional.sh with --attention-type multihead and lr 0.002.
#   bash scripts/train-lm.sh configs/lm/wikitext103-baseline.sh data-bin/wikitext-103/bin checkpoints/wt103-baseline
#   bash scripts/eval-lm.sh checkpoints/wt103-baseline/checkpoint_best.pt data-bin/wikitext-103/bin --context-window 400
source "$(dirname "${BASH_SOURCE[0]}")/wikitext103-compositional.sh"
ARCH=compositional_transformer_lm_wiki103_baseline
TRAIN_ARGS+=(--lr 0.002)  # later flags win
