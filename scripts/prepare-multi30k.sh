#!/usr/bin/env bash
# Multi30k (task 1) -> tokenized, BPE'd, binarized data for fairseq.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/prepare-multi30k.sh OUT_DIR [--raw-dir DIR] [--src de] [--tgt en]
         [--vocab-size 8000] [--max-train-lines N] [--max-eval-lines N]

Takes the raw Multi30k files (train, val, test_2016_flickr; .gz or plain) from --raw-dir, or
without it from the project's corpus folder ($FAIRSEQ_PLUGINS_DATA/multi30k, ../shared/data/multi30k
or ./corpora/multi30k), which scripts/get-corpora.sh fills from github.com/multi30k/dataset when
none has them. Then runs scripts/prepare-translation.sh with moses tokenization, joint
sentencepiece BPE and a joined dictionary. Output: OUT_DIR/bin.
USAGE
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

pos=() raw="" src=de tgt=en extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --raw-dir) need_value "$@"; raw=$2; shift 2 ;;
    --src) need_value "$@"; src=$2; shift 2 ;;
    --tgt) need_value "$@"; tgt=$2; shift 2 ;;
    --vocab-size|--max-train-lines|--max-eval-lines) need_value "$@"; extra+=("$1" "$2"); shift 2 ;;
    -*) unknown_option "$1" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[[ ${#pos[@]} -eq 1 ]] || die_usage "needs OUT_DIR"
out=${pos[0]}
if [[ -z $raw ]]; then  # the corpora's one resolution; fetched (get-corpora.sh) when absent
  raw=$(tool corpora --prog "$prog" path --fetch multi30k) \
    || fail "no Multi30k files (see above); pass --raw-dir DIR"
fi
[[ -d $raw ]] || die "--raw-dir $raw is not a directory"
exec bash "$root/scripts/prepare-translation.sh" --src "$src" --tgt "$tgt" \
  --train "$raw/train" --valid "$raw/val" --test "$raw/test_2016_flickr" --out "$out" \
  --tokenizer moses --bpe joint --joined-dictionary ${extra[@]+"${extra[@]}"}
