"""scripts/plot-curves.py on logs of real (tiny) fairseq-train runs, in simple and json format."""

import struct

import pytest
from conftest import ROOT, fairseq_train, run

from plugin_tools import plot_curves

SCRIPT = ROOT / "scripts" / "plot-curves.py"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def train_logs(demo_bin, tmp_path_factory):
    """Two tiny translation runs on the demo data, simple and json log format: 4 epochs each."""
    d = tmp_path_factory.mktemp("curves")
    logs = {}
    for fmt, lr in (("simple", "0.005"), ("json", "0.002")):
        proc = fairseq_train(
            demo_bin,
            None,
            ["--task", "translation", "--arch", "transformer"]
            + ["--encoder-layers", "1", "--decoder-layers", "1"]
            + ["--encoder-embed-dim", "32", "--decoder-embed-dim", "32"]
            + ["--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64"]
            + ["--encoder-attention-heads", "2", "--decoder-attention-heads", "2"]
            + ["--optimizer", "adam", "--lr", lr, "--lr-scheduler", "inverse_sqrt"]
            + ["--warmup-updates", "5", "--max-tokens", "4096", "--max-epoch", "4"]
            + ["--seed", "1", "--num-workers", "0", "--log-format", fmt, "--log-interval", "5"],
            env={"OMP_NUM_THREADS": "1"},
        )
        logs[fmt] = d / f"train-{fmt}.log"
        logs[fmt].write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return logs


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_parses_both_log_formats(train_logs):
    simple = plot_curves.parse_log(train_logs["simple"])
    js = plot_curves.parse_log(train_logs["json"])
    for records in (simple, js):
        assert [r["epoch"] for r in records] == [1, 2, 3, 4]
        updates = [r["num_updates"] for r in records]
        assert updates[0] > 1 and updates == [updates[0] * k for k in (1, 2, 3, 4)]
        assert all(r["ppl"] > 1 and r["loss"] > 0 for r in records)
    assert [r["num_updates"] for r in simple] == [r["num_updates"] for r in js]
    # training on the task lowers the validation loss
    assert simple[-1]["loss"] < simple[0]["loss"]


def test_parse_line_formats():
    simple = (
        "2026-01-01 00:00:00 | INFO | valid | epoch 003 | valid on 'valid' subset | loss 5.1 | "
        "nll_loss 4.9 | ppl 34.2 | bleu 12.5 | wps 100 | num_updates 120 | best_loss 5.1"
    )
    js = (
        '2026-01-01 00:00:00 | INFO | valid | {"epoch": 3, "valid_loss": "5.1", "valid_ppl": "34.2", '
        '"valid_accuracy": "88.5", "valid_num_updates": "120"}'
    )
    tqdm = "epoch 003 | valid on 'valid' subset | loss 5.1 | ppl 34.2 | num_updates 120"
    train = "2026-01-01 00:00:00 | INFO | train | epoch 003 | loss 6.0 | ppl 64 | num_updates 120"
    for line in (simple, js, tqdm):
        stats = plot_curves.parse_line(line)
        assert (stats["epoch"], stats["loss"], stats["ppl"], stats["num_updates"]) == (
            3,
            5.1,
            34.2,
            120,
        )
    assert plot_curves.parse_line(simple)["bleu"] == 12.5
    assert plot_curves.parse_line(js)["accuracy"] == 88.5
    assert plot_curves.parse_line(train) is None


@pytest.mark.slow
def test_writes_png_from_real_logs(train_logs, tmp_path):
    out = tmp_path / "curves.png"
    proc = run(
        ["python", SCRIPT, train_logs["simple"], train_logs["json"], "--out", out]
        + ["--labels", "lr 5e-3", "lr 2e-3", "--metric", "ppl"]
    )
    assert "4 points" in proc.stdout
    width, height = png_size(out)
    assert width > height > 100  # two panels side by side
    assert out.stat().st_size > 10_000
    one = tmp_path / "loss-updates.png"
    run(["python", SCRIPT, train_logs["json"], "--metric", "loss", "--x", "updates", "--out", one])
    w1, _ = png_size(one)
    assert w1 < width


@pytest.mark.slow
def test_clear_errors(train_logs, tmp_path):
    no_valid = tmp_path / "no-valid.log"
    no_valid.write_text("2026-01-01 | INFO | fairseq_cli.train | nothing to see\n")
    cases = [
        ([no_valid], "no-valid.log"),
        ([tmp_path / "missing.log"], "missing.log"),
        ([train_logs["simple"], "--metric", "bleu"], "bleu"),
        ([train_logs["simple"], "--labels", "a", "b"], "--labels"),
    ]
    for args, named in cases:
        proc = run(["python", SCRIPT, *args, "--out", tmp_path / "x.png"], check=False)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0], proc.stderr
        assert not (tmp_path / "x.png").exists()


def _synthetic_log(path, ppls, updates_per_epoch=10):
    """A fairseq-train log in simple format with one validation line per epoch."""
    lines = [
        f"2026-01-01 | INFO | valid | epoch {e:03d} | valid on 'valid' subset | loss "
        f"{p / 100:.3f} | ppl {p} | num_updates {e * updates_per_epoch}"
        for e, p in enumerate(ppls, 1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_grouped_series_mean_and_range_over_seeds():
    # two seeds; the second stopped an epoch earlier: the last x has one run
    xs, mean, low, high = plot_curves.grouped_series([([1, 2, 3], [9, 7, 6]), ([1, 2], [11, 5])])
    assert xs == [1, 2, 3]
    assert mean == [10, 6, 6] and low == [9, 5, 6] and high == [11, 7, 6]


def test_group_draws_one_line_and_band_per_system(tmp_path, monkeypatch):
    """--group: logs with the same label are one line (mean) with a band (range); lines differ
    in marker and dash."""
    logs = [
        _synthetic_log(tmp_path / "a1.log", [300, 200, 150]),
        _synthetic_log(tmp_path / "a2.log", [320, 210, 160]),
        _synthetic_log(tmp_path / "b1.log", [300, 200, 150]),  # b overlaps a's first seed exactly
        _synthetic_log(tmp_path / "b2.log", [280, 190, 140]),
    ]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    saved = {}
    monkeypatch.setattr(plt, "close", lambda fig: saved.setdefault("fig", fig))
    out = tmp_path / "curves.png"
    plot_curves.plot(logs, ["a", "a", "b", "b"], "ppl", ["epoch"], out, group=True)
    assert out.read_bytes()[:8] == PNG_MAGIC
    ax = saved["fig"].axes[0]
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["a (mean of 2 seeds)", "b (mean of 2 seeds)"]
    assert list(lines[0].get_ydata()) == [310, 205, 155]
    assert list(lines[1].get_ydata()) == [290, 195, 145]
    assert lines[0].get_marker() != lines[1].get_marker()
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    assert len(ax.collections) == 2  # one band per system
    # the command line: --group keeps repeated labels
    proc = run(
        ["python", SCRIPT, *logs, "--labels", "a", "a", "b", "b", "--group", "--out", out]
        + ["--x", "epoch"]
    )
    assert "a: 3 points" in proc.stdout
