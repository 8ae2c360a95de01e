"""plugin_tools is the pure-Python half of the project: every module imports without torch and
without fairseq (checked in a fresh interpreter, where nothing else has loaded them), and each
helper exists once at run time (one TagError class, whoever imports it)."""

import ast
import pkgutil
import runpy
import subprocess
import sys

import pytest
from conftest import ROOT

import plugin_tools

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(plugin_tools.__path__, "plugin_tools.")
    if not info.name.endswith(".__main__")  # runs a command line when imported
)
HEAVY = ("torch", "fairseq", "fairseq_plugins")


def test_the_helpers_are_in_the_package():
    for name in ("errors", "corpora", "cogs_tags", "cfq_im", "seq_accuracy", "tagging_accuracy"):
        assert f"plugin_tools.{name}" in MODULES
    assert "plugin_tools.compgen_data" in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_without_torch_or_fairseq(module):
    code = f"import sys; import {module}; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"importing {module} loaded {proc.stdout.strip()}"


def test_score_translation_counts_exact_matches_without_torch_or_fairseq(tmp_path):
    """scripts/score-translation.py (generate.sh's scorer) needs neither torch nor fairseq."""
    generated = tmp_path / "generate-test.txt"
    generated.write_text("S-0\ta b\nT-0\tb a\nH-0\t-0.1\tb a\nS-1\tc\nT-1\tc\nH-1\t-0.2\td\n")
    code = (
        "import os, runpy, sys; sys.argv = sys.argv[1:]\n"
        "sys.path.insert(0, os.path.dirname(sys.argv[0]))  # as python SCRIPT does\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "finally:\n"
        f"    print('loaded:', ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    script = ROOT / "scripts" / "score-translation.py"
    proc = subprocess.run(
        [sys.executable, "-c", code, script, generated, "--out", tmp_path, "--detok", "none"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "loaded: "


def test_one_tag_error_class(monkeypatch):
    """The COGS task, the data generator and the cogs-tags script share plugin_tools.cogs_tags
    (one TagError class: private copies loaded by path would make two, one uncatchable as the
    other)."""
    from fairseq_plugins.tasks import cogs_tagging
    from plugin_tools import cogs_tags, compgen_data

    monkeypatch.syspath_prepend(str(ROOT / "scripts"))  # as python scripts/cogs-tags.py does
    script = runpy.run_path(str(ROOT / "scripts" / "cogs-tags.py"), run_name="cogs_tags_script")
    assert cogs_tagging.ct.TagError is cogs_tags.TagError
    assert compgen_data.cogs_tags.TagError is cogs_tags.TagError
    assert script["ct"].TagError is cogs_tags.TagError


LAYERS = {  # package -> the packages above it, which it must never import
    "plugin_tools": {"fairseq_plugins", "studies", "benchmarks", "scripts", "tests"},
    "fairseq_plugins": {"studies", "benchmarks", "scripts", "tests"},
    "studies": {"benchmarks", "scripts", "tests"},
}


@pytest.mark.parametrize("package", list(LAYERS))
def test_no_import_runs_against_the_layers(package):
    """plugin_tools is the bottom layer, the plugin above it, the research drivers and reports
    (studies) above both; benchmarks/ and scripts/ import from them, never the reverse, not even
    inside a function (where the fresh-interpreter check above cannot see it)."""
    against = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            above = LAYERS[package]
            against += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in above]
    assert against == []
