"""Resume and crash safety of fairseq-train with the plugin (docs/reliability.md).

- Stopping after N updates and resuming from checkpoint_last.pt gives exactly the run of 2N
  straight updates: the same per-update losses and bit-identical weights and Adam state. fairseq
  guarantees this mid-epoch: the checkpoint stores the epoch iterator's position (batches are
  shuffled with seed + epoch, the consumed ones are skipped), the optimizer and LR-scheduler state,
  and every update reseeds torch with seed + num_updates (dropout).
- A run killed with SIGKILL while writing a checkpoint leaves checkpoint_last.pt loadable (the
  plugin makes fairseq's checkpoint copies atomic), and resuming from it continues the same run.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import BIN, USER_DIR, fairseq_command, fairseq_train, run

import fairseq_plugins  # noqa: F401  (torch.load of fairseq checkpoints, weights_only)

N = 3  # updates before the stop; every run here trains for 2N
TRAIN = ["--arch", "compgen_small_2", "--attention-type", "compositional", "--rel-pos", "eb"]
TRAIN += ["--max-tokens", "400", "--optimizer", "adam", "--lr", "1e-3"]
TRAIN += ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "2", "--seed", "3"]
TRAIN += ["--no-progress-bar", "--log-format", "json", "--log-interval", "1", "--cpu"]
TRAIN += ["--no-epoch-checkpoints", "--disable-validation", "--save-interval-updates", "2"]
ENV = {"OMP_NUM_THREADS": "1"}


def train(data, save_dir, max_update, check=True, extra=()):
    args = TRAIN + ["--max-update", str(max_update)] + list(extra)
    return fairseq_train(data, save_dir, args, env=ENV, check=check)


def losses(log):
    """{num_updates: (loss, gnorm)} from fairseq's json log lines (log interval 1)."""
    out = {}
    for line in log.splitlines():
        if "| train_inner |" in line:
            stats = json.loads(line.split("| train_inner |", 1)[1])
            out[int(stats["num_updates"])] = (stats["loss"], stats["gnorm"])
    return out


def assert_same_state(a, b):
    sa, sb = torch.load(a), torch.load(b)
    assert sa["model"].keys() == sb["model"].keys()
    for key in sa["model"]:
        assert torch.equal(sa["model"][key], sb["model"][key]), key
    adam_a, adam_b = sa["last_optimizer_state"]["state"], sb["last_optimizer_state"]["state"]
    for p in adam_a:
        for name, value in adam_a[p].items():
            if torch.is_tensor(value):
                assert torch.equal(value, adam_b[p][name]), (p, name)
    assert sa["extra_state"]["train_iterator"] == sb["extra_state"]["train_iterator"]


@pytest.fixture(scope="module")
def straight(demo_bin, tmp_path_factory):
    save = tmp_path_factory.mktemp("straight")
    proc = train(demo_bin, save, 2 * N)
    steps = losses(proc.stderr + proc.stdout)
    assert sorted(steps) == list(range(1, 2 * N + 1))
    return save, steps


@pytest.mark.slow
def test_stop_and_resume_equals_straight_run(demo_bin, straight, tmp_path):
    save_straight, steps_straight = straight
    first = train(demo_bin, tmp_path, N)
    second = train(demo_bin, tmp_path, 2 * N, extra=["--restore-file", "checkpoint_last.pt"])
    assert f"Loaded checkpoint {tmp_path}/checkpoint_last.pt (epoch 1 @ {N} updates)" in (
        second.stderr + second.stdout
    )
    steps = losses(first.stderr + first.stdout)
    resumed = losses(second.stderr + second.stdout)
    assert sorted(resumed) == list(range(N + 1, 2 * N + 1))  # no update repeated or skipped
    steps.update(resumed)
    assert steps == steps_straight
    assert_same_state(tmp_path / "checkpoint_last.pt", save_straight / "checkpoint_last.pt")


# Run fairseq-train in-process, and SIGKILL it halfway through writing a checkpoint file: the
# WHAT-th write (copy or torch.save) whose target name contains checkpoint_last / checkpoint_1_.
CRASH_HARNESS = """
import os, shutil, signal, sys
import torch
what, name, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
calls = []

def die_halfway(write_half):
    calls.append(1)
    if len(calls) == nth:
        write_half()
        os.kill(os.getpid(), signal.SIGKILL)

real_copyfile, real_save = shutil.copyfile, torch.save
def copyfile(src, dst, *a, **k):
    if what == "copy" and name in os.path.basename(str(dst)):
        def write_half():
            data = open(src, "rb").read()
            with open(dst, "wb") as f:
                f.write(data[: len(data) // 2])
        die_halfway(write_half)
    return real_copyfile(src, dst, *a, **k)
def save(obj, f, *a, **k):
    target = getattr(f, "name", f)
    if what == "save" and name in os.path.basename(str(target)):
        def write_half():
            import io
            buf = io.BytesIO()
            real_save(obj, buf)
            data = buf.getvalue()
            f.write(data[: len(data) // 2])
            f.flush()
        die_halfway(write_half)
    return real_save(obj, f, *a, **k)
shutil.copyfile, torch.save = copyfile, save
from fairseq_cli.train import cli_main
sys.argv = ["fairseq-train"] + sys.argv[4:]
cli_main()
"""


@pytest.mark.slow
def test_kill_while_writing_checkpoint_last_leaves_a_loadable_one(demo_bin, straight, tmp_path):
    """fairseq writes checkpoint_1_4.pt atomically (X.tmp + rename), then copies it onto
    checkpoint_last.pt; without the plugin's atomic copy this kill leaves it truncated."""
    what, name = "copy", "checkpoint_last"
    _, steps_straight = straight
    # Checkpoints are saved every 2 updates; the 2nd save (update 4) is killed halfway.
    cmd = [sys.executable, "-c", CRASH_HARNESS, what, name, "2", demo_bin]
    cmd += ["--user-dir", USER_DIR, "--save-dir", tmp_path] + TRAIN + ["--max-update", "6"]
    proc = run(cmd, env=ENV, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert 'num_updates": "4"' in proc.stdout + proc.stderr  # died saving after update 4

    state = torch.load(tmp_path / "checkpoint_last.pt")  # complete, from the save at update 2
    assert state["optimizer_history"][-1]["num_updates"] == 2
    resumed = train(demo_bin, tmp_path, 2 * N)
    log = resumed.stderr + resumed.stdout
    assert f"Loaded checkpoint {tmp_path}/checkpoint_last.pt (epoch 1 @ 2 updates)" in log
    steps = losses(log)
    assert steps == {k: v for k, v in steps_straight.items() if k > 2}


@pytest.mark.slow
def test_sigkill_during_training_then_resume(demo_bin, tmp_path):
    """A real kill -9 at an arbitrary moment of a run that saves after every update."""
    cmd = fairseq_command(BIN / "fairseq-train", demo_bin, ["--save-dir", tmp_path] + TRAIN)
    cmd += ["--max-update", "1000", "--save-interval-updates", "1"]
    cmd += ["--keep-interval-updates", "2"]
    log_path = tmp_path / "train.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **ENV}
        )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and '"num_updates": "4"' not in log_path.read_text():
            assert proc.poll() is None, log_path.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(0.37)  # somewhere in the middle of the next updates and saves
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    saved = torch.load(tmp_path / "checkpoint_last.pt")["optimizer_history"][-1]["num_updates"]
    assert saved >= 3
    resumed = train(demo_bin, tmp_path, saved + 1, extra=["--save-interval-updates", "1"])
    log = resumed.stderr + resumed.stdout
    assert f"(epoch 1 @ {saved} updates)" in log
    assert sorted(losses(log)) == [saved + 1]
