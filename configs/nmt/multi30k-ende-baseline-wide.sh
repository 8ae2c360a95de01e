# Multi30k En->De study: the second baseline, stock fairseq `transformer` with the
# parameter count of the largest system. The largest is the full-dimension self-gate
# Graph-Transformer (2,781,696 parameters with the joined 7,788-type dictionary against the
# baseline's 2,385,408: +16.6%); widening the six ffn blocks from 512 to 768 adds
# 6 x 256 x 257 = 394,752 (2,780,160: -0.06% from it). Everything else is the recipe of
# multi30k-ende-baseline.sh. Check:
#   python scripts/param-counts.py --src-vocab 7788 --tgt-vocab 7788 "transformer ARGS" ...
source "$(dirname "${BASH_SOURCE[0]}")/multi30k-ende-baseline.sh"
NAME=multi30k-ende-baseline-wide
TRAIN_ARGS+=(--encoder-ffn-embed-dim 768 --decoder-ffn-embed-dim 768)  # later flags win
