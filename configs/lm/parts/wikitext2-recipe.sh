# The recipe the WikiText-2 configs share (../wikitext2-small.sh, ../wikitext2-study-baseline.sh), sourced
# after they set the sizes: a pre-norm transformer LM with tied input/output embeddings and 4
# heads, trained with the paper's WikiText-103 settings scaled down (Adam (0.9, 0.98), weight decay
# 0.01, no clipping, inverse_sqrt from 1e-7, lr 0.002: the paper's baseline lr) on blocks of
# LM_BLOCK tokens without sentence breaks. Sets TRAIN_ARGS; the config appends its schedule.
#   LM_LAYERS, LM_DIM, LM_FFN, LM_DROPOUT   model: layers, width, ffn width, dropout
#   LM_WARMUP, LM_BLOCK, LM_MAX_TOKENS      warm-up updates, tokens per sample, tokens per update
TRAIN_ARGS=(
  --decoder-layers "$LM_LAYERS" --decoder-embed-dim "$LM_DIM" --decoder-input-dim "$LM_DIM"
  --decoder-output-dim "$LM_DIM" --decoder-ffn-embed-dim "$LM_FFN" --decoder-attention-heads 4
  --decoder-normalize-before --share-decoder-input-output-embed --dropout "$LM_DROPOUT"
  --optimizer adam --adam-betas "(0.9,0.98)" --weight-decay 0.01 --clip-norm 0.0
  --lr 0.002 --lr-scheduler inverse_sqrt --warmup-updates "$LM_WARMUP" --warmup-init-lr 1e-07
  --tokens-per-sample "$LM_BLOCK" --sample-break-mode none --max-tokens "$LM_MAX_TOKENS"
)
