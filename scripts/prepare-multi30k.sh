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
case "${1:-}" in -h|--help|"") usage; [[ -n ${1:-} ]] && exit 0; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=$1; shift
raw=""; src=de; tgt=en; extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --raw-dir) raw=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --tgt) tgt=$2; shift 2 ;;
    --vocab-size|--max-train-lines|--max-eval-lines) extra+=("$1" "$2"); shift 2 ;;
    *) echo "prepare-multi30k.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z $raw ]]; then  # the corpora's one resolution; fetched (get-corpora.sh) when absent
  raw=$(python3 "$root/plugin_tools/corpora.py" --prog prepare-multi30k.sh path --fetch multi30k) \
    || { echo "prepare-multi30k.sh: no Multi30k files (see above); pass --raw-dir DIR" >&2; exit 1; }
fi
[[ -d $raw ]] || { echo "prepare-multi30k.sh: --raw-dir $raw is not a directory" >&2; exit 2; }
exec bash "$root/scripts/prepare-translation.sh" --src "$src" --tgt "$tgt" \
  --train "$raw/train" --valid "$raw/val" --test "$raw/test_2016_flickr" --out "$out" \
  --tokenizer moses --bpe joint --joined-dictionary "${extra[@]}"
