"""Checkpoints load with weights_only=True through every entry point; a checkpoint carrying a
code-running pickle is refused and its command never runs."""

import os
import sys

import pytest
import torch
from conftest import fairseq_tool, fairseq_train, run

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
    validate = ["--path", checkpoint, "--cpu", "--task", "translation", "--batch-size", "32"]
    fairseq_tool("fairseq-validate", demo_bin, validate)
    line = (demo_raw / "test.src").read_text().splitlines()[0]
    proc = fairseq_tool(
        "fairseq-interactive",
        demo_bin,
        ["--path", checkpoint, "--beam", "2", "--cpu", "--max-len-b", "5"],
        stdin=line + "\n",
        timeout=300,
    )
    assert any(row.startswith("H-0") for row in proc.stdout.splitlines())


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
        proc = run([sys.executable, "-c", code], check=False)
    elif tool == "torch.load":
        code = f"import fairseq_plugins, torch; torch.load({str(path)!r})"
        proc = run([sys.executable, "-c", code], check=False)
    else:
        args = ["--path", path, "--cpu"]
        if tool != "fairseq-interactive":
            args += ["--task", "translation", "--batch-size", "8"]
        proc = fairseq_tool(tool, demo_bin, args, check=False)
    assert proc.returncode != 0
    assert "Weights only load failed" in proc.stderr and "GLOBAL posix.system" in proc.stderr
    assert not marker.exists()
