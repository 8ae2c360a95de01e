"""End to end through the real command-line tools: prepare a Multi30k slice, train with 2 CPU
processes (gloo), resume from checkpoint_last.pt, beam-4 generation, BLEU."""

import json
import re

import pytest
from conftest import ROOT, run

TINY = "--arch transformer --encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 "
TINY += "--decoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 "
TINY += "--encoder-attention-heads 2 --decoder-attention-heads 2 --optimizer adam --lr 1e-3 "
TINY += "--max-tokens 1500 --no-progress-bar --log-interval 1 --no-epoch-checkpoints --seed 3"


@pytest.fixture(scope="module")
def multi30k(multi30k_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("m30k")
    proc = run(
        ["bash", ROOT / "scripts/prepare-multi30k.sh", out, "--raw-dir", multi30k_data]
        + ["--max-train-lines", "600", "--max-eval-lines", "30", "--vocab-size", "600"]
    )
    assert "train 600, valid 30, test 30" in proc.stdout
    return out


@pytest.mark.slow
def test_two_process_training_resume_generate_bleu(multi30k, tmp_path):
    save = tmp_path / "ckpt"
    first = run(
        ["bash", ROOT / "scripts/train.sh", multi30k / "bin", save, "--nproc", "2", "--"]
        + TINY.split()
        + ["--max-update", "4"]
    )
    assert "distributed init (rank 1)" in (save / "train.rank1.log").read_text()
    assert re.search(r"num_updates 4\b", first.stdout)
    assert (save / "checkpoint_last.pt").exists()

    resumed = run(
        ["bash", ROOT / "scripts/train.sh", multi30k / "bin", save, "--nproc", "2", "--"]
        + TINY.split()
        + ["--max-update", "7", "--restore-file", "checkpoint_last.pt"]
    )
    assert re.search(
        r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 4 updates\)", resumed.stdout
    )
    assert re.search(r"num_updates 7\b", resumed.stdout)

    out = tmp_path / "gen"
    proc = run(
        ["bash", ROOT / "scripts/generate.sh", multi30k / "bin", save / "checkpoint_last.pt", out]
        + ["--beam", "4", "--ref", multi30k / "raw/test.en", "--", "--max-len-b", "10"]
    )
    assert "sacreBLEU" in proc.stdout and "nrefs:1|case:mixed" in proc.stdout
    scores = json.loads((out / "scores.json").read_text())
    assert scores["sentences"] == 30
    assert 0 <= scores["sacrebleu"] <= 100 and 0 <= scores["tokenized_bleu"] <= 100
    hyps = (out / "hyp.txt").read_text().splitlines()
    refs = (out / "ref.txt").read_text().splitlines()
    assert len(hyps) == len(refs) == 30
    assert refs == (multi30k / "raw/test.en").read_text().splitlines()  # corpus order


def test_prepare_rejects_mismatched_line_counts_before_writing(tmp_path):
    (tmp_path / "train.de").write_text("a b\nc d\n")
    (tmp_path / "train.en").write_text("x y\n")
    out = tmp_path / "out"
    proc = run(
        ["bash", ROOT / "scripts/prepare-translation.sh", "--src", "de", "--tgt", "en"]
        + ["--train", tmp_path / "train", "--valid", tmp_path / "train", "--out", out],
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"prepare-translation: error: line counts differ: {tmp_path}/train.de has 2, "
        f"{tmp_path}/train.en has 1"
    ]
    assert not out.exists()


def test_prepare_reports_dropped_empty_lines(tmp_path):
    (tmp_path / "t.de").write_text("a b\n\nc d\ne\n")
    (tmp_path / "t.en").write_text("x y\nz\n\nw\n")
    proc = run(
        ["bash", ROOT / "scripts/prepare-translation.sh", "--src", "de", "--tgt", "en"]
        + ["--train", tmp_path / "t", "--valid", tmp_path / "t", "--out", tmp_path / "o"]
        + ["--tokenizer", "none", "--bpe", "none"]
    )
    assert "dropped 2 pair(s) with an empty side" in proc.stderr
    assert (tmp_path / "o/raw/train.de").read_text() == "a b\ne\n"
