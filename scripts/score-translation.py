#!/usr/bin/env python3
"""Turn fairseq-generate output into corpus-order hypothesis/reference files and score them:
sacreBLEU (detokenized, with its signature), tokenized BLEU (multi-bleu style) and sequence
accuracy. Used by generate.sh."""

import json
import os
import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools import seq_accuracy
from plugin_tools.cli import OneLineParser


def parse_generate(path):
    """Corpus-order (hyps, refs, ids) from fairseq-generate output (the shared parser: first H-
    line of an id is its best hypothesis, lines in any order)."""
    with open(path, encoding="utf-8") as f:
        hyps, refs, _ = seq_accuracy.parse_generate_output(f)
    if not hyps:
        raise SystemExit(f"score: error: no H- lines in {path} (is it fairseq-generate output?)")
    ids = sorted(hyps)
    return [hyps[i] for i in ids], [refs.get(i, "") for i in ids], ids


def detokenize(lines, lang, method):
    if method == "none":
        return lines
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    return [detok.detokenize(line.split()) for line in lines]


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def main():
    p = OneLineParser(description=__doc__)
    p.add_argument("generate_output")
    p.add_argument("--out", required=True)
    p.add_argument("--lang", default="en")
    p.add_argument("--detok", choices=["moses", "none"], default="moses")
    p.add_argument("--ref", default=None, help="raw references in corpus order (for sacreBLEU)")
    args = p.parse_args()

    import sacrebleu

    hyp_tok, ref_tok, ids = parse_generate(args.generate_output)
    hyp = detokenize(hyp_tok, args.lang, args.detok)
    if args.ref:
        with open(args.ref, encoding="utf-8") as f:
            all_refs = [line.rstrip("\n") for line in f]
        if not all_refs:
            raise SystemExit(f"score: error: --ref {args.ref} is empty")
        complete = ids == list(range(len(ids)))  # every sentence of the subset was decoded
        if len(all_refs) <= max(ids) or (complete and len(all_refs) != len(ids)):
            raise SystemExit(
                f"score: error: --ref {args.ref} has {len(all_refs)} lines, but "
                f"{args.generate_output} holds {len(ids)} sentences (ids 0..{max(ids)}); "
                "is it the reference of this subset?"
            )
        ref = [all_refs[i] for i in ids]
    else:
        ref = detokenize(ref_tok, args.lang, args.detok)
    os.makedirs(args.out, exist_ok=True)
    write(os.path.join(args.out, "hyp.txt"), hyp)
    write(os.path.join(args.out, "ref.txt"), ref)
    write(os.path.join(args.out, "hyp.tok"), hyp_tok)
    write(os.path.join(args.out, "ref.tok"), ref_tok)

    bleu = sacrebleu.metrics.BLEU()
    score = bleu.corpus_score(hyp, [ref])
    tok_bleu = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(hyp_tok, [ref_tok])
    accuracy = seq_accuracy.score(hyp_tok, ref_tok)["accuracy"]
    result = {
        "sentences": len(hyp),
        "sacrebleu": round(score.score, 2),
        "sacrebleu_signature": str(bleu.get_signature()),
        "tokenized_bleu": round(tok_bleu.score, 2),
        "sequence_accuracy": round(accuracy, 4),
    }
    with open(os.path.join(args.out, "scores.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"sacreBLEU {result['sacrebleu']:.2f}  ({result['sacrebleu_signature']})")
    print(f"tokenized BLEU {result['tokenized_bleu']:.2f}  (multi-bleu style, on tokenized text)")
    print(f"sequence accuracy {accuracy:.4f}  ({len(hyp)} sentences)")


if __name__ == "__main__":
    sys.exit(main())
