"""Shared test helpers: paths, the real corpora, running fairseq's CLIs.

The real corpora (Multi30k, WikiText-2, SCAN, COGS) are found by plugin_tools/corpora.py:
$FAIRSEQ_PLUGINS_DATA, else ../shared/data beside the checkout, else ./corpora (which
scripts/get-corpora.sh fills). A test that needs a missing corpus is skipped, all of them under
one summary line naming what is missing and the command that fetches it; with
FAIRSEQ_PLUGINS_REQUIRE_CORPORA=1 (.ci/run) it fails instead.
"""

import gzip
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from plugin_tools import corpora

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's bin: fairseq-train, fairseq-generate, ...
USER_DIR = str(ROOT / "fairseq_plugins")


# The folder the corpora are in when they are all in one place (legacy name; prefer the fixtures).
SHARED_DATA = corpora.corpus_dir("multi30k").parent


def run(cmd, cwd=None, env=None, check=True, timeout=900, stdin=None):
    """Run a command (list of str; STDIN: text for its standard input), return CompletedProcess;
    on failure show its output."""
    full_env = dict(os.environ)
    full_env["PATH"] = f"{BIN}{os.pathsep}{full_env.get('PATH', '')}"
    full_env.setdefault("OMP_NUM_THREADS", "1")
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=full_env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
            f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
        )
    return proc


# The command lines of fairseq's tools, built in one place. run()'s keywords (check, env, timeout)
# pass through every builder.
def fairseq_command(tool, data, args, user_dir=USER_DIR):
    """The command line of fairseq's TOOL (fairseq-train, fairseq-validate, ...) on DATA (None: a
    task that generates its data) with the plugin (--user-dir), then ARGS."""
    return [tool] + [data] * (data is not None) + ["--user-dir", user_dir] + list(args)


def fairseq_tool(tool, data, args, **kwargs):
    """Runs fairseq_command(TOOL, DATA, ARGS)."""
    return run(fairseq_command(tool, data, args), **kwargs)


def fairseq_train(data, save, args, **kwargs):
    """fairseq-train on DATA with the plugin, checkpoints in SAVE (None: --no-save), then ARGS."""
    saving = ["--no-save"] if save is None else ["--save-dir", save]
    return fairseq_tool("fairseq-train", data, saving + list(args), **kwargs)


def fairseq_generate(data, checkpoint, args, **kwargs):
    """fairseq-generate on DATA with the plugin and CHECKPOINT, then ARGS."""
    return fairseq_tool("fairseq-generate", data, ["--path", checkpoint] + list(args), **kwargs)


def fairseq_preprocess(raw, dest, splits=("train", "valid", "test"), joined=True, **kwargs):
    """fairseq-preprocess of the parallel text RAW/SPLIT.src, RAW/SPLIT.tgt into DEST (one
    worker; a joined dictionary, what the copy decoder needs, unless JOINED is false)."""
    args = ["--source-lang", "src", "--target-lang", "tgt", "--destdir", dest, "--workers", "1"]
    args += [a for split in splits for a in (f"--{split}pref", raw / split)]
    return run(["fairseq-preprocess"] + args + ["--joined-dictionary"] * joined, **kwargs)


def fairseq_preprocess_text(train, valid, dest, **kwargs):
    """fairseq-preprocess --only-source (language modelling) of the files TRAIN and VALID."""
    args = ["--trainpref", train, "--validpref", valid, "--destdir", dest, "--workers", "1"]
    return run(["fairseq-preprocess", "--only-source"] + args, **kwargs)


def read_split(folder, split):
    """[(source tokens, target tokens)] of FOLDER/SPLIT.src and .tgt (parallel text, one example
    a line), checking that both sides have as many lines."""
    src = (folder / f"{split}.src").read_text().splitlines()
    tgt = (folder / f"{split}.tgt").read_text().splitlines()
    assert len(src) == len(tgt)
    return [(s.split(), t.split()) for s, t in zip(src, tgt)]


def hypotheses(generate_output):
    """The hypothesis (H-) lines of fairseq-generate's output."""
    return [line for line in generate_output.splitlines() if line.startswith("H-")]


def train_then_generate(data, save, train_args, generate_args, updates):
    """fairseq-train on a tiny dataset DATA for UPDATES updates (checked in its log), then
    fairseq-generate from SAVE/checkpoint_last.pt; returns (generate's process, its H- lines)."""
    train = fairseq_train(data, save, train_args)
    assert re.search(rf"num_updates {updates}\b", train.stderr + train.stdout)
    gen = fairseq_generate(data, save / "checkpoint_last.pt", generate_args)
    return gen, hypotheses(gen.stdout)


# A number standing alone in a line of fairseq's output (a score, a log-probability, an id),
# not the digits inside a word such as "a9" or "n26".
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")


def _printed_unit(text):
    """One unit in the last printed place of a decimal number ("-4.1506" -> 1e-4), 0 for an
    integer or exponent form (only the relative tolerance applies there)."""
    if "." not in text or "e" in text.lower():
        return 0.0
    return 10.0 ** -len(text.split(".")[1])


def lines_match(actual, expected, rel=1e-5):
    """None if the lines ACTUAL equal EXPECTED (recorded, maybe on another machine) with every
    word and integer exact and every decimal number within ``rel`` relative, plus one unit in
    its last printed place (a rounded print may flip there); else a message naming the first
    difference. Floats legitimately differ in their last bits between CPU kernels (AVX2 vs
    AVX-512), BLAS builds, thread counts and GPUs; tokens and hypotheses may not."""
    if len(actual) != len(expected):
        return f"{len(actual)} lines, expected {len(expected)}"
    for number, (got, want) in enumerate(zip(actual, expected, strict=True)):
        got_numbers, want_numbers = _NUMBER.findall(got), _NUMBER.findall(want)
        if _NUMBER.split(got) != _NUMBER.split(want) or len(got_numbers) != len(want_numbers):
            return f"line {number}: text differs:\n  got      {got!r}\n  expected {want!r}"
        for g, w in zip(got_numbers, want_numbers, strict=True):
            integers = not {".", "e", "E"} & set(g + w)
            tolerance = rel * abs(float(w)) + _printed_unit(w)
            if (g != w) if integers else abs(float(g) - float(w)) > tolerance:
                return (
                    f"line {number}: {g} differs from {w} (tolerance {tolerance:.3g}):\n"
                    f"  got      {got!r}\n  expected {want!r}"
                )
    return None


def assert_lines_match(actual, expected, rel=1e-5):
    """Assert ``lines_match`` (words and integers exact, decimals within ``rel``)."""
    message = lines_match(actual, expected, rel)
    assert message is None, message


def corpus(name):
    """The folder of corpus NAME; skip (one summary line for all) or, under
    FAIRSEQ_PLUGINS_REQUIRE_CORPORA=1, fail when it is not found."""
    found = corpora.find(name)
    if found is not None:
        return found
    # The same reason for every corpus test: pytest -ra folds them into one line.
    message = corpora.missing_message()
    if os.environ.get(corpora.REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"{message} ({corpora.REQUIRE_ENV} is set)", pytrace=False)
    _skipped_for.add(name)
    pytest.skip(message)


_skipped_for = set()


# -- markers: slow (fast lane), cuda ------------------------------------------------------------
SLOW_GUARD = ROOT / "tests" / "slow_guard"  # its sitecustomize stops fairseq's CLIs (see there)
CUDA_SKIP = (
    "CUDA not available: the cuda tests are skipped (scripts/gpu-check.sh runs them on a GPU host)"
)


def _cuda_available():
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    """Without CUDA, every cuda-marked test is skipped with one reason (one summary line)."""
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if cuda_items and not _cuda_available():
        for item in cuda_items:
            item.add_marker(pytest.mark.skip(reason=CUDA_SKIP))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """While a test not marked slow runs (fixtures included), fairseq's command-line tools refuse
    to start in its subprocesses and say so in a per-test report file."""
    if item.get_closest_marker("slow") is None:
        report = _slow_guard_dir() / "started.log"
        report.unlink(missing_ok=True)
        os.environ["FAIRSEQ_PLUGINS_SLOW_GUARD"] = str(report)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(SLOW_GUARD), os.environ.get("PYTHONPATH")) if p
        )
        item.stash[_slow_guard_key] = report


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if item.stash.get(_slow_guard_key, None) is not None:
        os.environ.pop("FAIRSEQ_PLUGINS_SLOW_GUARD", None)
        rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        rest = [p for p in rest if p != str(SLOW_GUARD)]
        if rest:
            os.environ["PYTHONPATH"] = os.pathsep.join(rest)
        else:
            os.environ.pop("PYTHONPATH", None)


_slow_guard_key = pytest.StashKey[Path]()
_slow_guard_dirs = []


def _slow_guard_dir():
    if not _slow_guard_dirs:
        _slow_guard_dirs.append(Path(tempfile.mkdtemp(prefix="fairseq-plugins-slow-guard-")))
    return _slow_guard_dirs[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Every corpus skip (and every cuda skip) at one location with one reason, so that -ra folds
    them into one line; a test not marked slow that started a fairseq CLI fails, saying so."""
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        stripped = reason.removeprefix("Skipped: ")
        if stripped.startswith("corpora missing: ") or stripped == CUDA_SKIP:
            report.longrepr = (__file__, None, reason)
    guard = item.stash.get(_slow_guard_key, None)
    if guard is not None and call.when in ("setup", "call") and guard.exists():
        tools = sorted(set(guard.read_text().split()))
        guard.unlink()
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started {', '.join(tools)} but is not marked slow: add "
            "@pytest.mark.slow (the fast lane, scripts/test.sh --fast, deselects slow tests)"
        )
    return report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Without -rs (pyproject's -ra shows the folded skip line), say it once here."""
    chars = config.getoption("reportchars", "") or ""
    if _skipped_for and not set(chars) & set("asA"):
        terminalreporter.write_line(f"SKIPPED: {corpora.missing_message()}")


def _corpus_fixture(fixture_name, name):
    """The session fixture FIXTURE_NAME: the folder of corpus NAME (see corpus())."""
    return pytest.fixture(scope="session", name=fixture_name)(lambda: corpus(name))


multi30k_data = _corpus_fixture("multi30k_data", "multi30k")
wikitext2_data = _corpus_fixture("wikitext2_data", "wikitext-2")
scan_data = _corpus_fixture("scan_data", "scan")
cogs_data = _corpus_fixture("cogs_data", "cogs")


@pytest.fixture(scope="session")
def shared_data():
    """Legacy: the folder holding all four corpora (prefer the per-corpus fixtures)."""
    for name in corpora.CORPORA:
        corpus(name)
    found = {corpora.find(name).parent for name in corpora.CORPORA}
    if len(found) != 1:
        pytest.skip(f"the corpora are in different folders: {', '.join(map(str, found))}")
    return found.pop()


@pytest.fixture(scope="session")
def demo_raw(tmp_path_factory):
    """The embedded synthetic translation task of scripts/demo.sh, small."""
    out = tmp_path_factory.mktemp("demo_raw")
    run(
        [sys.executable, ROOT / "scripts" / "make-demo-data.py", out]
        + ["--train", "3000", "--valid", "100", "--test", "100"]
    )
    return out


@pytest.fixture(scope="session")
def demo_bin(demo_raw, tmp_path_factory):
    """demo_raw binarized with a joined dictionary (what the copy decoder needs)."""
    out = tmp_path_factory.mktemp("demo_bin")
    fairseq_preprocess(demo_raw, out)
    return out


@pytest.fixture(scope="session")
def tiny_tags(cogs_data, tmp_path_factory):
    """cogs-tags.py on slices of COGS: 300 train, 40 valid/test, 60 gen (several categories)."""
    out = tmp_path_factory.mktemp("cogs_tags")
    raw = out / "raw"
    raw.mkdir()
    for name, source, n in (("train", "train.tsv", 300), ("valid", "dev.tsv", 40)):
        lines = (cogs_data / source).read_text().splitlines()[:n]
        (raw / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    (raw / "test.tsv").write_text("\n".join((cogs_data / "test.tsv").read_text().splitlines()[:40]))
    with gzip.open(cogs_data / "gen.tsv.gz", "rt") as f:
        gen = f.read().splitlines()
    (raw / "gen.tsv").write_text("\n".join(gen[::350][:60]) + "\n")
    run(
        [sys.executable, ROOT / "scripts" / "cogs-tags.py", "--outdir", out / "data"]
        + [f"{s}={raw / s}.tsv" for s in ("train", "valid", "test", "gen")]
        + ["--parent", "relative"]  # the task decodes either encoding
    )
    return out / "data"
