# WikiText-2 study: Compositional-Attention LM, the paper's LM recipe scaled down
# (compositional_transformer_lm: shared pre-norm layers, S = R = heads = 4, d_s 32, tied
# embeddings) with the data, batch, token budget and schedule of wikitext2-study-baseline.sh and
# the paper's compositional lr 0.004 (a hand run's; scripts/study-lm.sh sweeps the lr). The four
# layers share one set of parameters, so the ffn is widened to 2752 to match the baseline's
# parameters (1,815,776 vs 1,817,344 with the study's 8,000-entry dictionary, -0.09%; at the
# 33,280-word vocabulary of WikiText-2's words: 5,051,616 vs 5,053,184; check with
#   python scripts/param-counts.py --lm --src-vocab 8000 --tgt-vocab 8000 "ARCH FLAGS" ...).
source "$(dirname "${BASH_SOURCE[0]}")/wikitext2-study-baseline.sh"
NAME=wikitext2-study-compositional
ARCH=compositional_transformer_lm
TRAIN_ARGS+=(--decoder-ffn-embed-dim 2752 --num-searches 4 --num-retrievals 4 --lr 0.004)  # later flags win
