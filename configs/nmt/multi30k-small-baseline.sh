# Multi30k De->En, tiny stock Transformer baseline for CPU (a few minutes on 2 cores).
# Used by scripts/compare-nmt.sh (sourced: plain shell variables). Data:
#   bash scripts/prepare-multi30k.sh data-bin/multi30k.de-en --src de --tgt en
# (or point MULTI30K_BIN / compare-nmt.sh --data at any fairseq-preprocess'd de-en folder).
NAME=multi30k-small-baseline
ARCH=transformer
DATA=${MULTI30K_BIN:-data-bin/multi30k.de-en/bin}
SRC=de
TGT=en
# BEAM/LENPEN unset: the paper's setting for De-En (beam 5, lenpen 1.0).
TRAIN_ARGS=(
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
