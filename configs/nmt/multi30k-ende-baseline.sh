# Multi30k English->German (WMT16 multimodal task 1; valid = val, test = test_2016_flickr), the
# En-De study: stock fairseq `transformer` with the shared recipe of every multi30k-ende-*
# system (the others source this file and change the architecture only).
# Run the whole study (prepare, train, decode, significance, curves, docs/results-nmt.md):
#   bash scripts/study-nmt.sh
# Data: bash scripts/prepare-multi30k.sh data-bin/multi30k.en-de --src en --tgt de
# (moses tokens, joint sentencepiece BPE 8000, joined dictionary: 7788 types).
#
# Recipe, sized for a CPU budget (the same for all systems): 3+3 layers, d 128, ffn 512, 4 heads,
# all embeddings shared (joined dictionary), dropout 0.2, label smoothing 0.1, Adam (0.9, 0.98),
# lr 1e-3 with inverse_sqrt and 400 warm-up updates, 2048 tokens per batch (about 300 updates per
# epoch), validation loss every epoch; training stops when the validation loss has not improved
# for 3 epochs (--patience 3) or after 7 epochs (--max-epoch 7), whichever comes first;
# checkpoint_best.pt (lowest validation loss) is decoded with beam 5, lenpen 1.0.
# Budget (one seed of four systems, the wide baseline aside: about 1.9 CPU hours planned):
# measured on the shared 2-core machine (20-update runs with 4096-token batches, CPU seconds of
# one thread, start-up subtracted), an update costs 1.1 CPU-s at d 128 (compositional 1.45;
# Graph-Transformer about 1.3x the baseline) and 2.3 at d 256. With 2048-token batches (about
# 300 updates per epoch) an epoch costs about 2.8 CPU-min for the baseline, 3.7 compositional,
# 3.5 Graph-Transformer weight-gate, about 3.9 sum/self-gate (full dimension); a one-seed run
# measured 2.7, 3.1, 2.9 and 3.3 (90 CPU-min for seed 1 of four systems, the losing selection
# candidate included). The study (3 seeds, the wide baseline added, about 3.0 CPU-min an epoch):
# 7 epochs x (2.7 + 3.0 + 3.1 + 2.9 + 3.3) = 105 CPU-min a seed, 3 seeds plus the selection
# loser (7 min) and decoding (15 runs, about 1 CPU-min each): about 5.6 CPU-hours, 2.8 wall
# hours on two cores (two processes, see scripts/study-nmt.sh --help). The De-En study
# (configs/nmt/multi30k-deen-*.sh: 4 systems, 2.7 + 3.0 + 2.9 + 3.3 an epoch, 3 seeds, decoding): about 4.4
# CPU-hours. docs/results-nmt.md reports the measured cost of the run itself.
NAME=multi30k-ende-baseline
ARCH=transformer
DATA=${MULTI30K_ENDE_BIN:-data-bin/multi30k.en-de/bin}
SRC=en
TGT=de
BEAM=5
LENPEN=1.0
TRAIN_ARGS=(
  --encoder-layers 3 --decoder-layers 3
  --encoder-embed-dim 128 --decoder-embed-dim 128
  --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512
  --encoder-attention-heads 4 --decoder-attention-heads 4
  --share-all-embeddings --dropout 0.2
  --optimizer adam --adam-betas "(0.9,0.98)" --lr 0.001 --lr-scheduler inverse_sqrt
  --warmup-updates 400 --warmup-init-lr 1e-07 --clip-norm 1.0 --weight-decay 0.0001
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 2048 --max-epoch 7 --patience 3
  --no-epoch-checkpoints --seed 1 --num-workers 0 --log-interval 50
)
GEN_ARGS=(--remove-bpe sentencepiece)  # prepare-multi30k.sh: moses tokens + sentencepiece BPE
