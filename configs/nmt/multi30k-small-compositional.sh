# Multi30k De->En, tiny Transformer with Compositional Attention (same sizes and schedule as
# multi30k-small-baseline.sh; 4 searches, 4 retrievals), for CPU. Sourced by compare-nmt.sh.
# The arch `compositional_transformer` comes from fairseq_plugins (--user-dir).
NAME=multi30k-small-compositional
ARCH=compositional_transformer
DATA=${MULTI30K_BIN:-data-bin/multi30k.de-en/bin}
SRC=de
TGT=en
TRAIN_ARGS=(
  --attention-type compositional --num-searches 4 --num-retrievals 4
  --encoder-layers 2 --decoder-layers 2
  --encoder-embed-dim 128 --decoder-embed-dim 128
  --encoder-ffn-embed-dim 256 --decoder-ffn-embed-dim 256
  --encoder-attention-heads 4 --decoder-attention-heads 4
  --share-decoder-input-output-embed --dropout 0.1
  --optimizer adam --adam-betas "(0.9,0.98)" --lr 0.001 --lr-scheduler inverse_sqrt
  --warmup-updates 100 --clip-norm 1.0 --weight-decay 0.0001
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 2048 --max-update 300 --validate-interval-updates 100
  --no-epoch-checkpoints --seed 1 --num-workers 0
)
GEN_ARGS=(--remove-bpe sentencepiece)  # prepare-multi30k.sh: moses tokens + sentencepiece BPE
