# IWSLT'14 De->En, fairseq's transformer_iwslt_de_en recipe (the baseline of both papers' De-En
# runs). Sourced by scripts/compare-nmt.sh. Data: fairseq's examples/translation/prepare-iwslt14.sh
# then fairseq-preprocess --joined-dictionary into data-bin/iwslt14.tokenized.de-en.
NAME=iwslt14-deen-baseline
ARCH=transformer_iwslt_de_en
DATA=${IWSLT14_BIN:-data-bin/iwslt14.tokenized.de-en}
SRC=de
TGT=en
TRAIN_ARGS=(
  --share-decoder-input-output-embed --dropout 0.3 --weight-decay 0.0001
  --optimizer adam --adam-betas "(0.9,0.98)" --clip-norm 0.0
  --lr 5e-4 --lr-scheduler inverse_sqrt --warmup-updates 4000
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 4096 --max-epoch 60 --keep-last-epochs 5
)
BEAM=5
LENPEN=1.0
GEN_ARGS=(--remove-bpe)
