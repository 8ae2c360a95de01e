#!/usr/bin/env python3
"""Write a compositional-generalization task as plain parallel text for fairseq-preprocess.

Algorithmic tasks of Ontañón et al. (2021), "Making Transformers Solve Compositional Tasks",
generated here with a seeded RNG (same --seed, same files, byte for byte):

  add       two non-negative integers, 1-8 digits (test: 9-10), each left-padded with `0` to 12
            tokens:  `d1 [SEP] d2`  ->  `sum` (also padded to 12)
  addneg    as add, each operand negative with probability 0.25; padding `#`, and `-` right
            before the digits:  `# # - 3 6 7 [SEP] # # 1 4 9 1` -> `# # 1 1 2 4` (width 12)
  reverse   digit string, length 1-16 (test: 17-24)  ->  the string reversed
  dup       digit string, length 1-16 (test: 17-24)  ->  the string twice
  cart      `s1 [SEP] s2`, s1 of 1-6 digits, s2 of 1-6 letters a-j (test: both 7-8)
            ->  `x1 y1 [SEP] x2 y1 [SEP] ... [SEP] xn ym` (s1 varies fastest, as in the paper)
  inters    two sets of distinct tokens from a0..j9, sizes 1-16 (test: 17-24), `A [SEP] B`
            ->  `true` if they intersect else `false`; each split exactly balanced

The paper's `[END]` token is fairseq's end-of-sentence symbol, appended by fairseq itself, so
it is not written. Padding and width follow docs/method.md §2.8 (our reading of
the official google-research notebook): Add pads with `0`, AddNeg with `#`.

Splits (defaults: 200,000 train; valid = test size; 512 test for add/addneg, 1,024 otherwise):
  train   i.i.d. from the training distribution (duplicates possible, as in i.i.d. sampling)
  valid   in-distribution, held out: distinct sources that do not occur in train
  test    the harder (longer) split, distinct sources; disjoint from train by construction and
          checked.

Loaders of the published data (read from --raw-dir, default the corpus folder that
plugin_tools/corpora.py finds: $FAIRSEQ_PLUGINS_DATA, ../shared/data or ./corpora):
  scan-length            SCAN length split (Lake & Baroni 2018); valid held out of the train file
  scan-addjump           SCAN add-primitive "jump" split; the test file
                         (add_prim_split/tasks_test_addprim_jump.txt) is held out of the shipped
                         copy: without it only train/valid are written
  scan-length-cutoff-N   Csordas et al. (2021) resplit of tasks.txt by output length, N in 22..40:
                         outputs of <= N actions go 90/10 to train/valid (the i.i.d. test),
                         longer ones to test
  cogs                   COGS (Kim & Linzen 2020): train, valid (dev.tsv), test (test.tsv,
                         in-distribution), gen (gen.tsv, the generalization set the paper reports)
                         and gen.category (the generalization case of every gen line)
  pcfg-productivity      PCFG SET (Hupkes et al. 2020); not shipped here: --raw-dir DIR with the
  pcfg-systematicity     published {train,dev,test}.{src,tgt}, or downloaded when online

  cfq-SPLIT              CFQ (Keysers et al. 2020), SPLIT a file of the release's splits/ (mcd1,
                         mcd2, mcd3, random_split, ...); not shipped here: --raw-dir DIR with the
                         published dataset.json and splits/SPLIT.json (see load_cfq)

Options of the official generators (google-research seq2seq.ipynb, docs/official-code.md
O4). The paper's runs use none of them; each is off by default, and the default output is
unchanged byte for byte. Each refuses the tasks it does not apply to.
  --alignment-tokens     add, addneg: every token of a (padded, 12-token) operand is followed by a
                         position marker P<k>, k counting down from 12 to 1:
                         `0 P12 ... 1 P3 2 P2 3 P1 [SEP] 0 P12 ... 5 P1`; the sum has no markers.
                         The numbers drawn are those of the run without the option. (The official
                         vocabulary lacks P12, so the notebook as written would fail with it on;
                         fairseq builds its dictionary from the data, so no such problem here.)
  --dup-variant V        dup (the official `variableduplication`): 0 (default, the paper):
                         `digits` -> `digits digits`. 1: n uniform in 1..4, input `n [SEP] digits`
                         with n one digit token, output the digits n times. 2: as 1 with n written
                         in unary, n tokens `1`: `1 1 1 [SEP] 4 7` -> `4 7 4 7 4 7`. 3: as 2, but
                         the test split draws n from 5..6 (with its longer strings). Our choice
                         where the notes are silent: the digits are drawn first, then n.
  --reverse-cart         cart (the official `reverse`): source and target swapped, the product
                         list `x1 y1 [SEP] x2 y1 ...` in, `s1 [SEP] s2` out (our product order and
                         separators; the official list has set1 outer and a [SEP] after every
                         pair). Sets are drawn with replacement, so some product lists have more
                         than one answer (`1 a [SEP] 1 a` is 1 x a,a or 1,1 x a), as in the
                         official code: 812 of 20,000 training draws (seed 1), 3 of 20,000 test
                         draws.
  --keep-all-steps       scan-*: each instance (a list of step sequences) becomes the pairs
                         step_i -> step_i+1 instead of first -> last. SCAN instances have exactly
                         two steps (command, actions), so the data are the same with or without
                         it, as in the official code (where it is also not passed through by the
                         length and add-jump wrappers); kept for parity.
  --map-output-to-input  scan-*: the actions I_WALK I_JUMP I_LOOK I_RUN are written walk jump look
                         run (I_TURN_LEFT / I_TURN_RIGHT unchanged), so that with a joined
                         dictionary an action is the same symbol as its command word (copyable).
  --cfq-im               cfq-*: the targets in the CFQ-im intermediate representation (cartesian
                         products compressed; plugin_tools/cfq_im.py), the original
                         queries in SPLIT.sparql.
  --notebook             the notebook's data preparation (docs/compgen.md, "The authors' notebook
                         and our pipeline"). Algorithmic tasks: the same files. scan-length,
                         scan-addjump: every source begins with [START]; the whole train file is
                         trained on, valid is a seeded sample of it. cogs: every source begins
                         with [START]; every target is cut as the notebook's tensors cut it (its
                         target length is the longest [START] sentence [END] of train, test and
                         gen, 63 tokens, and longer logical forms keep their last 61 tokens).
Non-default options are recorded in meta.json under "options".

Every OUTDIR gets SPLIT.src / SPLIT.tgt (space-separated tokens, one example a line) and
meta.json: counts, the split to report (`eval_split`: test, gen for COGS, null when absent) and
its category file if any. --small (or explicit --train/--valid/--test) makes smaller sets.
"""

import argparse
import json
import os
import random
import sys
import urllib.error
import urllib.request
from pathlib import Path

# corpora: the one resolution of the corpus folders ($FAIRSEQ_PLUGINS_DATA, ../shared/data, ./corpora)
from plugin_tools import cfq_im, cogs_tags, corpora
from plugin_tools.cli import OneLineParser

ALGORITHMIC = ("add", "addneg", "reverse", "dup", "cart", "inters")
SMALL = {"train": 1000, "valid": 100, "test": 100}
WIDTH = 12  # operand and result width of add / addneg (docs/method.md §2.8)
DIGITS = [str(d) for d in range(10)]
LETTERS = list("abcdefghij")
INTERS_VOCAB = [f"{c}{d}" for c in LETTERS for d in range(10)]  # a0 .. j9

PCFG_URL = (
    "https://raw.githubusercontent.com/i-machine-think/am-i-compositional/master/data/pcfgset"
)


class DataError(Exception):
    """A problem the user can fix (missing file, bad option); printed as one line."""


# --------------------------------------------------------------------------------------------
# Algorithmic generators. Each takes (rng, hard, index) and returns (source, target) token
# lists; hard=True draws from the test (longer) distribution.


def _number(rng, lo, hi):
    """A random integer with a uniformly drawn number of digits in lo..hi."""
    n = rng.randint(lo, hi)
    if n == 1:
        return rng.randint(0, 9)
    return rng.randint(10 ** (n - 1), 10**n - 1)


def _padded(value, pad):
    tokens = (["-"] if value < 0 else []) + list(str(abs(value)))
    if len(tokens) > WIDTH:
        raise AssertionError(f"{value} does not fit in {WIDTH} tokens")
    return [pad] * (WIDTH - len(tokens)) + tokens


def gen_add(rng, hard, index, neg_prob=0.0, pad="0"):
    lo, hi = (9, 10) if hard else (1, 8)
    a, b = _number(rng, lo, hi), _number(rng, lo, hi)
    if neg_prob:
        a = -a if rng.random() < neg_prob else a
        b = -b if rng.random() < neg_prob else b
    return _padded(a, pad) + ["[SEP]"] + _padded(b, pad), _padded(a + b, pad)


def gen_addneg(rng, hard, index):
    return gen_add(rng, hard, index, neg_prob=0.25, pad="#")


def _digits(rng, hard):
    n = rng.randint(17, 24) if hard else rng.randint(1, 16)
    return rng.choices(DIGITS, k=n)


def gen_reverse(rng, hard, index):
    s = _digits(rng, hard)
    return s, s[::-1]


def gen_dup(rng, hard, index):
    s = _digits(rng, hard)
    return s, s + s


def gen_cart(rng, hard, index):
    lo, hi = (7, 8) if hard else (1, 6)
    s1 = rng.choices(DIGITS, k=rng.randint(lo, hi))
    s2 = rng.choices(LETTERS, k=rng.randint(lo, hi))
    out = []
    for y in s2:
        for x in s1:
            out += ([] if not out else ["[SEP]"]) + [x, y]
    return s1 + ["[SEP]"] + s2, out


def gen_inters(rng, hard, index):
    lo, hi = (17, 24) if hard else (1, 16)
    want = index % 2 == 0  # alternate labels: every split is exactly balanced (odd n: +1 true)
    n1, n2 = rng.randint(lo, hi), rng.randint(lo, hi)
    a = rng.sample(INTERS_VOCAB, n1)
    if want:
        b = rng.sample(INTERS_VOCAB, n2)
        if not set(a) & set(b):  # force one shared element
            b[rng.randrange(n2)] = rng.choice(a)
    else:
        rest = [t for t in INTERS_VOCAB if t not in set(a)]
        b = rng.sample(rest, n2)
    assert bool(set(a) & set(b)) == want
    return a + ["[SEP]"] + b, ["true" if want else "false"]


GENERATORS = {
    "add": gen_add,
    "addneg": gen_addneg,
    "reverse": gen_reverse,
    "dup": gen_dup,
    "cart": gen_cart,
    "inters": gen_inters,
}


def alignment_markers(operand):
    """`--alignment-tokens`: each token followed by P<k>, k counting down to 1."""
    out = []
    for k, tok in zip(range(len(operand), 0, -1), operand):
        out += [tok, f"P{k}"]
    return out


def gen_dup_variable(rng, hard, index, variant):
    """`--dup-variant` 1-3 (the official `variableduplication`): repeat the digits n times."""
    s = _digits(rng, hard)
    n = rng.randint(5, 6) if hard and variant == 3 else rng.randint(1, 4)
    prefix = [str(n)] if variant == 1 else ["1"] * n
    return prefix + ["[SEP]"] + s, s * n


# Options of the official generators: flag -> (tasks it applies to, default value).
OPTIONS = {
    "alignment_tokens": (("add", "addneg"), False),
    "dup_variant": (("dup",), 0),
    "reverse_cart": (("cart",), False),
    "keep_all_steps": (("scan-",), False),
    "map_output_to_input": (("scan-",), False),
    "cfq_im": (("cfq-",), False),
    # the authors' notebook's data preparation (docs/compgen.md, "The authors' notebook and our
    # pipeline"); the generated tasks are drawn as without it
    "notebook": (ALGORITHMIC + ("scan-length", "scan-addjump", "cogs"), False),
}
START = "[START]"  # the notebook's start token, first source token of SCAN and COGS


def notebook_source(pairs):
    """SCAN and COGS sources as the notebook writes them: `[START] words` (+ the end token, which
    fairseq appends as </s>)."""
    return [([START, *src], tgt) for src, tgt in pairs]


def notebook_cogs_length(splits):
    """The notebook's COGS tensor length: the longest `[START] sentence [END]` of train, test and
    gen (whole splits). It pads and cuts the targets to this length too (its maximum target
    length is computed from the inputs), keeping their ends (Keras's pad_sequences cuts the
    front), so longer logical forms lose their beginnings."""
    return max(len(src) + 2 for name in ("train", "test", "gen") for src, _ in splits[name])


def notebook_cogs_targets(pairs, length):
    """The target tokens the notebook scores: `[START] lf [END]` cut to its last LENGTH tokens,
    without the first (a decoder input only) and the end token (fairseq's </s>): the last
    LENGTH - 2 tokens of a longer lf, the whole of a shorter one."""
    keep = length - 2
    return [(src, tgt[-keep:] if len(tgt) > keep else tgt) for src, tgt in pairs]


def make_generator(task, options=None):
    """The generator of task with the official options applied (None: the plain generator)."""
    options = options or {}
    gen = GENERATORS[task]
    if options.get("alignment_tokens"):
        base = gen

        def gen(rng, hard, index):
            src, tgt = base(rng, hard, index)
            sep = src.index("[SEP]")
            marked = alignment_markers(src[:sep]) + ["[SEP]"] + alignment_markers(src[sep + 1 :])
            return marked, tgt

    if options.get("dup_variant"):
        variant = options["dup_variant"]

        def gen(rng, hard, index):
            return gen_dup_variable(rng, hard, index, variant)

    if options.get("reverse_cart"):
        base = gen

        def gen(rng, hard, index):
            src, tgt = base(rng, hard, index)
            return tgt, src

    return gen


def draw(gen, rng, n, hard, exclude=(), distinct=False):
    """n examples of gen; with distinct, no repeated source and none whose source is in exclude."""
    out, seen = [], set(exclude)
    attempts, limit = 0, 200 * n + 10_000
    while len(out) < n:
        attempts += 1
        if attempts > limit:
            raise DataError(
                f"could only draw {len(out)} of {n} distinct held-out examples; ask for fewer"
            )
        src, tgt = gen(rng, hard, len(out))
        key = " ".join(src)
        if key in seen:
            continue
        if distinct:
            seen.add(key)
        out.append((src, tgt))
    return out


def generate(task, counts, seed, options=None):
    gen = make_generator(task, options)
    # One RNG stream per split (str seeds hash deterministically, independent of PYTHONHASHSEED).
    train = draw(gen, random.Random(f"{task}/{seed}/train"), counts["train"], hard=False)
    train_src = {" ".join(s) for s, _ in train}
    valid = draw(
        gen,
        random.Random(f"{task}/{seed}/valid"),
        counts["valid"],
        hard=False,
        exclude=train_src,
        distinct=True,
    )
    test = draw(gen, random.Random(f"{task}/{seed}/test"), counts["test"], hard=True, distinct=True)
    return {"train": train, "valid": valid, "test": test}


# --------------------------------------------------------------------------------------------
# Loaders of published data.


def _need(path):
    if not path.is_file():
        raise DataError(f"missing file {path} (set --raw-dir)")
    return path


def read_scan(path):
    pairs = []
    for n, line in enumerate(_need(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        if not line.startswith("IN: ") or " OUT: " not in line:
            raise DataError(f"{path}:{n}: not a SCAN line (`IN: ... OUT: ...`)")
        src, tgt = line[4:].split(" OUT: ", 1)
        pairs.append((src.split(), tgt.split()))
    return pairs


SCAN_ACTION_WORDS = {"I_WALK": "walk", "I_JUMP": "jump", "I_LOOK": "look", "I_RUN": "run"}


def instance_pairs(steps, keep_all_steps=False):
    """Training pairs of one instance (a list of step sequences), as the official SCAN loader.

    keep_all_steps: step_i -> step_i+1 for every i; otherwise first -> last only.
    """
    if len(steps) < 2:
        raise ValueError("an instance needs at least two steps")
    if keep_all_steps:
        return [(steps[i], steps[i + 1]) for i in range(len(steps) - 1)]
    return [(steps[0], steps[-1])]


def map_output_to_input(pairs):
    """`--map-output-to-input`: SCAN actions written as their command words."""
    return [(s, [SCAN_ACTION_WORDS.get(t, t) for t in tgt]) for s, tgt in pairs]


def hold_out(pairs, n_valid, rng):
    """Split pairs into (rest, held-out valid of n_valid) with a seeded shuffle.

    Only sources that occur once are held out: a repeated line is deliberate upsampling (SCAN
    add-jump repeats `jump` 1467 times) and must stay in train, and the valid sources then never
    occur in train.
    """
    n_src = {}
    for s, _ in pairs:
        n_src[" ".join(s)] = n_src.get(" ".join(s), 0) + 1
    idx = [i for i, (s, _) in enumerate(pairs) if n_src[" ".join(s)] == 1]
    if n_valid >= len(idx):
        raise DataError(f"--valid {n_valid} leaves no training data ({len(idx)} examples)")
    rng.shuffle(idx)
    held = set(idx[:n_valid])
    return [p for i, p in enumerate(pairs) if i not in held], [pairs[i] for i in sorted(held)]


def subsample(pairs, n, rng, extra=None):
    """At most n pairs (and the aligned extra list), original order kept."""
    if n is None or n >= len(pairs):
        return (pairs, extra) if extra is not None else pairs
    keep = sorted(rng.sample(range(len(pairs)), n))
    picked = [pairs[i] for i in keep]
    return (picked, [extra[i] for i in keep]) if extra is not None else picked


def load_scan(task, raw, counts, seed, explicit, options=None):
    options = options or {}
    rng = random.Random(f"{task}/{seed}")
    cats = {}
    keep = options.get("keep_all_steps", False)

    def read(path):  # every SCAN line is a two-step instance [command, actions]
        return [p for s, t in read_scan(path) for p in instance_pairs([s, t], keep)]

    notebook = options.get("notebook", False)
    # The notebook trains on the whole train file; its in-training check set is a part of it.
    split_off = notebook_valid if notebook else hold_out
    if task == "scan-length":
        train = read(raw / "length_split" / "tasks_train_length.txt")
        test = read(raw / "length_split" / "tasks_test_length.txt")
        n_valid = counts["valid"] if explicit["valid"] else len(train) // 10
        train, valid = split_off(train, n_valid, rng)
    elif task == "scan-addjump":
        train = read(raw / "add_prim_split" / "tasks_train_addprim_jump.txt")
        test_file = raw / "add_prim_split" / "tasks_test_addprim_jump.txt"
        test = read(test_file) if test_file.is_file() else None
        if test is None:
            print(
                f"compgen-data: scan-addjump: the test file {test_file} is held out of this copy "
                "(see SOURCE.md); wrote train/valid only, no test split",
                file=sys.stderr,
            )
        n_valid = counts["valid"] if explicit["valid"] else len(train) // 10
        train, valid = split_off(train, n_valid, rng)
    else:  # scan-length-cutoff-N
        try:
            cutoff = int(task.rsplit("-", 1)[1])
        except ValueError:
            raise DataError(
                f"bad task {task!r}: expected scan-length-cutoff-N, N in 22..40"
            ) from None
        if not 22 <= cutoff <= 40:
            raise DataError(f"bad task {task!r}: cutoff {cutoff} outside 22..40")
        pairs = read(raw / "tasks.txt")
        short = [p for p in pairs if len(p[1]) <= cutoff]
        test = [p for p in pairs if len(p[1]) > cutoff]
        rng.shuffle(short)
        n_train = round(0.9 * len(short))
        train, valid = short[:n_train], short[n_train:]
    splits = {"train": train, "valid": valid}
    if test is not None:
        splits["test"] = test
    for name in list(splits):
        if explicit[name]:
            splits[name] = subsample(splits[name], counts[name], rng)
        if options.get("map_output_to_input"):
            splits[name] = map_output_to_input(splits[name])
        if notebook:
            splits[name] = notebook_source(splits[name])
    return splits, cats, ("test" if test is not None else None)


def notebook_valid(pairs, n_valid, rng):
    """(all pairs, a seeded sample of n_valid of them): the notebook's check set is a part of the
    training set, which keeps every example."""
    if n_valid >= len(pairs):
        raise DataError(f"--valid {n_valid}: only {len(pairs)} training examples")
    return pairs, [pairs[i] for i in sorted(rng.sample(range(len(pairs)), n_valid))]


def read_cogs(path):
    pairs, cats = [], []
    try:
        for _, sentence, logical_form, category in cogs_tags.read_tsv(path):
            pairs.append((sentence.split(), logical_form.split()))
            cats.append(category)
    except cogs_tags.TagError as e:
        raise DataError(str(e)) from None
    return pairs, cats


def cogs_gen_path(raw):
    """The published COGS gen split in folder RAW: gen.tsv.gz where it is, else gen.tsv."""
    return raw / "gen.tsv.gz" if (raw / "gen.tsv.gz").is_file() else raw / "gen.tsv"


def load_cogs(task, raw, counts, seed, explicit, options=None):
    rng = random.Random(f"{task}/{seed}")
    gen_path = cogs_gen_path(raw)
    splits, cats = {}, {}
    for name, fname in (("train", "train.tsv"), ("valid", "dev.tsv"), ("test", "test.tsv")):
        splits[name], _ = read_cogs(_need(raw / fname))
    splits["gen"], cats["gen"] = read_cogs(_need(gen_path))
    if (options or {}).get("notebook"):  # before any subsampling: the length is the whole data's
        length = notebook_cogs_length(splits)
        for name in splits:
            splits[name] = notebook_source(notebook_cogs_targets(splits[name], length))
    counts = dict(counts, gen=counts["test"])
    explicit = dict(explicit, gen=explicit["test"])
    for name in list(splits):
        if explicit[name]:
            if name in cats:
                splits[name], cats[name] = subsample(splits[name], counts[name], rng, cats[name])
            else:
                splits[name] = subsample(splits[name], counts[name], rng)
    return splits, cats, "gen"


def _pcfg_files(raw, variant):
    """The directory holding the published train.src etc. for this PCFG variant, or None."""
    for d in (raw / variant, raw / "pcfgset" / variant, raw):
        if (d / "train.src").is_file() and (d / "test.src").is_file():
            return d
    return None


def _download_pcfg(variant, dest):
    base = os.environ.get("COMPGEN_PCFG_URL", PCFG_URL).rstrip("/")
    got = {}
    for split in ("train", "dev", "test"):
        for side in ("src", "tgt"):
            url = f"{base}/{variant}/{split}.{side}"
            try:
                with urllib.request.urlopen(url, timeout=20) as r:
                    got[f"{split}.{side}"] = r.read()
            except (urllib.error.URLError, OSError, ValueError) as e:
                if split == "dev":  # optional: held out of train when absent
                    got.pop("dev.src", None)
                    break
                raise DataError(f"download of {url} failed ({e})") from None
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in got.items():
        (dest / name).write_bytes(data)
    return dest


def load_pcfg(task, raw, counts, seed, explicit, download_dir, allow_download):
    variant = task.split("-", 1)[1]
    d = _pcfg_files(raw, variant)
    if d is None:
        why = f"no PCFG files (train.src, test.src, ...) under {raw} or {raw / variant}"
        if not allow_download:
            raise DataError(f"{task}: {why}; pass --raw-dir DIR with the published files")
        try:
            d = _download_pcfg(variant, download_dir)
        except DataError as e:
            raise DataError(
                f"{task}: {why}, and {e}; pass --raw-dir DIR with the published files of "
                "https://github.com/i-machine-think/am-i-compositional (data/pcfgset)"
            ) from None

    def read(split):
        src = _need(d / f"{split}.src").read_text().splitlines()
        tgt = _need(d / f"{split}.tgt").read_text().splitlines()
        if len(src) != len(tgt):
            raise DataError(f"{d}/{split}.src and .tgt differ in length ({len(src)}, {len(tgt)})")
        return [(s.split(), t.split()) for s, t in zip(src, tgt)]

    rng = random.Random(f"{task}/{seed}")
    train, test = read("train"), read("test")
    if (d / "dev.src").is_file():
        valid = read("dev")
    else:
        train, valid = hold_out(train, counts["valid"] if explicit["valid"] else 1000, rng)
    splits = {"train": train, "valid": valid, "test": test}
    for name in list(splits):
        if explicit[name]:
            splits[name] = subsample(splits[name], counts[name], rng)
    return splits, {}, "test"


CFQ_SPLIT_KEYS = {"train": "trainIdxs", "valid": "devIdxs", "test": "testIdxs"}


def load_cfq(task, raw, counts, seed, explicit, options=None):
    """CFQ (Keysers et al. 2020) from the public release (cfq1.1.tar.gz, unpacked in --raw-dir).

    Reads RAW/dataset.json (or RAW/cfq/dataset.json): a JSON list of examples, and
    RAW/splits/SPLIT.json: {"trainIdxs": [...], "devIdxs": [...], "testIdxs": [...]}, indices
    into that list (task cfq-mcd1 reads splits/mcd1.json). Source: questionPatternModEntities,
    target: sparqlPatternModEntities (entities replaced by M0, M1, ... as in the paper's examples),
    tokenized as the release's preprocess.py does (plugin_tools/cfq_im.py). No devIdxs
    (the first release): valid is held out of train. With --cfq-im the targets are CFQ-im and
    the queries go to SPLIT.sparql. The whole dataset.json is loaded with json.load (it is large:
    several GB of memory), as TFDS does. NOT RUN on the real release: it cannot be fetched here;
    tested on a hand-written release-format sample only.
    """
    options = options or {}
    split = task[len("cfq-") :]
    if not split or "/" in split:
        raise DataError(f"bad task {task!r}: expected cfq-SPLIT, e.g. cfq-mcd1")
    base = raw if (raw / "dataset.json").is_file() else raw / "cfq"
    data_path = base / "dataset.json"
    split_path = base / "splits" / f"{split}.json"
    if not data_path.is_file():
        raise DataError(
            f"{task}: missing file {raw / 'dataset.json'}; pass --raw-dir DIR with the unpacked "
            "CFQ release (dataset.json, splits/)"
        )
    _need(split_path)

    def load_json(path):
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(f"{path}: not valid JSON ({e})") from None

    idx = load_json(split_path)
    if not isinstance(idx, dict) or "trainIdxs" not in idx or "testIdxs" not in idx:
        raise DataError(f"{split_path}: expected keys trainIdxs and testIdxs")
    data = load_json(data_path)
    if not isinstance(data, list):
        raise DataError(f"{data_path}: expected a JSON list of examples")

    def pair(i):
        if not isinstance(i, int) or not 0 <= i < len(data):
            raise DataError(f"{split_path}: index {i!r} outside {data_path} ({len(data)} examples)")
        ex = data[i]
        try:
            q, s = ex["questionPatternModEntities"], ex["sparqlPatternModEntities"]
        except (KeyError, TypeError):
            raise DataError(
                f"{data_path}: example {i} lacks questionPatternModEntities / "
                "sparqlPatternModEntities"
            ) from None
        return cfq_im.preprocess_question(q).split(), cfq_im.preprocess_sparql(s).split()

    rng = random.Random(f"{task}/{seed}")
    splits = {
        name: [pair(i) for i in idx[key]] for name, key in CFQ_SPLIT_KEYS.items() if key in idx
    }
    if "valid" not in splits:
        n_valid = counts["valid"] if explicit["valid"] else len(splits["train"]) // 20
        splits["train"], splits["valid"] = hold_out(splits["train"], n_valid, rng)
    splits = {k: splits[k] for k in ("train", "valid", "test")}
    for name in list(splits):
        if explicit[name]:
            splits[name] = subsample(splits[name], counts[name], rng)
    extra = {}
    if options.get("cfq_im"):
        stats = {}
        for name, pairs in splits.items():
            extra[f"{name}.sparql"] = [" ".join(t) for _, t in pairs]
            splits[name] = [(s, cfq_im.to_im(t, stats).split()) for s, t in pairs]
        extra["cfq_im_segments"] = stats
    return splits, {}, "test", extra


# --------------------------------------------------------------------------------------------


def train_overlap(splits):
    train_src = {" ".join(s) for s, _ in splits["train"]}
    return {
        name: sum(" ".join(s) in train_src for s, _ in pairs)
        for name, pairs in splits.items()
        if name != "train"
    }


def check_disjoint(splits):
    train_src = {" ".join(s) for s, _ in splits["train"]}
    for name, pairs in splits.items():
        if name == "train":
            continue
        overlap = sum(" ".join(s) in train_src for s, _ in pairs)
        if overlap:
            raise DataError(f"{overlap} {name} sources also occur in train")


def write(outdir, splits, cats, meta):
    outdir.mkdir(parents=True, exist_ok=True)
    for name, pairs in splits.items():
        for side, k in (("src", 0), ("tgt", 1)):
            with open(outdir / f"{name}.{side}", "w", encoding="utf-8") as f:
                for pair in pairs:
                    if not pair[k]:
                        raise DataError(f"empty {side} line in {name}")
                    f.write(" ".join(pair[k]) + "\n")
    for name, labels in cats.items():
        (outdir / f"{name}.category").write_text("".join(c + "\n" for c in labels))
    (outdir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def resolve_counts(task, train=None, valid=None, test=None, small=False):
    """(counts, explicit): split sizes asked for, and which were asked for explicitly.

    Generated tasks: 200,000 train, 512 test for add/addneg and 1,024 otherwise, valid = test
    size. Loaders keep the published sizes (None) unless a size is given or --small.
    """
    given = {"train": train, "valid": valid, "test": test}
    explicit = {k: v is not None or small for k, v in given.items()}
    counts = {k: v if v is not None else (SMALL[k] if small else None) for k, v in given.items()}
    if task in ALGORITHMIC:
        counts["train"] = counts["train"] or 200_000
        counts["test"] = counts["test"] or (512 if task in ("add", "addneg") else 1024)
        counts["valid"] = counts["valid"] or counts["test"]
    return counts, explicit


def parse_args(argv):
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "task",
        help="add, addneg, reverse, dup, cart, inters, scan-length, scan-addjump, "
        "scan-length-cutoff-N, cogs, pcfg-productivity, pcfg-systematicity, cfq-SPLIT "
        "(cfq-mcd1, cfq-mcd2, cfq-mcd3, ...)",
    )
    p.add_argument("outdir", type=Path)
    p.add_argument("--train", type=int, help="training examples (default 200000 / all)")
    p.add_argument("--valid", type=int, help="validation examples (default: test size / 10%%)")
    p.add_argument("--test", type=int, help="test examples (default 512 add/addneg, else 1024)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--small", action="store_true", help="1000 train, 100 valid, 100 test")
    p.add_argument(
        "--raw-dir",
        type=Path,
        help="published files (default $FAIRSEQ_PLUGINS_DATA/NAME, ../shared/data/NAME or ./corpora/NAME)",
    )
    p.add_argument("--no-download", action="store_true", help="PCFG: never try to download")
    g = p.add_argument_group("options of the official generators (see above)")
    g.add_argument("--alignment-tokens", action="store_true", help="add, addneg: P<k> markers")
    g.add_argument(
        "--dup-variant", type=int, default=0, help="dup: 0 (paper), 1, 2 or 3 (repeat n times)"
    )
    g.add_argument("--reverse-cart", action="store_true", help="cart: product list -> sets")
    g.add_argument("--keep-all-steps", action="store_true", help="scan-*: consecutive steps")
    g.add_argument("--map-output-to-input", action="store_true", help="scan-*: I_WALK -> walk, ...")
    g.add_argument("--cfq-im", action="store_true", help="cfq-*: CFQ-im targets")
    g.add_argument(
        "--notebook",
        action="store_true",
        help="the authors' notebook's data (algorithmic tasks: unchanged; scan-length, "
        "scan-addjump: [START] first in every source, nothing held out of train, valid a part of "
        "it; cogs: [START] first, targets cut to the notebook's tensor length)",
    )
    return p.parse_args(argv)


def resolve_options(task, args):
    """{option: value} of the non-default generator options; DataError if one does not apply."""
    options = {}
    for name, (tasks, default) in OPTIONS.items():
        value = getattr(args, name)
        if value == default:
            continue
        flag = "--" + name.replace("_", "-")
        if not any(task == t or (t.endswith("-") and task.startswith(t)) for t in tasks):
            allowed = ", ".join(t + "*" if t.endswith("-") else t for t in tasks)
            raise DataError(f"{flag}: only for {allowed}, not {task}")
        options[name] = value
    if options.get("dup_variant", 0) not in (0, 1, 2, 3):
        raise DataError(f"--dup-variant {options['dup_variant']}: must be 0, 1, 2 or 3")
    return options


def main(argv=None):
    args = parse_args(argv)
    task = args.task.lower()
    for flag in ("train", "valid", "test"):
        v = getattr(args, flag)
        if v is not None and v < 1:
            raise DataError(f"--{flag} {v}: must be at least 1")
    counts, explicit = resolve_counts(task, args.train, args.valid, args.test, args.small)
    options = resolve_options(task, args)
    extra = {}
    if task in ALGORITHMIC:
        splits, cats, eval_split = generate(task, counts, args.seed, options), {}, "test"
        source = "generated (Ontañón et al. 2021 formats, docs/method.md §2.8)"
    else:
        if task.startswith("scan-"):
            name = "scan"
        elif task == "cogs":
            name = "cogs"
        elif task in ("pcfg-productivity", "pcfg-systematicity"):
            name = "pcfg"
        elif task.startswith("cfq-"):
            name = "cfq"
        else:
            raise DataError(f"unknown task {args.task!r} (see --help)")
        raw = args.raw_dir or corpora.corpus_dir(name)
        if args.raw_dir is not None and not raw.is_dir():
            raise DataError(f"--raw-dir {raw}: not a directory")
        if name == "scan":
            if task not in ("scan-length", "scan-addjump") and not task.startswith(
                "scan-length-cutoff-"
            ):
                raise DataError(f"unknown task {args.task!r} (see --help)")
            splits, cats, eval_split = load_scan(task, raw, counts, args.seed, explicit, options)
        elif name == "cogs":
            splits, cats, eval_split = load_cogs(task, raw, counts, args.seed, explicit, options)
        elif name == "cfq":
            splits, cats, eval_split, extra = load_cfq(
                task, raw, counts, args.seed, explicit, options
            )
        else:
            splits, cats, eval_split = load_pcfg(
                task,
                raw,
                counts,
                args.seed,
                explicit,
                args.outdir / f"raw-{task}",
                not args.no_download,
            )
        source = str(raw)
    if task.startswith("cfq-"):
        # MCD splits are defined by compound divergence, not by distinct questions: report the
        # overlap with train instead of refusing it (not measured here: no CFQ data).
        overlap = train_overlap(splits)
    else:
        # the notebook path's SCAN valid is a part of train by design
        notebook_scan = options.get("notebook") and task.startswith("scan-")
        check_disjoint({k: v for k, v in splits.items() if not (notebook_scan and k == "valid")})
    meta = {
        "task": task,
        "seed": args.seed,
        "source": source,
        "splits": {k: len(v) for k, v in splits.items()},
        "eval_split": eval_split,
        "categories": f"{eval_split}.category" if eval_split in cats else None,
    }
    if options:
        meta["options"] = options
    if task.startswith("cfq-"):
        meta["train_overlap"] = overlap
        if "cfq_im_segments" in extra:
            meta["cfq_im_segments"] = seg = extra.pop("cfq_im_segments")
            if seg["kept"]:
                print(
                    f"compgen-data: {task}: {seg['kept']} of {seg['segments']} WHERE segments "
                    "were not in sorted order and are written uncompressed (still invertible)",
                    file=sys.stderr,
                )
    write(args.outdir, splits, cats, meta)
    for fname, lines in extra.items():
        (args.outdir / fname).write_text("".join(x + "\n" for x in lines))
    sizes = ", ".join(f"{k} {v}" for k, v in meta["splits"].items())
    report = f"report {eval_split}" if eval_split else "NO test split"
    print(f"compgen-data: {task} -> {args.outdir} ({sizes}; {report})", file=sys.stderr)


def cli(argv=None):
    """scripts/compgen-data.py: main() with a DataError as one line `compgen-data: ...` (exit 1)."""
    try:
        main(argv)
    except DataError as e:
        sys.exit(f"compgen-data: {e}")
