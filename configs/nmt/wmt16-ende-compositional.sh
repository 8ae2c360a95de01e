# WMT'16 En->De, transformer base shapes with Compositional Attention (S = R = 8 = heads).
NAME=wmt16-ende-compositional
ARCH=compositional_transformer_wmt_en_de
DATA=${WMT16_BIN:-data-bin/wmt16_en_de_bpe32k}
SRC=en
TGT=de
TRAIN_ARGS=(
  --share-all-embeddings --dropout 0.1 --weight-decay 0.0
  --optimizer adam --adam-betas "(0.9,0.98)" --clip-norm 0.0
  --lr 7e-4 --lr-scheduler inverse_sqrt --warmup-updates 4000 --warmup-init-lr 1e-07
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 4096 --update-freq 8 --max-update 100000 --keep-last-epochs 5
)
BEAM=4
LENPEN=0.6
GEN_ARGS=(--remove-bpe)
