#!/usr/bin/env python3
"""Raw parallel text -> (sacremoses tokenization) -> (sentencepiece BPE) -> fairseq-preprocess.

Used by prepare-translation.sh; see its --help. Every input problem is reported in one line naming
the file, before anything is written.
"""

import gzip
import os
import shutil
import subprocess
import sys

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


class PrepareError(Exception):
    pass


def open_text(path):
    return (
        gzip.open(path, "rt", encoding="utf-8")
        if path.endswith(".gz")
        else open(path, encoding="utf-8")
    )


def find_file(prefix, lang):
    for candidate in (f"{prefix}.{lang}", f"{prefix}.{lang}.gz"):
        if os.path.isfile(candidate):
            return candidate
    raise PrepareError(f"missing input file {prefix}.{lang} (or .gz)")


def read_lines(path):
    try:
        with open_text(path) as f:
            return [line.rstrip("\n") for line in f]
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise PrepareError(f"cannot read {path}: {e}") from None


def read_parallel(prefix, src, tgt, max_lines=None):
    src_path, tgt_path = find_file(prefix, src), find_file(prefix, tgt)
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    if len(src_lines) != len(tgt_lines):
        raise PrepareError(
            f"line counts differ: {src_path} has {len(src_lines)}, {tgt_path} has {len(tgt_lines)}"
        )
    if not src_lines:
        raise PrepareError(f"empty input file {src_path}")
    if max_lines:
        src_lines, tgt_lines = src_lines[:max_lines], tgt_lines[:max_lines]
    kept = [(s, t) for s, t in zip(src_lines, tgt_lines) if s.strip() and t.strip()]
    dropped = len(src_lines) - len(kept)
    if dropped:
        print(f"prepare: {prefix}: dropped {dropped} pair(s) with an empty side", file=sys.stderr)
    if not kept:
        raise PrepareError(f"no non-empty sentence pairs in {src_path} / {tgt_path}")
    return [s for s, _ in kept], [t for _, t in kept]


def tokenize(lines, lang, tokenizer):
    if tokenizer == "none":
        return [" ".join(line.split()) for line in lines]
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    norm, tok = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    return [tok.tokenize(norm.normalize(line), return_str=True, escape=False) for line in lines]


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def train_spm(inputs, model_prefix, vocab_size):
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=",".join(inputs),
        model_prefix=model_prefix,
        vocab_size=vocab_size,
        model_type="bpe",
        character_coverage=1.0,
        hard_vocab_limit=False,  # small corpora: take what the data supports
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        pad_id=-1,
        minloglevel=2,
    )
    return spm.SentencePieceProcessor(model_file=model_prefix + ".model")


def main():
    p = OneLineParser(prog="prepare-translation", description=__doc__)
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--train", required=True, help="prefix: PREFIX.SRC and PREFIX.TGT (.gz ok)")
    p.add_argument("--valid", required=True)
    p.add_argument("--test", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--tokenizer", choices=["moses", "none"], default="moses")
    p.add_argument("--bpe", choices=["joint", "separate", "none"], default="joint")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--joined-dictionary", action="store_true")
    p.add_argument("--max-train-lines", type=int, default=None)
    p.add_argument("--max-eval-lines", type=int, default=None)
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args()
    if args.vocab_size < 8:
        raise PrepareError(f"--vocab-size must be >= 8 (got {args.vocab_size})")

    # Read and check everything before writing anything.
    splits = {"train": read_parallel(args.train, args.src, args.tgt, args.max_train_lines)}
    splits["valid"] = read_parallel(args.valid, args.src, args.tgt, args.max_eval_lines)
    if args.test:
        splits["test"] = read_parallel(args.test, args.src, args.tgt, args.max_eval_lines)

    out = args.out
    for sub in ("raw", "tok", "bpe"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    for split, (s, t) in splits.items():
        write(os.path.join(out, "raw", f"{split}.{args.src}"), s)  # cleaned, for sacreBLEU refs
        write(os.path.join(out, "raw", f"{split}.{args.tgt}"), t)
        write(
            os.path.join(out, "tok", f"{split}.{args.src}"), tokenize(s, args.src, args.tokenizer)
        )
        write(
            os.path.join(out, "tok", f"{split}.{args.tgt}"), tokenize(t, args.tgt, args.tokenizer)
        )

    if args.bpe == "none":
        text_dir = "tok"
    else:
        text_dir = "bpe"
        tok = lambda split, lang: os.path.join(out, "tok", f"{split}.{lang}")  # noqa: E731
        if args.bpe == "joint":
            model = train_spm(
                [tok("train", args.src), tok("train", args.tgt)],
                os.path.join(out, "spm"),
                args.vocab_size,
            )
            models = {args.src: model, args.tgt: model}
        else:
            models = {
                lang: train_spm(
                    [tok("train", lang)], os.path.join(out, f"spm.{lang}"), args.vocab_size
                )
                for lang in (args.src, args.tgt)
            }
        for split in splits:
            for lang in (args.src, args.tgt):
                lines = read_lines(tok(split, lang))
                pieces = [" ".join(models[lang].encode(line, out_type=str)) for line in lines]
                write(os.path.join(out, "bpe", f"{split}.{lang}"), pieces)

    prefix = os.path.join(out, text_dir)
    cmd = ["fairseq-preprocess", "--source-lang", args.src, "--target-lang", args.tgt]
    cmd += ["--trainpref", f"{prefix}/train", "--validpref", f"{prefix}/valid"]
    if args.test:
        cmd += ["--testpref", f"{prefix}/test"]
    # Binarize into a fresh folder and swap it in only on success: a re-run replaces an older
    # bin/ (fairseq-preprocess refuses existing dictionaries), a failed run leaves it untouched.
    final, staging = os.path.join(out, "bin"), os.path.join(out, f"bin.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    cmd += ["--destdir", staging, "--workers", str(args.workers)]
    if args.joined_dictionary:
        cmd.append("--joined-dictionary")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise PrepareError(f"fairseq-preprocess failed: {proc.stderr.strip().splitlines()[-1]}")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staging, final)
    n = {k: len(v[0]) for k, v in splits.items()}
    print(
        f"prepare: {out}/bin ready ({', '.join(f'{k} {v}' for k, v in n.items())} pairs; text in {prefix})"
    )


if __name__ == "__main__":
    try:
        main()
    except PrepareError as e:
        print(f"prepare-translation: error: {e}", file=sys.stderr)
        sys.exit(2)
