# WikiText-103 language model, multi-head attention baseline of the paper (same model and schedule
# as wikitext103-compositional.sh except --attention-type multihead and lr 0.002).
#   bash scripts/train-lm.sh configs/lm/wikitext103-baseline.sh data-bin/wikitext-103/bin checkpoints/wt103-baseline
#   bash scripts/eval-lm.sh checkpoints/wt103-baseline/checkpoint_best.pt data-bin/wikitext-103/bin --context-window 400
ARCH=compositional_transformer_lm_wiki103_baseline
TRAIN_ARGS=(
  --attention-type multihead --share-decoder-layers
  --decoder-layers 6 --decoder-embed-dim 512 --decoder-ffn-embed-dim 2048
  --decoder-attention-heads 8 --decoder-normalize-before
  --share-decoder-input-output-embed --dropout 0.1
  --optimizer adam --adam-betas "(0.9,0.98)" --weight-decay 0.01 --clip-norm 0.0
  --lr 0.002 --lr-scheduler inverse_sqrt --warmup-updates 4000 --warmup-init-lr 1e-07
  --tokens-per-sample 512 --sample-break-mode none
  --max-tokens 2048 --update-freq 16 --max-update 50000
  --no-epoch-checkpoints
)
