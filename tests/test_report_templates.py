"""The reports' fixed prose lives in studies/templates: every template is used
by a report, renders only with every value given, and leaves a dollar sign written $$ alone."""

import re

import pytest
from conftest import ROOT

from studies import report_templates

REPORTS = [
    ROOT / "studies/study_report.py",
    ROOT / "studies/grid_report.py",
    ROOT / "studies/retrieval_report.py",
]
TEMPLATES = sorted(report_templates.TEMPLATES.glob("*.md"))


def test_every_template_is_rendered_by_a_report():
    code = "".join(f.read_text(encoding="utf-8") for f in REPORTS)
    rendered = set(re.findall(r'render\(\s*"([\w-]+)"', code))
    assert TEMPLATES and {t.stem for t in TEMPLATES} == rendered


def test_render_fills_values_and_refuses_a_missing_one():
    text = report_templates.render("study-smoke", command="bash scripts/x.sh")
    assert "Run it with `bash scripts/x.sh` (it rewrites this document)." in text
    assert not text.endswith("\n")  # the file's final newline is not part of the text
    with pytest.raises(KeyError, match="command"):
        report_templates.render("study-smoke")


def test_a_doubled_dollar_is_a_dollar(tmp_path, monkeypatch):
    (tmp_path / "t.md").write_text("costs $$${n}\n", encoding="utf-8")
    monkeypatch.setattr(report_templates, "TEMPLATES", tmp_path)
    assert report_templates.render("t", n=3) == "costs $3"
