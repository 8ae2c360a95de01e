"""The documentation stands on its own: no tracked text file links to, or names, a document outside
the repository, and every relative Markdown link in a tracked .md file points to a tracked file.

Outside documents: a Markdown link whose target resolves above the repository root, any mention of
``../shared/<name>.md``, and the names of the source notes the in-repository documents replace
(docs/method.md, docs/official-code.md, docs/contextual-retrieval-task.md). Look-up paths of the
corpora (``../shared/data``) are code, not document links, and are allowed. Fast: no fairseq."""

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
TEXT_SUFFIXES = (".md", ".py", ".sh", ".txt", ".toml", ".cfg")

# Built from pieces so that this file does not match its own patterns.
_SHARED = r"\.\./" + "shared"
OUTSIDE_MENTIONS = [
    (re.compile(_SHARED + r"/[^\s`'\"()\[\]<>]*\.md\b"), "names a document in ../shared"),
    (
        re.compile(r"(?<![\w/.-])" + "METHOD" + r"\.md\b"),
        "names the outside method notes (use docs/method.md)",
    ),
    (
        re.compile(r"\b" + "OFFICIAL" + r"-(?:EXTRAS|ONTANON)\b"),
        "names the outside official-code notes (use docs/official-code.md)",
    ),
    (
        re.compile(r"\b" + "CONTEXTUAL" + r"-RETRIEVAL(?:\.md)?\b"),
        "names the outside task notes (use docs/contextual-retrieval-task.md)",
    ),
]

# [text](target) and ![alt](target), optionally with a "title"; reference definitions [id]: target
INLINE_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^\s()<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"^(\s*)(```|~~~).*?^\1\2[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def tracked_files():
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode("utf-8").split("\0") if p]


def text_files(suffixes=TEXT_SUFFIXES):
    for rel in tracked_files():
        path = ROOT / rel
        if rel == THIS or not rel.endswith(suffixes) or not path.is_file():
            continue
        try:
            yield rel, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def without_code(text):
    """Markdown text with fenced blocks and code spans blanked (line numbers kept)."""

    def blank(match):
        return re.sub(r"[^\n]", " ", match.group(0))

    return CODE_SPAN.sub(blank, FENCE.sub(blank, text))


def link_targets(text):
    """(offset, target) of every Markdown link outside code."""
    prose = without_code(text)
    for pattern in (INLINE_LINK, REFERENCE_LINK):
        for match in pattern.finditer(prose):
            yield match.start(1), match.group(1)


def resolve(rel, target):
    """The repository-relative path a relative link target points to, or None for a URL or a pure
    anchor; a path starting with ``..`` when it leaves the repository."""
    if SCHEME.match(target) or target.startswith(("#", "//")):
        return None
    path = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None
    base = Path("/") if path.startswith("/") else Path("/", rel).parent
    parts = []
    for part in (base / path.lstrip("/")).parts[1:]:
        if part == "..":
            if not parts:
                return "../" + path
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def test_no_reference_to_documents_outside_the_repository():
    problems = []
    for rel, text in text_files():
        for pattern, why in OUTSIDE_MENTIONS:
            for match in pattern.finditer(text):
                problems.append(f"{rel}:{line_of(text, match.start())}: {why}: {match.group(0)}")
        for offset, target in link_targets(text):
            resolved = resolve(rel, target)
            if resolved is not None and resolved.startswith("../"):
                where = f"{rel}:{line_of(text, offset)}"
                problems.append(f"{where}: link outside the repository: {target}")
    assert not problems, "\n".join(sorted(set(problems)))


def test_relative_markdown_links_point_to_tracked_files():
    tracked = set(tracked_files())
    folders = {"/".join(p.split("/")[:i]) for p in tracked for i in range(1, p.count("/") + 1)}
    problems = []
    for rel, text in text_files((".md",)):
        for offset, target in link_targets(text):
            resolved = resolve(rel, target)
            if resolved is None or resolved.startswith("../"):
                continue  # a URL, an anchor; outside links are the test above's
            if resolved.rstrip("/") not in tracked | folders | {""}:
                problems.append(f"{rel}:{line_of(text, offset)}: no tracked file {target}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "rel,target,expected",
    [
        ("docs/a.md", "method.md#2-x", "docs/method.md"),
        ("docs/a.md", "../README.md", "README.md"),
        ("README.md", "../shared/x.md", "../../shared/x.md"),
        ("docs/a.md", "/scripts/test.sh", "scripts/test.sh"),
        ("docs/a.md", "https://example.org/x.md", None),
        ("docs/a.md", "#section", None),
    ],
)
def test_resolve(rel, target, expected):
    assert resolve(rel, target) == expected
