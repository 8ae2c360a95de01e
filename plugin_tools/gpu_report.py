"""Write the summary of scripts/gpu-check.sh: PREFIX.json and PREFIX.md from its steps file
(one tab-separated line per step: name, status pass/fail/skip, seconds, log, detail), the CUDA
tests' JUnit XML (counts and failed test names) and the machine (plugin_tools/machine.py)."""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from plugin_tools.cli import OneLineParser
from plugin_tools.machine import machine

STATUSES = ("pass", "fail", "skip")


def read_steps(path):
    steps = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 4 or fields[1] not in STATUSES:
            raise ValueError(f"{path}:{number}: not 'name<TAB>pass|fail|skip<TAB>seconds<TAB>log'")
        name, status, seconds, log = fields[:4]
        detail = fields[4] if len(fields) > 4 else ""
        steps.append(
            {"name": name, "status": status, "seconds": int(seconds), "log": log, "detail": detail}
        )
    return steps


def read_junit(path):
    """{tests, failures, errors, skipped, failed: [node ids]} of a pytest JUnit XML, or None."""
    if path is None or not Path(path).is_file():
        return None
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors")}
    counts["skipped"] = sum(int(s.get("skipped", 0)) for s in suites)
    counts["failed"] = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in root.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    return counts


def machine_info():
    """The machine as the benchmarks describe it (torch imported here only: the rest of this
    module is plain Python)."""
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    info = machine(device)
    if device.type == "cuda":
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["cuda"] = torch.version.cuda
    return info


def markdown(report):
    m = report["machine"]
    gpus = ", ".join(m.get("gpus", [])) or "none"
    lines = [
        "# GPU check (scripts/gpu-check.sh)",
        "",
        f"{report['verdict']}. GPUs: {gpus}; CUDA {m.get('cuda', '-')}, torch {m.get('torch')}, "
        f"git {m.get('git')}, {m.get('date')}. Training runs: {report['updates']} fp16 updates.",
        "",
        "| step | status | seconds | detail |",
        "|---|---|---|---|",
    ]
    for s in report["steps"]:
        lines.append(f"| {s['name']} | {s['status']} | {s['seconds']} | {s['detail']} |")
    tests = report.get("cuda_tests")
    if tests is not None:
        lines += [
            "",
            f"CUDA tests: {tests['tests']} run, {tests['failures'] + tests['errors']} failed, "
            f"{tests['skipped']} skipped.",
        ]
        lines += [f"- failed: `{name}`" for name in tests["failed"]]
    return "\n".join(lines) + "\n"


def build_report(steps, junit, updates, machine):
    failed = [s["name"] for s in steps if s["status"] == "fail"]
    verdict = f"FAILED: {', '.join(failed)}" if failed else "All steps passed"
    return {
        "verdict": verdict,
        "passed": not failed,
        "updates": updates,
        "machine": machine,
        "steps": steps,
        "cuda_tests": junit,
    }


def main(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("steps", type=Path, help="the steps file gpu-check.sh wrote")
    p.add_argument("--junit", type=Path, help="JUnit XML of the CUDA tests (optional)")
    p.add_argument("--updates", type=int, required=True, help="fp16 updates per training run")
    p.add_argument("--out", type=Path, required=True, help="PREFIX: writes PREFIX.json, PREFIX.md")
    args = p.parse_args(argv)
    if not args.steps.is_file():
        p.error(f"steps file {args.steps} not found")
    try:
        steps = read_steps(args.steps)
    except ValueError as e:
        p.error(str(e))
    report = build_report(steps, read_junit(args.junit), args.updates, machine_info())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    Path(f"{args.out}.md").write_text(text)
    sys.stdout.write(text)
    return 0 if report["passed"] else 1
