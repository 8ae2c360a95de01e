"""The translation_accuracy task: fairseq-train logs sequence accuracy on valid and keeps the
checkpoint with the best one; fairseq-generate + seq-accuracy on that checkpoint agree."""

import random
import re

import pytest
from conftest import ROOT, fairseq_generate, fairseq_preprocess, fairseq_train

from plugin_tools import seq_accuracy as sa

ENV = {"OMP_NUM_THREADS": "1"}
N_VALID = 61  # not a multiple of 8: fairseq's batching must not drop the tail


@pytest.fixture(scope="module")
def lexical_bin(tmp_path_factory):
    """A toy task a 1-layer model learns in ~100 updates: 1-3 letters -> the same in capitals."""
    base = tmp_path_factory.mktemp("acc_task")
    raw, rng = base / "raw", random.Random(0)
    raw.mkdir()
    for split, n in (("train", 600), ("valid", N_VALID)):
        pairs = [rng.choices("abcdef", k=rng.randint(1, 3)) for _ in range(n)]
        (raw / f"{split}.src").write_text("".join(" ".join(p) + "\n" for p in pairs))
        (raw / f"{split}.tgt").write_text("".join(" ".join(p).upper() + "\n" for p in pairs))
    fairseq_preprocess(raw, base / "bin", splits=("train", "valid"), env=ENV)
    return base


TINY = (
    ["--arch", "transformer", "--encoder-layers", "1", "--decoder-layers", "1"]
    + ["--encoder-embed-dim", "32", "--decoder-embed-dim", "32"]
    + ["--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64"]
    + ["--encoder-attention-heads", "2", "--decoder-attention-heads", "2"]
)


@pytest.mark.slow
def test_valid_accuracy_selects_best_checkpoint(lexical_bin, tmp_path):
    save = tmp_path / "ckpt"
    proc = fairseq_train(
        lexical_bin / "bin",
        save,
        ["--task", "translation_accuracy", "--eval-accuracy"]
        + ["--eval-accuracy-args", '{"beam": 1}']
        + TINY
        + ["--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", "inverse_sqrt"]
        + ["--warmup-updates", "20", "--dropout", "0", "--batch-size", "32", "--seed", "1"]
        + ["--max-update", "120", "--validate-interval-updates", "20"]
        + ["--save-interval-updates", "20", "--no-epoch-checkpoints"]
        + ["--best-checkpoint-metric", "accuracy", "--maximize-best-checkpoint-metric"]
        + ["--log-format", "simple", "--cpu"],
        env=ENV,
    )
    log = proc.stdout + proc.stderr
    valid = re.findall(r"valid on 'valid' subset \|.* accuracy ([0-9.e-]+) \|.*", log)
    bests = re.findall(r"valid on 'valid' subset \|.* best_accuracy ([0-9.e-]+)", log)
    accs = [float(a) for a in valid]
    assert len(accs) >= 6, log[-3000:]
    for a in accs:
        assert 0.0 <= a <= 1.0
        assert abs(a * N_VALID - round(a * N_VALID)) < 1e-3, "not k/61: examples dropped"
    assert max(accs) > 0.5, f"the toy task was not learned: {accs}"
    # best_accuracy is the running maximum (the first line has none yet)
    for i, b in enumerate(bests, start=len(accs) - len(bests)):
        assert float(b) == pytest.approx(max(accs[: i + 1]), abs=1e-5)
    saved_best = [
        float(s)
        for s in re.findall(r"checkpoint_best\.pt \(epoch \d+ @ \d+ updates, score ([0-9.]+)", log)
    ]
    assert saved_best and saved_best[-1] == pytest.approx(max(accs), abs=1e-6)

    # Decoding the valid set with checkpoint_best reproduces the best logged accuracy.
    gen = fairseq_generate(
        lexical_bin / "bin",
        save / "checkpoint_best.pt",
        ["--task", "translation_accuracy", "--gen-subset", "valid", "--beam", "1"]
        + ["--batch-size", "32", "--cpu"],
        env=ENV,
    )
    hyps, refs, _ = sa.parse_generate_output(gen.stdout.splitlines())
    refs_raw = (lexical_bin / "raw" / "valid.tgt").read_text().splitlines()
    h, r = sa.align(hyps, dict(enumerate(refs_raw)))
    assert sa.score(h, r)["accuracy"] == pytest.approx(max(accs), abs=1e-5)


@pytest.mark.slow
def test_bad_generation_args_fail_clearly(lexical_bin, tmp_path):
    proc = fairseq_train(
        lexical_bin / "bin",
        tmp_path,
        ["--task", "translation_accuracy", "--eval-accuracy", "--eval-accuracy-args", "{beam"]
        + TINY
        + ["--max-update", "1", "--batch-size", "8", "--cpu"],
        env=ENV,
        check=False,
    )
    assert proc.returncode != 0
    assert "--eval-accuracy-args is not valid JSON" in proc.stderr


def test_task_is_registered():
    from fairseq.tasks import TASK_REGISTRY
    from fairseq.tasks.translation import TranslationTask

    import fairseq_plugins  # noqa: F401

    task = TASK_REGISTRY["translation_accuracy"]
    assert issubclass(task, TranslationTask)
    assert str(ROOT) in __import__(task.__module__, fromlist=["_"]).__file__
