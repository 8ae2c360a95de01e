# WikiText-2, tiny stock transformer_lm for CPU (a few minutes on 2 cores, including evaluation).
#   bash scripts/prepare-wikitext.sh 2 --out data-bin/wikitext-2
#   bash scripts/train-lm.sh configs/lm/wikitext2-small.sh data-bin/wikitext-2/bin checkpoints/wt2-small
#   bash scripts/eval-lm.sh checkpoints/wt2-small/checkpoint_best.pt data-bin/wikitext-2/bin --context-window 64
# Pre-norm, tied embeddings and the paper's optimizer settings, scaled down (warm-up 100 updates,
# 128-token samples, d=64). The 33k-word softmax dominates the cost on CPU, hence the small batches;
# validation during training looks at the first 10 batches of valid only (eval-lm.sh scores all of test).
# (fairseq's --adaptive-softmax-cutoff would be cheaper but fails in backward with torch 2.13.)
ARCH=transformer_lm
TRAIN_ARGS=(
  --decoder-layers 2 --decoder-embed-dim 64 --decoder-input-dim 64 --decoder-output-dim 64
  --decoder-ffn-embed-dim 256 --decoder-attention-heads 4 --decoder-normalize-before
  --share-decoder-input-output-embed --dropout 0.1
  --optimizer adam --adam-betas "(0.9,0.98)" --weight-decay 0.01 --clip-norm 0.0
  --lr 0.002 --lr-scheduler inverse_sqrt --warmup-updates 100 --warmup-init-lr 1e-07
  --tokens-per-sample 128 --sample-break-mode none --max-tokens 1024
  --max-update 300 --validate-interval-updates 100 --max-tokens-valid 4096 --max-valid-steps 10
  --no-epoch-checkpoints --num-workers 0 --log-interval 50
)
