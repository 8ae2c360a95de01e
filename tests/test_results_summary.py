"""docs/results.md is a hand-written summary of the generated results documents: every decimal
number it quotes must be one its section's linked documents hold, so that a regenerated document
cannot leave the summary quoting numbers it no longer has. A quoted number matches a number of the
linked documents that rounds to it (0.83 matches 0.828) or a count read in millions (1.80 matches
1,803,456 parameters). Fast: text only."""

import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "docs" / "results.md"

# A decimal number not inside a word, a version, a path or a date; its sign is dropped (the
# documents write a difference as -0.1 or −0.1 alike).
DECIMAL = re.compile(r"(?<![\w.])\d*\.\d+(?![\w.]*\d)")
COUNT = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,]*\d)")
MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def sections(text):
    """(title line, body) of every ``## `` section of the summary."""
    parts = re.split(r"(?m)^## ", text)
    return [(p.splitlines()[0], p) for p in parts[1:]]


def linked_text(title, base):
    """The text of the documents the section's title links to (a link to a README also brings the
    result files beside it, e.g. benchmarks/results/*.md)."""
    text = ""
    for target in MARKDOWN_LINK.findall(title):
        path = (base / target).resolve()
        text += path.read_text()
        results = path.parent / "results"
        if path.name == "README.md" and results.is_dir():
            text += "".join(p.read_text() for p in sorted(results.glob("*.md")))
    return text


def rounded(value, places):
    """Both roundings a writer may have used (half up, or Python's half even)."""
    quantum = Decimal(1).scaleb(-places)
    return {value.quantize(quantum, ROUND_HALF_UP), value.quantize(quantum, ROUND_HALF_EVEN)}


def quoted_forms(source):
    """Every written form a number of ``source`` may be quoted in: itself, its roundings to fewer
    decimals, and counts read in millions at 1-2 decimals."""
    forms = set()
    for number in DECIMAL.findall(source):
        value = Decimal(number)
        places = len(number.split(".")[1])
        for p in range(places + 1):
            forms |= rounded(value, p)
    for count in COUNT.findall(source):
        millions = Decimal(count.replace(",", "")) / Decimal(10**6)
        forms |= rounded(millions, 1) | rounded(millions, 2)
    return forms


def unmatched(summary_text, base):
    missing = []
    for title, body in sections(summary_text):
        source = linked_text(title, base)
        if not source:
            continue
        forms = quoted_forms(source)
        missing += [f"{title}: {n}" for n in DECIMAL.findall(body) if Decimal(n) not in forms]
    return missing


def test_every_number_of_the_summary_is_in_its_linked_document():
    missing = unmatched(SUMMARY.read_text(), SUMMARY.parent)
    assert not missing, "numbers of docs/results.md not in the documents it links:\n" + "\n".join(
        missing
    )


@pytest.mark.parametrize(
    "quoted, source, found",
    [
        ("0.83", "valid 0.828 at 6,250", True),
        ("0.932 ± 0.182", "| 0.9319 ± 0.1821 |", True),
        ("1.80M parameters", "1,803,456 parameters", True),
        ("−0.204", "-0.204 [-0.426, +0.017]", True),
        ("0.85", "0.860 and 0.849", True),
        ("0.84", "0.850", False),  # a stale number: the document moved on
        ("0.5", "0.56", False),
    ],
)
def test_the_matching_rule(tmp_path, quoted, source, found):
    (tmp_path / "doc.md").write_text(source + "\n")
    summary = f"# Results\n\n## A section ([doc](doc.md))\n\nWe measured {quoted}.\n"
    assert (unmatched(summary, tmp_path) == []) is found


def test_a_section_without_a_linked_document_is_not_checked(tmp_path):
    summary = "# Results\n\n## Plans\n\nNext, 0.5 of the grid.\n"
    assert unmatched(summary, tmp_path) == []
