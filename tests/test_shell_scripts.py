"""Every shell script's command line (scripts/*.sh, benchmarks/train.sh, .ci/run): --help prints
the usage and exits 0; an unknown option, or a known option without its value, is one line on
stderr naming the option, exit status 2, and nothing is started. Fast: no script gets far enough
to import torch or to run a fairseq tool."""

import pytest
from conftest import ROOT, run

# script -> (an option that takes a value or None, the arguments the script needs before an
# unknown option is what it reports: the wrappers whose options a Python program parses report
# missing required arguments first)
SCRIPTS = {
    # the thin pipelines (scripts/lib/common.sh's option idiom)
    "scripts/train.sh": ("--nproc", []),
    "scripts/generate.sh": ("--beam", []),
    "scripts/eval-lm.sh": ("--context-window", []),
    "scripts/train-lm.sh": (None, []),
    "scripts/prepare-multi30k.sh": ("--raw-dir", []),
    "scripts/prepare-wikitext.sh": ("--out", []),
    "scripts/demo.sh": ("--updates", []),
    "scripts/demo-retrieval.sh": ("--dim", []),
    "scripts/gpu-check.sh": ("--results", []),
    "scripts/setup.sh": (None, []),
    "scripts/test.sh": (None, None),  # its other arguments are pytest's: pytest reports them
    "benchmarks/train.sh": ("--updates", []),
    ".ci/run": (None, []),
    # wrappers of a Python program that parses their options
    "scripts/prepare-translation.sh": (
        "--src",
        ["--src", "de", "--tgt", "en", "--train", "t", "--valid", "v", "--out", "o"],
    ),
    "scripts/significance.sh": ("--ref", ["base.txt", "system.txt"]),
    "scripts/get-corpora.sh": ("--dest", []),
    # the experiment drivers
    "scripts/compgen-run.sh": ("--seeds", []),
    "scripts/compgen-grid.sh": ("--out", []),
    "scripts/cogs-tagging-run.sh": ("--seeds", []),
    "scripts/paper-variants.sh": ("--seeds", []),
    "scripts/compare-nmt.sh": ("--out", []),
    "scripts/compare-lm.sh": ("--out", []),
    "scripts/study-nmt.sh": ("--out", []),
    "scripts/study-lm.sh": ("--out", []),
}


def shell_scripts():
    found = [*ROOT.glob("scripts/*.sh"), ROOT / "benchmarks" / "train.sh", ROOT / ".ci" / "run"]
    return sorted(str(p.relative_to(ROOT)) for p in found)


def test_every_script_is_listed():
    """A new shell script gets its line in SCRIPTS (and so the checks below)."""
    assert sorted(SCRIPTS) == shell_scripts()


def run_script(script, *args):
    return run(["bash", ROOT / script, *args], cwd=ROOT, check=False, timeout=120)


def assert_one_line_error(proc, named):
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help(script):
    proc = run_script(script, "--help")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("Usage:") and script.split("/")[-1] in first, first


@pytest.mark.parametrize("script", [s for s, (_, before) in SCRIPTS.items() if before is not None])
def test_unknown_option(script):
    before = SCRIPTS[script][1]
    assert_one_line_error(run_script(script, *before, "--no-such-option"), "--no-such-option")


@pytest.mark.parametrize("script", [s for s, (option, _) in SCRIPTS.items() if option])
def test_option_without_its_value(script):
    option = SCRIPTS[script][0]
    assert_one_line_error(run_script(script, option), option)
