"""The benchmarks run: each of benchmarks/{attention,model_step,decode}.py builds every case it
times and writes its JSON and Markdown, on CPU with one round (their numbers are not checked:
timings are the benchmarks' business, not the tests'). They are scripts run on a GPU by
scripts/gpu-check.sh, where a case broken by a change of the plugin would otherwise first fail."""

import json
import math
import sys

import pytest
from conftest import ROOT, run

pytestmark = pytest.mark.slow

ONE_ROUND = {
    "attention": ["--repeats", "1", "--warmup", "1", "--shapes", "nmt", "--no-memory"],
    "model_step": ["--quick", "--rounds", "1", "--warmup", "1"],
    "decode": ["--quick", "--repeats", "1", "--warmup", "1", "--sentences", "2"],
}


def medians(value):
    """Every {"median": x} inside VALUE (a results entry)."""
    if isinstance(value, dict):
        if "median" in value:
            yield value["median"]
        for v in value.values():
            yield from medians(v)


@pytest.mark.parametrize("benchmark", list(ONE_ROUND))
def test_benchmark_runs_every_case(benchmark, tmp_path):
    script = ROOT / "benchmarks" / f"{benchmark}.py"
    args = [*ONE_ROUND[benchmark], "--device", "cpu", "--results", tmp_path, "--name", "smoke"]
    run([sys.executable, script, *args], cwd=tmp_path, timeout=600)
    payload = json.loads((tmp_path / "smoke.json").read_text())
    assert (tmp_path / "smoke.md").read_text().startswith("#")
    results = payload["results"]
    if benchmark == "attention":  # every family: stock, compositional, positions, graph layers
        results = results["nmt"]
        # x-transformers is a pinned test requirement: the schemes' reference rows are there
        families = ("stock ", "compositional ", "rel-", "alibi", "t5", "rope", "x-transformers ")
        for family in families + ("graph ",):
            assert any(name.startswith(family) for name in results), (family, sorted(results))
        for scheme in ("alibi", "t5", "rope"):
            assert results[scheme]["speedup_vs_reference"]["median"] > 0, scheme
    assert results, payload
    values = list(medians(results))
    assert values and all(math.isfinite(v) and v > 0 for v in values), values
