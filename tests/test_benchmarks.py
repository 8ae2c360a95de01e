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


def test_model_step_times_compgen_rows_against_their_baseline(tmp_path):
    """--pairs compgen-*: a grid row and rel2-eb-c (the baseline the grid pairs it with) in one
    process, so their cost ratio does not depend on which machine ran which grid cell."""
    script = ROOT / "benchmarks" / "model_step.py"
    args = ["--pairs", "compgen-t52,compgen-rel_eb_cope", "--rounds", "1", "--warmup", "1"]
    args += ["--batch", "4", "--src-len", "6", "--tgt-len", "7", "--vocab", "40", "--device", "cpu"]
    run([sys.executable, script, *args, "--results", tmp_path, "--name", "smoke"], cwd=tmp_path)
    results = json.loads((tmp_path / "smoke.json").read_text())["results"]
    assert sorted(results) == ["compgen-rel_eb_cope", "compgen-t52"]
    for row in results.values():
        assert row["stock"] == "compgen_rel2_eb_c" and row["preset"].startswith("compgen_")
        assert row["cpu_speed_vs_stock"]["median"] > 0
    bad = run([sys.executable, script, "--pairs", "compgen-nope"], cwd=tmp_path, check=False)
    assert bad.returncode != 0 and "--pairs: unknown ['compgen-nope']" in bad.stderr
