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
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[[ $# -ge 3 ]] || { usage >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
[[ -d $root/.venv/bin ]] && export PATH=$root/.venv/bin:$PATH
data=$1; ckpt=$2; out=$3; shift 3
beam=5; lenpen=1.0; subset=test; bsz=64; remove_bpe=sentencepiece; detok=moses; lang=""; ref=""; extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --beam) beam=$2; shift 2 ;;
    --lenpen) lenpen=$2; shift 2 ;;
    --subset) subset=$2; shift 2 ;;
    --batch-size) bsz=$2; shift 2 ;;
    --remove-bpe) remove_bpe=$2; shift 2 ;;
    --detok) detok=$2; shift 2 ;;
    --lang) lang=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --cpu) extra+=(--cpu); shift ;;
    --) shift; extra+=("$@"); break ;;
    *) echo "generate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -d $data ]] || { echo "generate.sh: DATA_BIN '$data' is not a directory" >&2; exit 2; }
[[ -f $ckpt ]] || { echo "generate.sh: CHECKPOINT '$ckpt' not found" >&2; exit 2; }
[[ -z $ref || -f $ref ]] || { echo "generate.sh: --ref '$ref' not found" >&2; exit 2; }
if [[ -z $lang ]]; then  # target language from the binarized file names (train.SRC-TGT.TGT.bin)
  lang=$(ls "$data" | sed -n 's/^[a-z]*\.\([^.-]*\)-\([^.]*\)\.\2\.idx$/\2/p' | head -n 1)
fi
if [[ -n $ref && -n $lang ]]; then  # a reference of the wrong length: fail before decoding
  python - "$data" "$subset" "$lang" "$ref" <<'PY' || exit 2
import glob, struct, sys
data, subset, lang, ref = sys.argv[1:]
for idx in sorted(glob.glob(f"{data}/{subset}.*-*.{lang}.idx")):
    with open(idx, "rb") as f:
        head = f.read(26)
    if head[:9] != b"MMIDIDX\x00\x00":  # not fairseq's default mmap format: checked later
        break
    n = struct.unpack("<Q", head[18:26])[0]
    with open(ref, encoding="utf-8", errors="replace") as f:
        lines = sum(1 for _ in f)
    if lines != n:
        sys.exit(f"generate.sh: --ref '{ref}' has {lines} lines, but subset '{subset}' of {data} has {n} sentences")
    break
PY
fi
python -c 'import torch; exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || extra+=(--cpu)
mkdir -p "$out"
bpe_args=()
[[ $remove_bpe != none ]] && bpe_args=(--remove-bpe "$remove_bpe")
tmp=$out/generate-$subset.txt.partial
fairseq-generate "$data" --user-dir "$root/fairseq_plugins" --path "$ckpt" --gen-subset "$subset" \
  --beam "$beam" --lenpen "$lenpen" --batch-size "$bsz" "${bpe_args[@]}" "${extra[@]}" \
  > "$tmp" 2> "$out/generate-$subset.log" \
  || { if grep -q '^fairseq_plugins: error:' "$out/generate-$subset.log"; then
         echo "generate.sh: fairseq-generate failed: $(grep '^fairseq_plugins: error:' "$out/generate-$subset.log" | tail -n 1)" >&2
       else
         echo "generate.sh: fairseq-generate failed (see $out/generate-$subset.log):" >&2
         grep -v '^\s*$' "$out/generate-$subset.log" | tail -n 3 >&2
       fi
       rm -f "$tmp"; exit 1; }
mv "$tmp" "$out/generate-$subset.txt"
grep '^Generate' "$out/generate-$subset.txt" || true
score=(python "$root/scripts/score-translation.py" "$out/generate-$subset.txt" --out "$out" --lang "${lang:-en}" --detok "$detok")
[[ -n $ref ]] && score+=(--ref "$ref")
"${score[@]}"
echo "generate.sh: outputs in $out (hyp.txt, ref.txt, scores.json)"
