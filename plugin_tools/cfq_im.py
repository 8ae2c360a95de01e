"""CFQ-im: the CFQ intermediate representation of Ontañón et al. (2022), section 4.5.2, Figure 3
and Table 6, and its exact inverse. Pure Python.

The paper: a hard part of CFQ is producing cartesian products (for "Did M1 and M2 direct and
write M3?" the query holds four triples); following Herzig et al. (2021), the intermediate
representation removes the need to learn them by allowing triples of the form (entity list) -
(relation list) - (entity list). Figure 3's example:
``?x0 ns:influence.influence_node.influenced {M1, M2} .`` for the two triples with M1 and M2.

Our format (space-separated tokens, as the fairseq targets): a list of two or more items is
``{ a , b }`` (the figure's braces and commas, tokenized); a one-item list is the item itself.
``?x0 a people.person . { ?x0 , ?x1 } { film.film.directed_by , film.film.written_by } M0``
stands for the six triples of the product, in sorted order.

to_im (forward). The WHERE body's clauses (separated by ``.``) are cut into segments by every
clause that is not a triple (``FILTER ( ... )``); those clauses stay where they are. A segment
whose triples are in strictly increasing order (compared as token tuples, i.e. sorted as text)
is compressed: triples with the same subject and predicate share one object list; entries with
the same predicate and object list share a subject list; entries with the same subject and object
lists share a predicate list (each step merges only full products). Lists are sorted; groups come
in the order of their first triple. A segment that is not strictly sorted (or repeats a triple)
is written as it is, one triple per clause.

from_im (inverse). Each group expands to its product. In a segment with at least one list of two
or more items, the expanded triples are sorted; a segment with no list keeps its order. The round
trip from_im(to_im(q)) == q is therefore exact for every query of this grammar, sorted or not
(the order of a compressed segment is recovered by sorting, and only sorted segments are
compressed). Which CFQ queries are sorted we could not measure (see below); to_im_stats counts
the segments written as they are.

Also here: preprocess_question / preprocess_sparql, the tokenization of the CFQ release's
``preprocess.py`` (google-research/google-research, cfq/): punctuation split off in questions;
in queries ``count(*)`` -> ``count ( * )``, the ``ns:`` prefixes dropped, ``m.`` mids -> ``m_``.

NOT RUN: the CFQ data (dataset.json, ~ GBs, and splits/*.json) cannot be fetched on this machine,
so neither the loader (scripts/compgen-data.py cfq-SPLIT) nor this representation has met a real
CFQ query; they are tested on hand-written queries in the release's format only. In particular
the order of the WHERE triples in sparqlPatternModEntities (we expect them sorted, as in the
paper's Figure 1 example) is NOT VERIFIED; an unsorted segment costs compression, not exactness.
"""

import string

SEP = "."
LIST_OPEN, LIST_SEP, LIST_CLOSE = "{", ",", "}"


class ImError(ValueError):
    """A query or an IR sequence that does not parse."""


# ------------------------------------------------------------------------------ tokenization


def preprocess_question(text):
    """CFQ preprocess.py `tokenize_punctuation`: spaces around every punctuation character."""
    spaced = "".join(f" {c} " if c in string.punctuation else c for c in text)
    return " ".join(spaced.split())


def preprocess_sparql(query):
    """CFQ preprocess.py `preprocess_sparql`: count(*) split, ns: dropped, m.X -> m_X."""
    query = query.replace("count(*)", "count ( * )")
    tokens = []
    for token in query.split():
        if token.startswith("ns:"):
            token = token[3:]
        if token.startswith("m."):
            token = "m_" + token[2:]
        tokens.append(token)
    return " ".join(tokens)


# ----------------------------------------------------------------------------------- parsing


def _tokens(x):
    return x.split() if isinstance(x, str) else list(x)


def _split_query(tokens):
    """(head up to and including the WHERE `{`, body clauses, trailing `.`)."""
    if LIST_OPEN not in tokens or not tokens or tokens[-1] != LIST_CLOSE:
        raise ImError("not a query `... WHERE { ... }`")
    h = tokens.index(LIST_OPEN)
    body = tokens[h + 1 : -1]
    clauses, cur = [], []
    for t in body:
        if t == SEP:
            clauses.append(cur)
            cur = []
        else:
            cur.append(t)
    trailing = not cur and bool(clauses)
    if cur:
        clauses.append(cur)
    if any(not c for c in clauses):
        raise ImError("empty clause in the WHERE body")
    return tokens[: h + 1], clauses, trailing


def _join_query(head, clauses, trailing):
    body = []
    for i, c in enumerate(clauses):
        body += c
        if i < len(clauses) - 1 or trailing:
            body.append(SEP)
    return head + body + [LIST_CLOSE]


def _is_triple(clause):
    return (
        len(clause) == 3
        and clause[0] != "FILTER"
        and not {LIST_OPEN, LIST_CLOSE, LIST_SEP, "(", ")"} & set(clause)
    )


def _parse_group(clause):
    """The three lists of an IR clause, or None if it is not a group (e.g. a FILTER)."""
    if clause[0] == "FILTER":
        return None
    lists, i = [], 0
    while i < len(clause):
        t = clause[i]
        if t == LIST_OPEN:
            try:
                j = clause.index(LIST_CLOSE, i)
            except ValueError:
                raise ImError(f"unclosed list in {' '.join(clause)!r}") from None
            inner = clause[i + 1 : j]
            items = inner[0::2]
            if len(inner) < 3 or any(s != LIST_SEP for s in inner[1::2]) or len(inner) % 2 == 0:
                raise ImError(f"bad list {' '.join(clause[i : j + 1])!r}")
            if {LIST_OPEN, LIST_SEP} & set(items):
                raise ImError(f"bad list {' '.join(clause[i : j + 1])!r}")
            lists.append(items)
            i = j + 1
        elif t in (LIST_CLOSE, LIST_SEP, "(", ")"):
            return None
        else:
            lists.append([t])
            i += 1
    if len(lists) != 3:
        if any(t in (LIST_OPEN, LIST_SEP) for t in clause):
            raise ImError(f"a group needs three parts: {' '.join(clause)!r}")
        return None
    return lists


# ------------------------------------------------------------------------------- conversions


def _render(items):
    if len(items) == 1:
        return [items[0]]
    out = [LIST_OPEN]
    for k, x in enumerate(items):
        out += ([LIST_SEP] if k else []) + [x]
    return out + [LIST_CLOSE]


def compress(triples):
    """Groups (subjects, predicates, objects) whose products partition the sorted triples."""
    by_sp = {}
    for s, p, o in triples:
        by_sp.setdefault((s, p), []).append(o)
    by_po = {}
    for (s, p), objs in by_sp.items():
        by_po.setdefault((p, tuple(sorted(objs))), []).append(s)
    by_so = {}
    for (p, objs), subs in by_po.items():
        by_so.setdefault((tuple(sorted(subs)), objs), []).append(p)
    groups = [(list(subs), sorted(preds), list(objs)) for (subs, objs), preds in by_so.items()]
    groups.sort(key=lambda g: (g[0][0], g[1][0], g[2][0]))
    return groups


def _sorted_strictly(triples):
    return all(a < b for a, b in zip(triples, triples[1:]))


def to_im(query, stats=None):
    """The CFQ-im form of a preprocessed query (str or tokens); returns a str.

    stats (optional dict) counts "segments", "compressed" and "kept" (written as they are).
    """
    head, clauses, trailing = _split_query(_tokens(query))
    out, segment = [], []
    stats = {} if stats is None else stats
    for key in ("segments", "compressed", "kept"):
        stats.setdefault(key, 0)

    def flush():
        if not segment:
            return
        stats["segments"] += 1
        if _sorted_strictly(segment):
            out.extend(sum((_render(x) for x in g), []) for g in compress(segment))
            stats["compressed"] += 1
        else:
            out.extend(list(t) for t in segment)
            stats["kept"] += 1
        segment.clear()

    for c in clauses:
        if _is_triple(c):
            segment.append(tuple(c))
        else:
            flush()
            out.append(c)
    flush()
    return " ".join(_join_query(head, out, trailing))


def from_im(im):
    """The query (str) of a CFQ-im sequence (str or tokens); ImError if it does not parse."""
    head, clauses, trailing = _split_query(_tokens(im))
    out, segment, multi = [], [], [False]

    def flush():
        if multi[0]:
            segment.sort()
        out.extend(list(t) for t in segment)
        segment.clear()
        multi[0] = False

    for c in clauses:
        lists = _parse_group(c)
        if lists is None:
            flush()
            out.append(c)
            continue
        subs, preds, objs = lists
        multi[0] = multi[0] or any(len(x) > 1 for x in lists)
        segment.extend((s, p, o) for s in subs for p in preds for o in objs)
    flush()
    return " ".join(_join_query(head, out, trailing))
