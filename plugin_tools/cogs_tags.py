"""COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1, Table 5). Pure Python.

Each input token gets five tags: parent, role, category, noun_type (the noun determiner) and
verb_name. The logical form (LF) is rebuilt from them deterministically. The rules follow the
authors' generator (``cogs_seq_tagging_data_gen.ipynb``) as described in
docs/official-code.md O1 (section numbers below are that file's O1.x):

- :func:`lf_to_tags` is the forward conversion of section 1.2, steps 1-7, in the code's order.
- :func:`tags_to_lf` is the inverse, the generator's ``reconstruct_target`` (section 1.5).
- :func:`encode_parents` / :func:`decode_parents` give the three parent encodings of section 1.4
  (absolute, relative, attention) as values; :func:`parent_classes` gives the official class
  indices.
- :func:`tags_exact_match` is the official metric (O2.4: all five rows equal);
  :func:`lf_exact_match` rebuilds the LF from predicted rows and compares it with the COGS target.

Tags are plain values: parent is the absolute index of the parent token (-1: none), the string
tags use ``""`` for the official empty tag (``NONE_ROLE``, written ``∅`` in the notes). In files
the empty tag is written :data:`FILE_NONE` (``_``), because fairseq reads whitespace-separated
tokens.

Choices where the notes are silent (each one is exercised by the round trip over all of COGS):

- The clause split works on LF tokens (``AND`` and ``;`` tokens) rather than on the string with
  spaces deleted; the two are the same on COGS, whose words are lower case.
- Step 4 matches the controller clause ``V . agent ( x _ i , A )`` by its parsed fields, not by
  a string prefix (a prefix ``V.agent(x_1`` would also match ``x_10``).
- The inverse writes a noun's name as the surface token, with ``TV`` written ``tv``; the notes
  state this for noun clauses, and we apply it also to the head noun of an ``nmod`` clause
  (needed: 38 COGS examples have ``tv . nmod . P``).
- ARG (the second argument of a role clause) is the token itself for a proper name, else
  ``x _ i``. The notes' test is "first letter upper case" only, which would print ``TV`` for a
  TV that is a direct verb argument (their caveat, O1.6); we use the same spelling rule as step 2
  (upper-case first letter, and not A / An / The / TV). On COGS both give the same LFs: no TV
  is a direct verb argument in train, dev, test or gen.
- Primitive examples (``distribution == 'primitive'``, one token) get tags (step 1) but, as in
  the official code, cannot be rebuilt: the tags hold no variable and no verb frame (whether a
  verb primitive has agent, theme or recipient lambdas). :func:`tags_to_lf` refuses them.
- Predicted rows that do not describe a tree the inverse can read (a parent outside the
  sentence, a role whose parent has no verb name, a PP noun whose parent has no parent, an xcomp
  with no controller) raise :class:`TagError`; :func:`lf_exact_match` counts them as wrong.
"""

import gzip
import re
from typing import NamedTuple

NONE = ""  # the official empty tag
FILE_NONE = "_"  # how the empty tag is written in tag files
NO_PARENT = -1
NOT_PROPER = frozenset({"A", "An", "The", "TV"})  # upper-case tokens that are not names
ROLES = ("agent", "theme", "recipient", "ccomp", "xcomp", "PREP", "PP_NOUN")
PARENT_KINDS = ("absolute", "relative", "attention")
PAD_PARENT = 99999  # the official padding class value of every parent vocabulary

# tag row -> file suffix of scripts/cogs-tags.py
FILE_SUFFIX = {
    "parent": "parent",
    "role": "role",
    "category": "cat",
    "noun_type": "det",
    "verb_name": "verb",
}


class TagError(ValueError):
    """An LF the tag representation cannot hold, or tag rows that do not describe an LF."""


class Tags(NamedTuple):
    """The five tag rows of one sentence, one entry per token."""

    parent: list  # int: absolute index of the parent token, -1 for none
    role: list  # str
    category: list  # str
    noun_type: list  # str
    verb_name: list  # str


ROWS = Tags._fields  # the five tag rows, in the order of the model's heads and the tag files
TAG_ROWS = ROWS[1:]  # the rows with a tag vocabulary (the parent row holds token indices)


def _tokens(x):
    return x.split(" ") if isinstance(x, str) else list(x)


def is_proper_name(token):
    """Step 2: proper names are spelled with an upper-case first letter (not A/An/The/TV)."""
    return token[:1].isupper() and token not in NOT_PROPER


def _noun(token):
    return "tv" if token == "TV" else token


# ---------------------------------------------------------------------------------- LF -> tags

_CLAUSE = re.compile(r"^(\*?)([^().*]+(?:\.[^().]+)*)\(([^()]*)\)$")
_VAR = re.compile(r"^x_(\d+)$")


class _Clause(NamedTuple):
    text: str  # spaces removed, e.g. "help.theme(x_3,x_1)"
    star: bool
    name: tuple  # ("help", "theme"), ("cake", "nmod", "in"), ("rose",)
    args: tuple  # ints for variables, str for constants


def _split_on(tokens, sep):
    out, cur = [], []
    for t in tokens:
        if t == sep:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    out.append(cur)
    return out


def _parse_clause(text):
    m = _CLAUSE.match(text)
    if not m:
        raise TagError(f"cannot parse clause {text!r}")
    args = []
    for a in m.group(3).split(","):
        v = _VAR.match(a)
        args.append(int(v.group(1)) if v else a)
    return _Clause(text, bool(m.group(1)), tuple(m.group(2).split(".")), tuple(args))


def lf_clauses(lf):
    """Step 3: the LF's clauses, spaces deleted: split on AND, then the first piece on `;`."""
    pieces = _split_on(_tokens(lf), "AND")
    parts = _split_on(pieces[0], ";") + pieces[1:]
    return ["".join(p) for p in parts]


def _check(cond, msg):
    if not cond:
        raise TagError(msg)


def lf_to_tags(tokens, lf, distribution="in_distribution"):
    """Forward conversion (docs/official-code.md O1.2): the five tag rows of one COGS example.

    tokens: the sentence (string split on single spaces, or a list); lf: the COGS target.
    Raises TagError when the LF does not fit the representation.
    """
    tokens = _tokens(tokens)
    n = len(tokens)
    parent = [NO_PARENT] * n
    role, category, noun_type, verb_name = ([NONE] * n for _ in range(4))
    tags = Tags(parent, role, category, noun_type, verb_name)

    # 1. primitives
    if distribution == "primitive":
        _check(n == 1, f"primitive with {n} tokens")
        lambdas = _tokens(lf).count("LAMBDA")
        if lambdas == 0:
            category[0] = "PNOUN"
        elif lambdas == 1:
            category[0] = "CNOUN"
        else:
            _check(tokens[0] in _tokens(lf), f"verb primitive {tokens[0]!r} not in its LF")
            category[0] = "VERB"
            verb_name[0] = tokens[0]
        return tags

    # 2. proper names, by spelling only
    for i, t in enumerate(tokens):
        if is_proper_name(t):
            category[i] = "PNOUN"

    # 3. clauses
    clauses = [_parse_clause(c) for c in lf_clauses(lf)]
    for c in clauses:
        for a in c.args:
            _check(not isinstance(a, int) or 0 <= a < n, f"{c.text}: variable outside sentence")

    # 4. redundant xcomp agents
    for c in list(clauses):
        if len(c.name) == 2 and c.name[1] == "xcomp":
            verb, (i, j) = c.name[0], c.args
            ctrl = [d for d in clauses if d.name == (verb, "agent") and d.args and d.args[0] == i]
            _check(len(ctrl) == 1, f"{c.text}: {len(ctrl)} agent clauses of {verb} x_{i}")
            _check(isinstance(j, int), f"{c.text}: xcomp of a constant")
            agent = ctrl[0].args[1]
            redundant = (tokens[j], "agent")
            drop = [d for d in clauses if d.name == redundant and d.args == (j, agent)]
            _check(len(drop) == 1, f"{c.text}: no clause {tokens[j]}.agent(x_{j},{agent})")
            clauses.remove(drop[0])
            verb_name[j] = tokens[j]

    for c in clauses:
        if len(c.name) == 1:  # 5. noun clause
            _check(len(c.args) == 1 and isinstance(c.args[0], int), f"bad noun clause {c.text}")
            i = c.args[0]
            category[i] = "CNOUN"
            noun_type[i] = "DEF" if c.star else "INDEF"
        elif len(c.name) == 3 and c.name[1] == "nmod":  # 6. PP clause
            prep = c.name[2]
            _check(
                len(c.args) == 2 and all(isinstance(a, int) for a in c.args),
                f"bad PP clause {c.text}",
            )
            a, b = c.args
            ks = [k for k in range(min(a, b) + 1, max(a, b)) if tokens[k] == prep]
            _check(len(ks) == 1, f"{c.text}: {len(ks)} tokens {prep!r} between x_{a} and x_{b}")
            k = ks[0]
            role[b], parent[b] = "PP_NOUN", k
            role[k], parent[k] = "PREP", a
        else:  # 7. verb clause
            _check(
                len(c.name) == 2 and len(c.args) == 2 and isinstance(c.args[0], int),
                f"bad verb clause {c.text}",
            )
            (verb, r), (v, arg) = c.name, c.args
            if isinstance(arg, int):
                child = arg
            else:
                pos = [i for i, t in enumerate(tokens) if t == arg]
                _check(len(pos) == 1, f"{c.text}: name {arg!r} occurs {len(pos)} times")
                child = pos[0]
            _check(parent[child] == NO_PARENT, f"{c.text}: token {child} has two parents")
            role[child], parent[child] = r, v
            verb_name[v] = verb
            category[v] = "VERB"
    return tags


# ---------------------------------------------------------------------------------- tags -> LF


def tags_to_lf(tokens, tags):
    """Inverse map (docs/official-code.md O1.5, ``reconstruct_target``): the LF, COGS spacing.

    Raises TagError when the rows cannot be read as an LF (lengths differ, a parent outside the
    sentence, a role clause whose parent has no verb name, ...).
    """
    tokens = _tokens(tokens)
    n = len(tokens)
    parent, role, _, noun_type, verb_name = tags
    _check(all(len(row) == n for row in tags), "tag rows and tokens differ in length")

    def up(i):
        p = parent[i]
        _check(isinstance(p, int) and 0 <= p < n and p != i, f"token {i}: bad parent {p!r}")
        return p

    def arg(i):
        return tokens[i] if is_proper_name(tokens[i]) else f"x _ {i}"

    def verb(i):
        _check(bool(verb_name[i]), f"token {i} is a parent without a verb name")
        return verb_name[i]

    definite, other = [], []  # other: (sort key, clause)
    for i, t in enumerate(tokens):
        if noun_type[i] == "DEF":
            definite.append(f"* {_noun(t)} ( x _ {i} )")
        elif noun_type[i] == "INDEF":
            other.append(((i, -1), f"{_noun(t)} ( x _ {i} )"))
        else:
            _check(noun_type[i] == NONE, f"token {i}: unknown noun type {noun_type[i]!r}")
    for i in range(n):
        r = role[i]
        if r in (NONE, "PREP"):
            continue
        if r == "PP_NOUN":
            k = up(i)
            a = up(k)
            other.append(((a, i), f"{_noun(tokens[a])} . nmod . {tokens[k]} ( x _ {a} , x _ {i} )"))
            continue
        v = up(i)
        other.append(((v, i), f"{verb(v)} . {r} ( x _ {v} , {arg(i)} )"))
        if r == "xcomp":
            ctrl = [j for j in range(n) if role[j] == "agent" and parent[j] == v]
            _check(bool(ctrl), f"xcomp token {i}: its parent {v} has no agent")
            j = ctrl[-1]
            other.append(((i, j), f"{verb(i)} . agent ( x _ {i} , {arg(j)} )"))
    other.sort(key=lambda kc: kc[0])  # stable
    pieces = definite + ([" AND ".join(c for _, c in other)] if other else [])
    _check(bool(pieces), "no clause")
    return " ; ".join(pieces)


# ---------------------------------------------------------------------------- parent encodings


def encode_parents(parents, kind):
    """Parent values in one of the three encodings of docs/official-code.md O1.4.

    absolute: the parent's index, -1 for none. relative: the offset p - i, 0 (the token itself)
    for none. attention: the parent's index, the token's own index for none.
    """
    if kind == "absolute":
        return list(parents)
    if kind == "relative":
        return [0 if p == NO_PARENT else p - i for i, p in enumerate(parents)]
    if kind == "attention":
        return [i if p == NO_PARENT else p for i, p in enumerate(parents)]
    raise ValueError(f"unknown parent encoding {kind!r} (one of {', '.join(PARENT_KINDS)})")


def decode_parents(values, kind):
    """Absolute parents (-1: none) from encoded values; TagError if one points outside."""
    n = len(values)
    if kind == "absolute":
        out = list(values)
    elif kind == "relative":
        out = [NO_PARENT if o == 0 else i + o for i, o in enumerate(values)]
    elif kind == "attention":
        out = [NO_PARENT if p == i else p for i, p in enumerate(values)]
    else:
        raise ValueError(f"unknown parent encoding {kind!r} (one of {', '.join(PARENT_KINDS)})")
    for i, p in enumerate(out):
        _check(p == NO_PARENT or 0 <= p < n, f"token {i}: parent {values[i]} ({kind}) outside")
    return out


def parent_classes(parents, kind, longest):
    """Official class indices (O1.4) for a sentence; longest = L, the longest sentence length.

    absolute: vocab [PAD, -1, 0, .., L-1], class p+2. relative: vocab [PAD, -(L-1), .., L-1],
    class (p-i)+L. attention: vocab [PAD, 0, .., L-1, L], class p+1 (itself for none).
    """
    enc = encode_parents(parents, kind)
    shift = {"absolute": 2, "relative": longest, "attention": 1}[kind]
    return [v + shift for v in enc]


# ------------------------------------------------------------------------------------- metrics


def tags_exact_match(predicted, gold):
    """The official metric (2.4): every one of the five rows equal at every position."""
    return len(predicted) == len(gold) == 5 and all(
        list(p) == list(g) for p, g in zip(predicted, gold)
    )


def lf_exact_match(tokens, predicted, gold_lf):
    """Rebuild the LF from predicted rows and compare it with the COGS target, token for token.

    Rows that cannot be read as an LF count as wrong.
    """
    try:
        return tags_to_lf(tokens, predicted).split() == _tokens(gold_lf)
    except TagError:
        return False


# ------------------------------------------------------------------------------ files and checks


def read_tsv(path):
    """(line number, sentence, LF, distribution) of a COGS tsv (``.gz`` read as gzip)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            cols = line.split("\t")
            if len(cols) != 3:
                raise TagError(f"{path}:{n}: expected 3 tab-separated columns, got {len(cols)}")
            yield n, cols[0], cols[1], cols[2]


def tags_to_strings(tags, parent_kind="absolute"):
    """{row name: list of file tokens}; the empty tag becomes FILE_NONE."""
    out = {"parent": [str(v) for v in encode_parents(tags.parent, parent_kind)]}
    for name in Tags._fields[1:]:
        out[name] = [v if v else FILE_NONE for v in getattr(tags, name)]
    return out


def tags_from_strings(rows, parent_kind="absolute"):
    """Inverse of tags_to_strings (rows: {row name: list of str}); TagError on a bad parent."""
    try:
        values = [int(v) for v in rows["parent"]]
    except ValueError as e:
        raise TagError(f"parent row: {e}") from None
    strings = [[NONE if v == FILE_NONE else v for v in rows[k]] for k in Tags._fields[1:]]
    return Tags(decode_parents(values, parent_kind), *strings)


def round_trip(path):
    """LF -> tags -> LF over a COGS file. Returns a dict of counts and the failures.

    keys: total, exact, primitive (tagged, never rebuilt), primitive_kinds ({category: count}),
    failed: [(line, why)].
    """
    report = {"total": 0, "exact": 0, "primitive": 0, "primitive_kinds": {}, "failed": []}
    for n, sentence, lf, dist in read_tsv(path):
        report["total"] += 1
        try:
            tags = lf_to_tags(sentence, lf, dist)
            if dist == "primitive":
                report["primitive"] += 1
                kinds = report["primitive_kinds"]
                kinds[tags.category[0]] = kinds.get(tags.category[0], 0) + 1
                continue
            rebuilt = tags_to_lf(sentence, tags)
        except TagError as e:
            report["failed"].append((n, str(e)))
            continue
        if rebuilt == lf:
            report["exact"] += 1
        else:
            report["failed"].append((n, f"rebuilt {rebuilt!r}"))
    return report
