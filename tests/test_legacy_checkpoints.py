"""Checkpoints written by earlier versions of the plugin still load and decode exactly the same.

tests/fixtures/legacy-0.1 holds tiny checkpoints made by an earlier version of the plugin
(README there says how), with what fairseq-generate and fairseq-eval-lm printed for them then, on
another machine. Sources, references, hypotheses and words must come out exactly; scores,
log-probabilities, loss and perplexity within a relative 1e-5 (plus one unit in the last printed
place), because float32 results differ in their last bits between CPU kernels (.ci/run reruns
this file under ATEN_CPU_CAPABILITY=default and =avx2), BLAS builds and GPUs: one run here
differs from the recording by 6e-8 relative.
"""

import pytest
from conftest import ROOT, assert_lines_match, fairseq_generate, fairseq_tool

# recorded: compares against outputs recorded on another machine (.ci/run reruns these under
# each ATEN_CPU_CAPABILITY); slow: runs fairseq's command-line tools.
pytestmark = [pytest.mark.recorded, pytest.mark.slow]

FIXTURES = ROOT / "tests" / "fixtures" / "legacy-0.1"


def expected_lines(name):
    return (FIXTURES / f"{name}.expected").read_text().splitlines()


@pytest.mark.parametrize(
    "name", ["translation-compositional", "translation-graph", "translation-mlp-linear"]
)
def test_translation_checkpoint_decodes_as_before(name):
    proc = fairseq_generate(
        FIXTURES / "bin",
        f"{name}.pt",
        ["--beam", "4", "--gen-subset", "test", "--batch-size", "5", "--cpu"],
        cwd=FIXTURES,
    )
    lines = [
        line for line in proc.stdout.splitlines() if line[:2] in ("S-", "T-", "H-", "D-", "P-")
    ]
    assert_lines_match(lines, expected_lines(name))


def test_lm_checkpoint_scores_as_before():
    proc = fairseq_tool(
        "fairseq-eval-lm",
        FIXTURES / "lmbin",
        ["--path", "lm-compositional.pt", "--tokens-per-sample", "32", "--context-window", "16"]
        + ["--output-word-probs", "--cpu"],
        cwd=FIXTURES,
    )
    prefix = "INFO:fairseq_cli.eval_lm:"
    lines = [
        line[len(prefix) :]
        for line in proc.stderr.splitlines()
        if line.startswith(prefix)
        and (line[len(prefix) :][:1].isdigit() or "Loss (base 2)" in line)
    ]
    assert_lines_match(lines, expected_lines("lm-compositional"))
