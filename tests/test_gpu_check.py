"""scripts/gpu-check.sh on a machine without CUDA (one line, exit 0), its report writer
(scripts/gpu-report.py over plugin_tools/gpu_report.py), and the checks of tests/test_cuda.py
(tests/device_checks.py) run on CPU, so that the GPU path's tests keep working where no GPU is."""

import json
import os
import sys

import device_checks as checks
import pytest
import torch
from conftest import ROOT, run

from plugin_tools import gpu_report

GPU_CHECK = ROOT / "scripts" / "gpu-check.sh"
NO_CUDA = {"CUDA_VISIBLE_DEVICES": ""}  # no device even on a GPU host


def report_main(args, capsys):
    """scripts/gpu-report.py's main(ARGS) in this process: (exit status, stdout, stderr)."""
    try:
        status = gpu_report.main([str(a) for a in args])
    except SystemExit as e:  # argparse errors
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


def test_without_cuda_it_says_so_in_one_line_and_exits_0(tmp_path):
    proc = run(["bash", GPU_CHECK, "--out", tmp_path / "work"], env=NO_CUDA)
    assert proc.stdout.splitlines() == [
        "gpu-check.sh: no CUDA device here (torch.cuda.is_available() is False): nothing to check"
    ]
    assert proc.stderr == ""
    assert not (tmp_path / "work").exists()  # nothing written


def test_help_and_bad_arguments():
    assert "Usage: bash scripts/gpu-check.sh" in run(["bash", GPU_CHECK, "--help"]).stdout
    bad = run(["bash", GPU_CHECK, "--frobnicate"], check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "gpu-check.sh: unknown option '--frobnicate' (see --help)"
    bad = run(["bash", GPU_CHECK, "--updates", "x"], check=False)
    assert bad.returncode == 2 and "--updates must be a positive integer" in bad.stderr


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="3">
<testcase classname="tests.test_cuda" name="test_a[fp16]"/>
<testcase classname="tests.test_cuda" name="test_b[bf16]"><failure message="x">x</failure></testcase>
<testcase classname="tests.test_cuda" name="test_c"/>
</testsuite></testsuites>
"""


def write_steps(path, rows):
    path.write_text("".join("\t".join(map(str, row)) + "\n" for row in rows))
    return path


def test_report_writer_json_and_markdown(tmp_path, capsys):
    steps = write_steps(
        tmp_path / "steps.tsv",
        [
            ("cuda-tests", "fail", 61, "/w/logs/cuda-tests.log", ""),
            ("train-stock-1gpu", "pass", 12, "/w/logs/train-stock-1gpu.log", "last loss 3.21"),
            ("train-tagging-1gpu", "skip", 0, "", "COGS corpus not found"),
        ],
    )
    (tmp_path / "junit.xml").write_text(JUNIT)
    prefix = tmp_path / "results" / "gpu-check"
    status, stdout, _ = report_main(
        [steps, "--junit", tmp_path / "junit.xml", "--updates", "200", "--out", prefix], capsys
    )
    assert status == 1  # a step failed
    report = json.loads((tmp_path / "results" / "gpu-check.json").read_text())
    assert report["passed"] is False and report["verdict"] == "FAILED: cuda-tests"
    assert [s["status"] for s in report["steps"]] == ["fail", "pass", "skip"]
    assert report["steps"][1] == {
        "name": "train-stock-1gpu",
        "status": "pass",
        "seconds": 12,
        "log": "/w/logs/train-stock-1gpu.log",
        "detail": "last loss 3.21",
    }
    assert report["cuda_tests"]["tests"] == 3 and report["cuda_tests"]["failures"] == 1
    assert report["cuda_tests"]["failed"] == ["tests.test_cuda::test_b[bf16]"]
    assert report["updates"] == 200 and report["machine"]["torch"] == torch.__version__
    md = (tmp_path / "results" / "gpu-check.md").read_text()
    assert md == stdout
    assert "| train-stock-1gpu | pass | 12 | last loss 3.21 |" in md
    assert "CUDA tests: 3 run, 1 failed, 0 skipped." in md
    assert "- failed: `tests.test_cuda::test_b[bf16]`" in md


def test_report_writer_all_passed_and_bad_steps_file(tmp_path, capsys):
    steps = write_steps(tmp_path / "steps.tsv", [("bench-decode", "pass", 3, "/l", "")])
    prefix = tmp_path / "r"
    assert report_main([steps, "--updates", "200", "--out", prefix], capsys)[0] == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["passed"] is True and report["cuda_tests"] is None
    assert report["verdict"] == "All steps passed"
    bad = write_steps(tmp_path / "bad.tsv", [("x", "maybe", 1, "/l")])
    status, _, err = report_main([bad, "--updates", "1", "--out", prefix], capsys)
    assert status == 2 and "bad.tsv:1: not 'name<TAB>pass|fail|skip<TAB>seconds<TAB>log'" in err
    status, _, err = report_main([tmp_path / "none.tsv", "--updates", "1", "--out", prefix], capsys)
    assert status == 2 and "none.tsv not found" in err


# The CUDA checks on CPU (float32 against float32, bf16 where it is cheap): the test code itself.
FULLEST = "compositional-rel2-eb-copy-self-gate"


@pytest.mark.parametrize("config", ["multihead-abs-no-copy-no-graph", FULLEST])
def test_cuda_model_checks_run_on_cpu(config):
    assert config in checks.CONFIGS and len(checks.CONFIGS) == 2 * 5 * 2 * 4
    checks.check_model_matches_cpu(checks.CONFIGS[config], "cpu", torch.float32)
    checks.check_incremental_decoding(checks.CONFIGS[config], "cpu", torch.bfloat16)


def test_cuda_attention_language_and_tagging_checks_run_on_cpu():
    checks.check_attention_paths("comp-rel-eb", True, "cpu", torch.float32)
    checks.check_attention_paths("rel-eb", False, "cpu", torch.bfloat16)
    checks.check_language_model("cpu", torch.float32)
    checks.check_tagging_model("cpu", torch.bfloat16)


def test_cuda_tests_are_skipped_under_one_line_without_cuda():
    proc = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda"]
        + [ROOT / "tests" / "test_cuda.py", "-k", "language_model or tagging_model"],
        env={**NO_CUDA, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        cwd=ROOT,
    )
    skip_lines = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skip_lines == [
        "SKIPPED [6] tests/conftest.py: CUDA not available: the cuda tests are skipped "
        "(scripts/gpu-check.sh runs them on a GPU host)"
    ]
