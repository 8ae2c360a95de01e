"""The Python steps the shell pipelines call instead of inline Python: plugin_tools.pipeline_steps
(generate.sh's reference check, prepare-wikitext.sh's download fallback), plugin_tools.demo_report
(demo.sh's Part 1 table and reading) and scripts/torch-info.py (setup.sh, train.sh, gpu-check.sh,
.ci/run). Through their command lines, as the scripts run them."""

import json
import struct
import sys

import pytest
from conftest import ROOT, run

from plugin_tools import demo_report, pipeline_steps


def tool(module, *args, check=True):
    return run([sys.executable, "-m", f"plugin_tools.{module}", *args], cwd=ROOT, check=check)


def write_index(path, sentences):
    """The header of fairseq's MMapIndexedDataset index: magic, version, dtype code, count."""
    head = pipeline_steps.MMAP_MAGIC + struct.pack("<QBQ", 1, 4, sentences)
    path.write_bytes(head + b"\0" * 8 * sentences)


@pytest.fixture
def data(tmp_path):
    write_index(tmp_path / "test.src-tgt.tgt.idx", 3)
    return tmp_path


def test_reference_of_the_right_length_passes(data, tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a\nb\nc\n")
    proc = tool("pipeline_steps", "check-reference", data, "test", "tgt", ref)
    assert proc.stdout == proc.stderr == ""


def test_reference_of_the_wrong_length_is_one_line(data, tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a\nb\n")
    args = ("--prog", "generate.sh", "check-reference", data, "test", "tgt", ref)
    proc = tool("pipeline_steps", *args, check=False)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"generate.sh: --ref '{ref}' has 2 lines, but subset 'test' of {data} has 3 sentences\n"
    )


def test_other_index_formats_are_not_checked(tmp_path):
    (tmp_path / "test.src-tgt.tgt.idx").write_bytes(b"TNTIDX\x00\x00" + b"\0" * 40)
    ref = tmp_path / "ref.txt"
    ref.write_text("a\n")
    assert pipeline_steps.reference_mismatch(tmp_path, "test", "tgt", ref) is None
    assert pipeline_steps.reference_mismatch(tmp_path, "valid", "tgt", ref) is None  # no index


def test_download(tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("corpus\n")
    tool("pipeline_steps", "download", source.as_uri(), tmp_path / "copy.txt")
    assert (tmp_path / "copy.txt").read_text() == "corpus\n"
    proc = tool(
        "pipeline_steps", "download", (tmp_path / "nope").as_uri(), tmp_path / "x", check=False
    )
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "download of file://" in proc.stderr


SYSTEMS = ("stock", "compositional", "graph")


def write_demo_outputs(out, test_accuracy, long_accuracy):
    """What demo.sh leaves in OUT for Part 1: row starts, scores and significance tests."""
    for subset in demo_report.SUBSETS:
        rows = [{"system": n, "p_bs": p} for n, p in zip(SYSTEMS, (None, 0.2534, 0.0004))]
        (out / f"significance-{subset}.json").write_text(
            json.dumps({"metrics": {"tok-BLEU": {"rows": rows}}})
        )
        for i, name in enumerate(SYSTEMS):
            folder = out / "generate" / f"{name}-{subset}"
            folder.mkdir(parents=True)
            test = subset == "test"
            scores = {
                "sacrebleu": 99.89 - i if test else 49.25 - i,
                "sequence_accuracy": test_accuracy[i] if test else long_accuracy[i],
            }
            (folder / "scores.json").write_text(json.dumps(scores))
    for i, name in enumerate(SYSTEMS):
        (out / f"row-{name}.txt").write_text(f"| {name} | 273,408 | {186 + i}\n")


def test_demo_report(tmp_path):
    write_demo_outputs(tmp_path, (0.998, 0.994, 0.934), (0.0, 0.0, 0.0))
    text = tool("demo_report", tmp_path, *SYSTEMS).stdout
    lines = text.splitlines()
    assert lines[0] == demo_report.TITLE
    assert lines[3] == "| stock | 273,408 | 186 | 99.89 | - | 0.998 | 49.25 | - | 0.0 |"
    assert lines[5] == "| graph | 273,408 | 188 | 97.89 | 0.000 | 0.934 | 47.25 | 0.000 | 0.0 |"
    assert lines[6] == ""
    assert lines[7].startswith(
        "Reading: All three systems master the in-distribution sentences (sequence accuracy >= "
        "0.9; test BLEU 97.9-99.9) and none gets a longer sentence right (test-long accuracy "
        "<= 0.000)."
    )
    assert len(lines) == 8


def test_demo_reading_names_who_masters_what(tmp_path):
    write_demo_outputs(tmp_path, (0.95, 0.5, 0.92), (0.0, 0.25, 0.0))
    reading = demo_report.reading(tmp_path, SYSTEMS)
    assert reading.startswith("Reading: Only stock and graph of the systems master")
    assert "and some gets a longer sentence right (test-long accuracy <= 0.250)" in reading


def test_torch_info():
    script = ROOT / "scripts" / "torch-info.py"
    assert int(run([sys.executable, script, "cuda-devices"]).stdout) >= 0
    capability = run([sys.executable, script, "cpu-capability"]).stdout.strip()
    assert capability == capability.lower() and capability
    assert run([sys.executable, script, "versions"]).stdout.startswith("torch ")
