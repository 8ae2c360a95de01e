#!/usr/bin/env bash
# Raw parallel text -> sacremoses tokenization -> sentencepiece BPE -> fairseq-preprocess.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/prepare-translation.sh --src L1 --tgt L2 --train PREFIX --valid PREFIX
         [--test PREFIX] --out DIR [--tokenizer moses|none] [--bpe joint|separate|none]
         [--vocab-size 8000] [--joined-dictionary] [--max-train-lines N] [--max-eval-lines N]

Reads PREFIX.L1 / PREFIX.L2 (plain or .gz, one sentence per line, aligned), checks that the line
counts match, drops (and reports) pairs with an empty side, tokenizes with sacremoses (or not),
learns sentencepiece BPE on the training text (one joint model or one per language), and runs
fairseq-preprocess. Writes DIR/raw (cleaned text, the references for sacreBLEU), DIR/tok, DIR/bpe,
DIR/spm*.model and DIR/bin (the data directory for fairseq-train).
USAGE
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
if wants_help "$@"; then usage; exit 0; fi
python=$(python_cmd)
exec "$python" "$root/scripts/prepare-translation.py" "$@"  # parses the options (one-line errors)
