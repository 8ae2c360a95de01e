# WikiText-103 language model with Compositional Attention: the paper's setting.
#   bash scripts/prepare-wikitext.sh 103 --out data-bin/wikitext-103
#   bash scripts/train-lm.sh configs/lm/wikitext103-compositional.sh data-bin/wikitext-103/bin checkpoints/wt103-compositional
#   bash scripts/eval-lm.sh checkpoints/wt103-compositional/checkpoint_best.pt data-bin/wikitext-103/bin --context-window 400
# Decoder: 6 layers with shared parameters, d=512, ffn 2048, 8 heads, pre-norm, tied input/output
# embeddings; Adam (0.9,0.98), weight decay 0.01, inverse_sqrt with 4000 warm-up updates,
# lr 0.004 (compositional; the baseline uses 0.002), tokens-per-sample 512; evaluation with a
# context window of 400. --num-searches/--num-retrievals/--retrieval-qk-dim: the arch's defaults
# (override after `--`). Batch (not fixed by the paper): fairseq's WikiText-103 recipe,
# 2048 tokens x update-freq 16 on one GPU (divide --update-freq by the number of GPUs).
ARCH=compositional_transformer_lm_wiki103
TRAIN_ARGS=(
  --attention-type compositional --share-decoder-layers
  --decoder-layers 6 --decoder-embed-dim 512 --decoder-ffn-embed-dim 2048
  --decoder-attention-heads 8 --decoder-normalize-before
  --share-decoder-input-output-embed --dropout 0.1
  --optimizer adam --adam-betas "(0.9,0.98)" --weight-decay 0.01 --clip-norm 0.0
  --lr 0.004 --lr-scheduler inverse_sqrt --warmup-updates 4000 --warmup-init-lr 1e-07
  --tokens-per-sample 512 --sample-break-mode none
  --max-tokens 2048 --update-freq 16 --max-update 50000
  --no-epoch-checkpoints
)
