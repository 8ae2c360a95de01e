#!/usr/bin/env bash
# WikiText-2 / WikiText-103 -> fairseq-preprocess'd data for --task language_modeling.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/prepare-wikitext.sh {2,103} [DIR] [--out OUTDIR] [--max-train-lines N]
                                        [--max-eval-lines N] [--workers N]

Binarizes WikiText-2 or WikiText-103 (word level, v1: tokens as released) for fairseq's
language_modeling task with `fairseq-preprocess --only-source` (dictionary from the training split).

  DIR                 local copy: a folder with train/valid/test as train.txt, valid.txt, test.txt
                      (pytorch/examples naming) or wiki.train.tokens, ... (the release zips), each
                      possibly gzipped (.gz). Without DIR:
                      2:   the project's corpus folder ($FAIRSEQ_PLUGINS_DATA/wikitext-2,
                           ../shared/data/wikitext-2 or ./corpora/wikitext-2), which
                           scripts/get-corpora.sh fills (pytorch/examples' word_language_model
                           files) when none has it;
                      103: wikitext-103-v1.zip from the S3 bucket of the release, downloaded
                           into OUTDIR/download.
  --out OUTDIR        output folder (default data-bin/wikitext-VERSION); the binarized data go to
                      OUTDIR/bin (pass that to train-lm.sh / eval-lm.sh), the text to OUTDIR/text.
  --max-train-lines N keep only the first N lines of the training split (quick runs, tests).
  --max-eval-lines N  keep only the first N lines of valid and test (quick runs, tests).
  --workers N         fairseq-preprocess workers (default 1).
USAGE
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

pos=() out="" max_train="" max_eval="" workers=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --max-train-lines) need_positive_int "$@"; max_train=$2; shift 2 ;;
    --max-eval-lines) need_positive_int "$@"; max_eval=$2; shift 2 ;;
    --workers) need_positive_int "$@"; workers=$2; shift 2 ;;
    -*) unknown_option "$1" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[[ ${#pos[@]} -ge 1 ]] || die_usage "needs the version, 2 or 103"
[[ ${#pos[@]} -le 2 ]] || die_usage "unexpected argument '${pos[2]}'"
version=${pos[0]} dir=${pos[1]:-}
[[ $version == 2 || $version == 103 ]] || die "version must be 2 or 103, not '$version'"
out=${out:-data-bin/wikitext-$version}
command -v fairseq-preprocess >/dev/null || die "fairseq-preprocess not on PATH (run scripts/setup.sh)"

fetch() {  # URL FILE
  log "downloading $1"
  if command -v curl >/dev/null; then curl -fsL --retry 3 -o "$2.part" "$1"
  elif command -v wget >/dev/null; then wget -q -O "$2.part" "$1"
  else tool pipeline_steps --prog "$prog" download "$1" "$2.part"
  fi || die "download of $1 failed (offline? pass a local DIR)"
  mv "$2.part" "$2"
}

if [[ -z $dir ]]; then
  if [[ $version == 103 ]]; then
    dl=$out/download
    mkdir -p "$dl"
    [[ -f $dl/wikitext-103-v1.zip ]] || fetch https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip "$dl/wikitext-103-v1.zip"
    [[ -f $dl/wikitext-103/wiki.train.tokens ]] || unzip -q -o "$dl/wikitext-103-v1.zip" -d "$dl"
    dir=$dl/wikitext-103
  else  # the corpora's one resolution; fetched (get-corpora.sh) when absent
    dir=$(tool corpora --prog "$prog" path --fetch wikitext-2) \
      || die "no WikiText-2 files (see above); pass a local DIR"
  fi
fi
[[ -d $dir ]] || die "$dir: no such directory"

find_split() {  # SPLIT -> path of its file in $dir
  local split=$1 name
  for name in "$split.txt" "$split.txt.gz" "wiki.$split.tokens" "wiki.$split.tokens.gz"; do
    [[ -f $dir/$name ]] && { echo "$dir/$name"; return 0; }
  done
  die "$dir: no $split split ($split.txt, $split.txt.gz, wiki.$split.tokens or wiki.$split.tokens.gz)"
}

text=$out/text
mkdir -p "$text"
for split in train valid test; do
  src=$(find_split "$split")
  limit=$max_eval; [[ $split == train ]] && limit=$max_train
  reader=(cat "$src"); [[ $src == *.gz ]] && reader=(gzip -dc "$src")
  # awk reads to the end (no SIGPIPE under pipefail) and stops printing after the limit
  "${reader[@]}" | awk -v n="${limit:-0}" 'n == 0 || NR <= n' > "$text/$split.txt" \
    || die "$src: could not be read"
  [[ -s $text/$split.txt ]] || die "$src: empty"
done

rm -rf "$out/bin"
fairseq-preprocess --only-source --trainpref "$text/train.txt" --validpref "$text/valid.txt" \
  --testpref "$text/test.txt" --destdir "$out/bin" --workers "$workers" >&2
log "WikiText-$version ($(wc -l < "$text/train.txt") train lines," \
  "dictionary of $(wc -l < "$out/bin/dict.txt") words + 4 specials) -> $out/bin"
echo "$out/bin"
