"""plugin_tools/cfq_im.py: the CFQ-im intermediate representation (Ontañón et al. 2022,
Figure 3) on hand-written queries in the CFQ release's format, its exact inverse, and the
release's tokenization. No real CFQ data here (it cannot be fetched)."""

import random

import pytest

from plugin_tools import cfq_im as im

# The paper's Figure 1 query (release format, before preprocessing).
FIG1_RAW = (
    "SELECT count(*) WHERE {\n?x0 a ns:people.person .\n"
    "?x0 ns:influence.influence_node.influenced M1 .\n"
    "?x0 ns:influence.influence_node.influenced M2 .\n"
    "?x0 ns:people.person.spouse_s ?x1 .\n?x1 a ns:film.cinematographer .\n"
    "FILTER ( ?x0 != ?x1 )\n}"
)
FIG1 = (
    "SELECT count ( * ) WHERE { ?x0 a people.person . "
    "?x0 influence.influence_node.influenced M1 . ?x0 influence.influence_node.influenced M2 . "
    "?x0 people.person.spouse_s ?x1 . ?x1 a film.cinematographer . FILTER ( ?x0 != ?x1 ) }"
)
FIG1_IM = (
    "SELECT count ( * ) WHERE { ?x0 a people.person . "
    "?x0 influence.influence_node.influenced { M1 , M2 } . "
    "?x0 people.person.spouse_s ?x1 . ?x1 a film.cinematographer . FILTER ( ?x0 != ?x1 ) }"
)


def test_release_tokenization():
    assert im.preprocess_sparql(FIG1_RAW) == FIG1
    assert im.preprocess_sparql("?x0 ns:film.film.directed_by ns:m.05zppz") == (
        "?x0 film.film.directed_by m_05zppz"
    )
    assert im.preprocess_question("Did M1 's star, M2, marry a person?") == (
        "Did M1 ' s star , M2 , marry a person ?"
    )


def test_figure3_example():
    assert im.to_im(FIG1) == FIG1_IM
    assert im.from_im(FIG1_IM) == FIG1


def test_entity_and_relation_lists():
    # "Did M0 direct and write M1 and M2?"-like: subjects x predicates x objects
    q = (
        "SELECT DISTINCT ?x0 WHERE { ?x0 a film.film . ?x0 film.film.directed_by M1 . "
        "?x0 film.film.directed_by M2 . ?x0 film.film.written_by M1 . "
        "?x0 film.film.written_by M2 . ?x1 a film.film . ?x1 film.film.directed_by M1 . "
        "?x1 film.film.directed_by M2 . ?x1 film.film.written_by M1 . "
        "?x1 film.film.written_by M2 }"
    )
    want = (
        "SELECT DISTINCT ?x0 WHERE { { ?x0 , ?x1 } a film.film . { ?x0 , ?x1 } "
        "{ film.film.directed_by , film.film.written_by } { M1 , M2 } }"
    )
    assert im.to_im(q) == want
    assert im.from_im(want) == q
    stats = {}
    im.to_im(q, stats)
    assert stats == {"segments": 1, "compressed": 1, "kept": 0}


def test_only_full_products_are_merged():
    q = "SELECT count ( * ) WHERE { M0 p M1 . M0 p M2 . M3 p M1 }"  # not a product: 2 groups
    out = im.to_im(q)
    assert out == "SELECT count ( * ) WHERE { M0 p { M1 , M2 } . M3 p M1 }"
    assert im.from_im(out) == q


def test_unsorted_and_repeated_segments_are_kept_as_they_are():
    unsorted = "SELECT count ( * ) WHERE { ?x1 p M1 . ?x0 p M1 . ?x0 p M2 }"
    stats = {}
    assert im.to_im(unsorted, stats) == unsorted and stats["kept"] == 1
    assert im.from_im(unsorted) == unsorted  # no list: the order is kept
    repeated = "SELECT count ( * ) WHERE { ?x0 p M1 . ?x0 p M1 }"
    assert im.to_im(repeated) == repeated and im.from_im(repeated) == repeated


def test_filters_cut_segments_and_stay_in_place():
    q = (
        "SELECT count ( * ) WHERE { ?x0 p M1 . ?x0 p M2 . FILTER ( ?x0 != M1 ) . "
        "?x0 q M1 . ?x0 q M2 . }"  # trailing `.` kept
    )
    out = im.to_im(q)
    assert out == (
        "SELECT count ( * ) WHERE { ?x0 p { M1 , M2 } . FILTER ( ?x0 != M1 ) . "
        "?x0 q { M1 , M2 } . }"
    )
    assert im.from_im(out) == q


def test_random_round_trips_are_exact():
    rng = random.Random(0)
    ents = ["?x0", "?x1", "?x2", "M0", "M1", "M2"]
    preds = ["a", "film.film.directed_by", "film.film.written_by", "people.person.spouse_s"]
    compressed = 0
    for _ in range(400):
        pool = sorted({(rng.choice(ents), rng.choice(preds), rng.choice(ents)) for _ in range(9)})
        if rng.random() < 0.3:
            rng.shuffle(pool)
        clauses = [" ".join(t) for t in pool]
        if rng.random() < 0.5:
            clauses.insert(rng.randrange(len(clauses) + 1), "FILTER ( ?x0 != ?x1 )")
        q = "SELECT count ( * ) WHERE { " + " . ".join(clauses) + " }"
        out = im.to_im(q)
        assert im.from_im(out) == q
        compressed += "," in out.split()  # at least one list
    assert compressed > 150  # the representation does merge


@pytest.mark.parametrize(
    "bad",
    [
        "SELECT count ( * ) WHERE { ?x0 p { M1 , M2 }",  # no closing brace of the query
        "SELECT count ( * ) WHERE { ?x0 p { M1 , M2 . ?x1 p M1 }",  # unclosed list
        "SELECT count ( * ) WHERE { ?x0 p { M1 M2 } }",  # no comma
        "SELECT count ( * ) WHERE { ?x0 { p , q } }",  # two parts
        "SELECT count ( * ) WHERE { ?x0 p M1 . . ?x1 p M2 }",  # empty clause
        "?x0 p M1",
    ],
)
def test_malformed_im_raises(bad):
    with pytest.raises(im.ImError):
        im.from_im(bad)
