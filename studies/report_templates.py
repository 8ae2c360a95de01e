"""The fixed prose of the results documents, kept as Markdown templates in templates/: a
template is the text of a document section with ``$name`` / ``${name}`` where the report fills
in a value or a table (string.Template; ``$$`` is a dollar sign). The file's final newline is
not part of the text."""

from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().with_name("templates")


def render(template, **values):
    """templates/TEMPLATE.md with VALUES filled in; a missing value is an error (KeyError)."""
    text = (TEMPLATES / f"{template}.md").read_text(encoding="utf-8").removesuffix("\n")
    return Template(text).substitute(values)
