"""Checkpoints load with weights_only=True through every entry point; a checkpoint carrying a
code-running pickle is refused and its command never runs."""

import os
import sys

import pytest
import torch
from conftest import USER_DIR, fairseq_train, run

TINY = ["--arch", "compgen_small_2s", "--attention-type", "compositional", "--rel-pos", "eb"]
TINY += ["--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "500", "--max-update", "1"]
TINY += ["--no-progress-bar", "--cpu", "--no-epoch-checkpoints"]


@pytest.fixture(scope="module")
def checkpoint(demo_bin, tmp_path_factory):
    save = tmp_path_factory.mktemp("safe_ckpt")
    fairseq_train(demo_bin, save, TINY)
    return save / "checkpoint_last.pt"


class CodeRunningPayload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def evil_checkpoint(checkpoint, tmp_path):
    state = torch.load(checkpoint)  # a real checkpoint, plus a payload
    marker = tmp_path / "pwned"
    state["extra_state"]["payload"] = CodeRunningPayload(marker)
    path = tmp_path / "evil.pt"
    torch.save(state, path)
    return path, marker


@pytest.mark.slow
def test_every_global_in_our_checkpoints_is_registered(checkpoint):
    import fairseq_plugins  # noqa: F401

    assert torch.serialization.get_unsafe_globals_in_checkpoint(str(checkpoint)) == []
    torch.load(checkpoint)  # weights_only=True is torch's default


@pytest.mark.slow
def test_from_pretrained_validate_and_interactive_load_it(checkpoint, demo_bin, demo_raw):
    from fairseq.models.transformer import TransformerModel

    import fairseq_plugins  # noqa: F401

    hub = TransformerModel.from_pretrained(
        str(checkpoint.parent), checkpoint_file=checkpoint.name, data_name_or_path=str(demo_bin)
    )
    assert isinstance(hub.translate("n1 v2 n3", beam=2, max_len_b=5), str)
    run(
        [
            "fairseq-validate",
            demo_bin,
            "--user-dir",
            USER_DIR,
            "--path",
            checkpoint,
            "--cpu",
            "--task",
            "translation",
            "--batch-size",
            "32",
        ]
    )
    line = (demo_raw / "test.src").read_text().splitlines()[0]
    proc = subprocess_input(
        ["fairseq-interactive", demo_bin, "--user-dir", USER_DIR, "--path", checkpoint]
        + ["--beam", "2", "--cpu", "--max-len-b", "5"],
        line + "\n",
    )
    assert any(row.startswith("H-0") for row in proc.stdout.splitlines())


def subprocess_input(cmd, text):
    import subprocess

    from conftest import BIN

    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [str(c) for c in cmd], input=text, capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.parametrize(
    "tool",
    [
        "fairseq-generate",
        "fairseq-interactive",
        "fairseq-validate",
        "fairseq-eval-lm",
        "from_pretrained",
        "torch.load",
    ],
)
def test_code_running_checkpoint_is_refused(tool, evil_checkpoint, demo_bin):
    path, marker = evil_checkpoint
    if tool == "from_pretrained":
        code = (
            "import fairseq_plugins; from fairseq.models.transformer import TransformerModel; "
            f"TransformerModel.from_pretrained({str(path.parent)!r}, checkpoint_file={path.name!r}, "
            f"data_name_or_path={str(demo_bin)!r})"
        )
        cmd = [sys.executable, "-c", code]
    elif tool == "torch.load":
        cmd = [sys.executable, "-c", f"import fairseq_plugins, torch; torch.load({str(path)!r})"]
    else:
        cmd = [tool, demo_bin, "--user-dir", USER_DIR, "--path", path, "--cpu"]
        if tool != "fairseq-interactive":
            cmd += ["--task", "translation", "--batch-size", "8"]
    proc = run(cmd, check=False)
    assert proc.returncode != 0
    assert "Weights only load failed" in proc.stderr and "GLOBAL posix.system" in proc.stderr
    assert not marker.exists()
