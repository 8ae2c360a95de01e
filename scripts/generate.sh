#!/usr/bin/env bash
# fairseq-generate with beam search, then corpus-order outputs, sacreBLEU and tokenized BLEU.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/generate.sh DATA_BIN CHECKPOINT OUT_DIR [--beam 5] [--lenpen 1.0]
         [--subset test] [--batch-size 64] [--remove-bpe sentencepiece|none] [--detok moses|none]
         [--lang TGT_LANG] [--ref RAW_REFERENCE] [--cpu] [-- EXTRA_FAIRSEQ_GENERATE_ARGS]

Writes OUT_DIR/generate-SUBSET.txt (fairseq-generate's output; its log in generate-SUBSET.log),
and in corpus order
OUT_DIR/hyp.txt, ref.txt (detokenized), hyp.tok, ref.tok (tokenized), scores.json; prints
sacreBLEU with its signature, tokenized BLEU (multi-bleu style) and sequence accuracy.
--ref: the raw reference file (e.g. DIR/raw/test.en from prepare-translation.sh) for sacreBLEU;
without it, the detokenized T- lines are used.
USAGE
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

pos=() beam=5 lenpen=1.0 subset=test bsz=64 remove_bpe=sentencepiece detok=moses lang="" ref="" extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --beam) need_positive_int "$@"; beam=$2; shift 2 ;;
    --lenpen) need_value "$@"; lenpen=$2; shift 2 ;;
    --subset) need_value "$@"; subset=$2; shift 2 ;;
    --batch-size) need_positive_int "$@"; bsz=$2; shift 2 ;;
    --remove-bpe) need_value "$@"; remove_bpe=$2; shift 2 ;;
    --detok) need_value "$@"; detok=$2; shift 2 ;;
    --lang) need_value "$@"; lang=$2; shift 2 ;;
    --ref) need_value "$@"; ref=$2; shift 2 ;;
    --cpu) extra+=(--cpu); shift ;;
    --) shift; extra+=("$@"); break ;;
    -*) unknown_option "$1" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[[ ${#pos[@]} -eq 3 ]] || die_usage "needs DATA_BIN, CHECKPOINT and OUT_DIR"
data=${pos[0]} ckpt=${pos[1]} out=${pos[2]}
[[ -d $data ]] || die "DATA_BIN '$data' is not a directory"
[[ -f $ckpt ]] || die "CHECKPOINT '$ckpt' not found"
[[ -z $ref || -f $ref ]] || die "--ref '$ref' not found"
if [[ -z $lang ]]; then  # target language from the binarized file names (train.SRC-TGT.TGT.bin)
  lang=$(ls "$data" | sed -n 's/^[a-z]*\.\([^.-]*\)-\([^.]*\)\.\2\.idx$/\2/p' | head -n 1)
fi
if [[ -n $ref && -n $lang ]]; then  # a reference of the wrong length: fail before decoding
  tool pipeline_steps --prog "$prog" check-reference "$data" "$subset" "$lang" "$ref"
fi
[[ $(cuda_devices) != 0 ]] || extra+=(--cpu)
mkdir -p "$out"
bpe_args=()
[[ $remove_bpe != none ]] && bpe_args=(--remove-bpe "$remove_bpe")
tmp=$out/generate-$subset.txt.partial
fairseq-generate "$data" --user-dir "$root/fairseq_plugins" --path "$ckpt" --gen-subset "$subset" \
  --beam "$beam" --lenpen "$lenpen" --batch-size "$bsz" ${bpe_args[@]+"${bpe_args[@]}"} ${extra[@]+"${extra[@]}"} \
  > "$tmp" 2> "$out/generate-$subset.log" \
  || { rm -f "$tmp"
       err=$(grep '^fairseq_plugins: error:' "$out/generate-$subset.log" | tail -n 1 || true)
       [[ -z $err ]] || fail "fairseq-generate failed: $err"
       log "fairseq-generate failed (see $out/generate-$subset.log):"
       grep -v '^\s*$' "$out/generate-$subset.log" | tail -n 3 >&2
       exit 1; }
mv "$tmp" "$out/generate-$subset.txt"
grep '^Generate' "$out/generate-$subset.txt" || true
score=(py "$root/scripts/score-translation.py" "$out/generate-$subset.txt" --out "$out" --lang "${lang:-en}" --detok "$detok")
[[ -n $ref ]] && score+=(--ref "$ref")
"${score[@]}"
echo "$prog: outputs in $out (hyp.txt, ref.txt, scores.json)"
