#!/usr/bin/env python3
"""Write the embedded synthetic translation task used by scripts/demo.sh (no download).

A toy language pair with a fixed random lexicon and two reordering rules, so that a model must
learn word translation, reordering and (for the long test split) generalise to longer sentences:

  source:  [adj* noun] verb [adj* noun] (and [adj* noun] verb [adj* noun])*
  target:  subject nouns before adjectives, verb moved to the end of each clause, words translated.

Splits: train/valid/test with 1-2 clauses, test-long with 3 clauses (length generalisation).
Deterministic for a given --seed.
"""

import argparse
import os
import random

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


def build_lexicon(rng, n_nouns, n_adjs, n_verbs):
    def word(prefix, i):
        return f"{prefix}{i}"

    def target_word(used):
        letters = "bcdfghklmnprstvz"
        vowels = "aeiou"
        while True:
            w = "".join(rng.choice(letters) + rng.choice(vowels) for _ in range(rng.randint(2, 3)))
            if w not in used:
                used.add(w)
                return w

    used = set()
    lex = {}
    for prefix, n in (("n", n_nouns), ("a", n_adjs), ("v", n_verbs)):
        for i in range(n):
            lex[word(prefix, i)] = target_word(used)
    return lex


def sample_pair(rng, lex, n_clauses, nouns, adjs, verbs):
    src, tgt = [], []
    for c in range(n_clauses):
        if c:
            src.append("and")
            tgt.append("ko")

        def phrase():
            a = rng.sample(adjs, rng.randint(0, 2))
            n = rng.choice(nouns)
            # target: noun first, then adjectives in reverse order
            return a + [n], [lex[n]] + [lex[w] for w in reversed(a)]

        s1, t1 = phrase()
        v = rng.choice(verbs)
        s2, t2 = phrase()
        src += s1 + [v] + s2
        tgt += t1 + t2 + [lex[v]]  # verb-final clause
    return " ".join(src), " ".join(tgt)


def main():
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--train", type=int, default=20000)
    p.add_argument("--valid", type=int, default=500)
    p.add_argument("--test", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--src", default="src")
    p.add_argument("--tgt", default="tgt")
    args = p.parse_args()

    rng = random.Random(args.seed)
    lex = build_lexicon(rng, 60, 20, 20)
    nouns = [w for w in lex if w.startswith("n")]
    adjs = [w for w in lex if w.startswith("a")]
    verbs = [w for w in lex if w.startswith("v")]
    os.makedirs(args.outdir, exist_ok=True)
    seen = set()
    splits = [
        ("train", args.train, (1, 2)),
        ("valid", args.valid, (1, 2)),
        ("test", args.test, (1, 2)),
        ("test-long", args.test, (3, 3)),
    ]
    for split, n, (lo, hi) in splits:
        pairs = []
        while len(pairs) < n:
            s, t = sample_pair(rng, lex, rng.randint(lo, hi), nouns, adjs, verbs)
            if s in seen:  # keep the evaluation splits disjoint from training
                continue
            seen.add(s)
            pairs.append((s, t))
        for lang, idx in ((args.src, 0), (args.tgt, 1)):
            with open(os.path.join(args.outdir, f"{split}.{lang}"), "w") as f:
                f.writelines(p[idx] + "\n" for p in pairs)
    print(
        f"make-demo-data: wrote {args.outdir}/{{train,valid,test,test-long}}.{{{args.src},{args.tgt}}}"
    )


if __name__ == "__main__":
    main()
