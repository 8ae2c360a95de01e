# WikiText-2, tiny Compositional-Attention LM for CPU: wikitext2-small.sh with the plugin's
# compositional LM arch (sizes overridden down; shared decoder layers as in the paper).
#   bash scripts/train-lm.sh configs/lm/wikitext2-small-compositional.sh data-bin/wikitext-2/bin checkpoints/wt2-small-comp
#   bash scripts/eval-lm.sh checkpoints/wt2-small-comp/checkpoint_best.pt data-bin/wikitext-2/bin --context-window 64
ARCH=compositional_transformer_lm_wiki103
TRAIN_ARGS=(
  --attention-type compositional --num-searches 4 --num-retrievals 4 --share-decoder-layers
  --decoder-layers 2 --decoder-embed-dim 64 --decoder-input-dim 64 --decoder-output-dim 64
  --decoder-ffn-embed-dim 256 --decoder-attention-heads 4 --decoder-normalize-before
  --share-decoder-input-output-embed --dropout 0.1
  --optimizer adam --adam-betas "(0.9,0.98)" --weight-decay 0.01 --clip-norm 0.0
  --lr 0.004 --lr-scheduler inverse_sqrt --warmup-updates 100 --warmup-init-lr 1e-07
  --tokens-per-sample 128 --sample-break-mode none --max-tokens 1024
  --max-update 300 --validate-interval-updates 100 --max-tokens-valid 4096 --max-valid-steps 10
  --no-epoch-checkpoints --num-workers 0 --log-interval 50
)
