# WikiText-2, tiny stock transformer_lm for CPU (a few minutes on 2 cores, including evaluation).
#   bash scripts/prepare-wikitext.sh 2 --out data-bin/wikitext-2
#   bash scripts/train-lm.sh configs/lm/wikitext2-small.sh data-bin/wikitext-2/bin checkpoints/wt2-small
#   bash scripts/eval-lm.sh checkpoints/wt2-small/checkpoint_best.pt data-bin/wikitext-2/bin --context-window 64
# Pre-norm, tied embeddings and the paper's optimizer settings, scaled down (warm-up 100 updates,
# 128-token samples, d=64). The 33k-word softmax dominates the cost on CPU, hence the small batches;
# validation during training looks at the first 10 batches of valid only (eval-lm.sh scores all of test).
# (fairseq's --adaptive-softmax-cutoff would be cheaper but fails in backward with torch 2.13.)
ARCH=transformer_lm
LM_LAYERS=2 LM_DIM=64 LM_FFN=256 LM_DROPOUT=0.1 LM_WARMUP=100 LM_BLOCK=128 LM_MAX_TOKENS=1024
source "$(dirname "${BASH_SOURCE[0]}")/parts/wikitext2-recipe.sh"
TRAIN_ARGS+=(
  --max-update 300 --validate-interval-updates 100 --max-tokens-valid 4096 --max-valid-steps 10
  --no-epoch-checkpoints --num-workers 0 --log-interval 50
)
