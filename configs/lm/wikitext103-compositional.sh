# WikiText-103 language model with Compositional Attention: the paper's setting.
#   bash scripts/prepare-wikitext.sh 103 --out data-bin/wikitext-103
#   bash scripts/train-lm.sh configs/lm/wikitext103-compositional.sh data-bin/wikitext-103/bin checkpoints/wt103-compositional
#   bash scripts/eval-lm.sh checkpoints/wt103-compositional/checkpoint_best.pt data-bin/wikitext-103/bin --context-window 400
# The model is the arch's (presets_compositional_attention.py): 6 layers with shared parameters,
# d=512, ffn 2048, S = R = 8, d_s = 32, pre-norm, tied input/output embeddings, dropout 0.1,
# attention and activation dropout 0.1 (as fairseq's WikiText-103 LMs; the paper does not state
# its own). This file sets the training: Adam (0.9,0.98), weight decay 0.01, inverse_sqrt with 4000 warm-up updates,
# lr 0.004 (compositional; the baseline uses 0.002), tokens-per-sample 512; evaluation with a
# context window of 400. Model options can be overridden after `--`. Batch (not fixed by the paper): fairseq's WikiText-103 recipe,
# 2048 tokens x update-freq 16 on one GPU (divide --update-freq by the number of GPUs).
ARCH=compositional_transformer_lm_wiki103
TRAIN_ARGS=(
  --optimizer adam --adam-betas "(0.9,0.98)" --weight-decay 0.01 --clip-norm 0.0
  --lr 0.004 --lr-scheduler inverse_sqrt --warmup-updates 4000 --warmup-init-lr 1e-07
  --tokens-per-sample 512 --sample-break-mode none
  --max-tokens 2048 --update-freq 16 --max-update 50000
  --no-epoch-checkpoints
)
