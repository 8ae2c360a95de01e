"""Language-model pipeline on a slice of the real WikiText-2:
prepare-wikitext.sh -> train-lm.sh (tiny stock transformer_lm) -> eval-lm.sh -> plot-curves.py."""

import math
import re

import pytest
from conftest import ROOT, run
from model_testing import parse_lm_config

SCRIPTS = ROOT / "scripts"
ENV = {"OMP_NUM_THREADS": "1"}
TINY_LM = [
    "--decoder-layers", "1", "--decoder-embed-dim", "32", "--decoder-input-dim", "32",
    "--decoder-output-dim", "32", "--decoder-ffn-embed-dim", "64", "--decoder-attention-heads", "2",
    "--share-decoder-input-output-embed", "--tokens-per-sample", "64", "--max-tokens", "512",
    "--lr", "0.005", "--warmup-updates", "5", "--max-update", "24",
    "--validate-interval-updates", "8", "--max-valid-steps", "4",
    "--no-epoch-checkpoints", "--num-workers", "0", "--log-interval", "8", "--seed", "1",
]  # fmt: skip


@pytest.fixture(scope="module")
def wt2_bin(wikitext2_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("wt2")
    proc = run(
        ["bash", SCRIPTS / "prepare-wikitext.sh", "2", wikitext2_data, "--out", out]
        + ["--max-train-lines", "1500", "--max-eval-lines", "120"],
        env=ENV,
    )
    assert proc.stdout.strip().splitlines()[-1] == str(out / "bin")
    return out


def test_prepare_wikitext_slice(wt2_bin):
    text = wt2_bin / "text"
    assert sum(1 for _ in (text / "train.txt").open(encoding="utf-8")) == 1500
    assert sum(1 for _ in (text / "test.txt").open(encoding="utf-8")) == 120
    # the gzipped training split was unpacked: first line of WikiText-2 train is " "
    first = (text / "train.txt").read_text(encoding="utf-8").splitlines()[:2]
    assert first[0].strip() == "" and first[1].startswith(" = Valkyria Chronicles III =")
    for split in ("train", "valid", "test"):
        assert (wt2_bin / "bin" / f"{split}.bin").stat().st_size > 0
    dict_words = {ln.split()[0] for ln in (wt2_bin / "bin" / "dict.txt").open(encoding="utf-8")}
    assert {"the", ",", "Valkyria"} <= dict_words


@pytest.fixture(scope="module")
def trained(wt2_bin, tmp_path_factory):
    save = tmp_path_factory.mktemp("lm_ckpt")
    run(
        ["bash", SCRIPTS / "train-lm.sh", "transformer_lm", wt2_bin / "bin", save, "--", *TINY_LM],
        env=ENV,
    )
    return save


@pytest.mark.slow
def test_train_and_eval_lm(wt2_bin, trained):
    assert (trained / "checkpoint_best.pt").is_file()
    log = (trained / "train.log").read_text(encoding="utf-8")
    assert "--user-dir" in (trained / "command.txt").read_text()
    assert "num_updates 24" in log
    proc = run(
        ["bash", SCRIPTS / "eval-lm.sh", trained / "checkpoint_best.pt", wt2_bin / "bin"]
        + ["--context-window", "32"],
        env=ENV,
    )
    last = proc.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"ppl: ([0-9.]+)", last)
    assert m, proc.stdout
    ppl = float(m.group(1))
    vocab = sum(1 for _ in (wt2_bin / "bin" / "dict.txt").open()) + 4
    assert math.isfinite(ppl) and 1 < ppl < vocab  # better than a uniform guess after 24 updates
    assert "tokens-per-sample 64, context window 32" in proc.stdout
    loss = float(re.search(r"^loss: ([0-9.]+)$", proc.stdout, re.M).group(1))
    assert 2**loss == pytest.approx(ppl, rel=1e-3)


@pytest.mark.slow
def test_eval_lm_rejects_too_large_context(wt2_bin, trained):
    proc = run(
        ["bash", SCRIPTS / "eval-lm.sh", trained / "checkpoint_best.pt", wt2_bin / "bin"],
        check=False,
        env=ENV,
    )  # default --context-window 400 >= tokens-per-sample 64 of this checkpoint
    assert proc.returncode == 2
    assert "--context-window 400" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_plot_lm_curves(trained, tmp_path):
    out = tmp_path / "lm.png"
    proc = run(["python", SCRIPTS / "plot-curves.py", trained / "train.log", "--out", out], env=ENV)
    assert "3 points" in proc.stdout  # validations at updates 8, 16, 24
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


@pytest.mark.parametrize(
    "args, named",
    [
        (["prepare-wikitext.sh", "5"], "5"),
        (["prepare-wikitext.sh", "2", "/nonexistent/wt2"], "/nonexistent/wt2"),
        (["prepare-wikitext.sh", "2", "--max-train-lines", "x"], "--max-train-lines"),
        (["train-lm.sh", "transformer_lm", "/nonexistent/bin", "/tmp/x"], "/nonexistent/bin"),
        (["train-lm.sh", "configs/lm/none.sh", "/nonexistent/bin", "/tmp/x"], "configs/lm/none.sh"),
        (["eval-lm.sh", "/nonexistent/ckpt.pt", "/tmp"], "/nonexistent/ckpt.pt"),
        (["eval-lm.sh", "/nonexistent/ckpt.pt", "/tmp", "--bogus"], "--bogus"),
    ],
)
def test_script_errors(args, named, tmp_path):
    proc = run(["bash", SCRIPTS / args[0], *args[1:]], cwd=ROOT, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr


def test_configs():
    show = 'set -euo pipefail; source "$1"; echo "$ARCH"; printf "%s\\n" "${TRAIN_ARGS[@]}"'
    settings = {}
    for cfg in sorted((ROOT / "configs" / "lm").glob("*.sh")):
        lines = run(["bash", "-c", show, "x", cfg]).stdout.splitlines()
        settings[cfg.stem] = (lines[0], " ".join(lines[1:]))
    arch, args = settings["wikitext103-compositional"]
    assert arch == "compositional_transformer_lm_wiki103"
    # The paper's model comes from the arch (the config sets training only): check what fairseq's
    # parser makes of arch + config, as fairseq-train would.
    parsed = parse_lm_config(arch, args)
    expected = dict(
        attention_type="compositional", share_decoder_layers=True, decoder_layers=6,
        decoder_embed_dim=512, decoder_ffn_embed_dim=2048, decoder_attention_heads=8,
        decoder_normalize_before=True, share_decoder_input_output_embed=True, dropout=0.1,
        attention_dropout=0.1, activation_dropout=0.1,
        adam_betas="(0.9,0.98)", weight_decay=0.01, lr_scheduler="inverse_sqrt",
        warmup_updates=4000, lr=[0.004], tokens_per_sample=512, retrieval_qk_dim=32,
    )  # fmt: skip
    assert {k: getattr(parsed, k) for k in expected} == expected
    arch, args = settings["wikitext103-baseline"]
    assert arch == "compositional_transformer_lm_wiki103_baseline"
    baseline = parse_lm_config(arch, args)
    assert baseline.lr == [0.002] and baseline.attention_type == "multihead"
    # the presets' layer sharing can be turned off
    unshared = parse_lm_config(arch, args + " --no-share-decoder-layers")
    assert not unshared.share_decoder_layers and parsed.share_decoder_layers
    comp2 = parse_lm_config(*settings["wikitext2-small-compositional"])
    plain2 = parse_lm_config(*settings["wikitext2-small"])
    assert comp2.share_decoder_layers and comp2.lr == [0.004] and plain2.lr == [0.002]
    for k in ("decoder_embed_dim", "decoder_layers", "tokens_per_sample", "max_update", "dropout"):
        assert getattr(comp2, k) == getattr(plain2, k), k
    assert settings["wikitext2-small"][0] == "transformer_lm"
