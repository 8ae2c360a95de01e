"""Shared test helpers: paths, the real corpora in ../shared/data, running fairseq's CLIs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
BIN = Path(sys.executable).parent  # the venv's bin: fairseq-train, fairseq-generate, ...
USER_DIR = str(ROOT / "fairseq_plugins")


def run(cmd, cwd=None, env=None, check=True, timeout=900):
    """Run a command (list of str), return CompletedProcess; on failure show its output."""
    full_env = dict(os.environ)
    full_env["PATH"] = f"{BIN}{os.pathsep}{full_env.get('PATH', '')}"
    full_env.setdefault("OMP_NUM_THREADS", "1")
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=full_env,
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


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real corpora expected in {SHARED_DATA} (../shared/data beside the checkout)")
    return SHARED_DATA


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
    run(
        ["fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt"]
        + ["--trainpref", demo_raw / "train", "--validpref", demo_raw / "valid"]
        + ["--testpref", demo_raw / "test", "--destdir", out, "--joined-dictionary"]
        + ["--workers", "1"]
    )
    return out
