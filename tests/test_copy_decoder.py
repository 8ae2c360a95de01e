"""Copy decoder (docs/method.md §2.5): the mixture is a distribution, the copy part is the
attention mass scattered onto source tokens, and padding is masked."""

import math

import pytest
import torch
from attention_testing import randomize
from model_testing import TINY, batch, build

from fairseq_plugins.modules.copy_generator import CopyGenerator


def copy_model():
    torch.manual_seed(0)
    model, _ = build(["--arch", "compgen_abs_c"] + TINY)
    return randomize(model, std=0.2).eval()


def test_mixture_is_a_distribution():
    model = copy_model()
    src, lengths, tgt = batch()
    with torch.no_grad():
        probs = model.get_normalized_probs(model(src, lengths, tgt), log_probs=False)
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:2]), atol=1e-5, rtol=1e-5)
    assert (probs >= 0).all()


def test_gate_one_gives_attention_mass_on_source_tokens():
    torch.manual_seed(1)
    gen = randomize(CopyGenerator(16, 16))
    with torch.no_grad():
        gen.gate.weight.zero_()
        gen.gate.bias.fill_(60.0)  # sigmoid -> 1
    B, T, S, V = 2, 3, 5, 11
    features, enc = torch.randn(B, T, 16), torch.randn(S, B, 16)
    src = torch.tensor([[1, 1, 4, 7, 4], [3, 5, 6, 8, 9]])  # sentence 0 left-padded, token 4 twice
    pad = src.eq(1)
    log_p = gen(torch.randn(B, T, V), features, enc, pad, src)
    # independent re-statement: single-head attention, query W_c y, keys the encoder outputs
    q = features @ gen.copy_query.weight.T + gen.copy_query.bias
    logits = torch.einsum("btc,sbc->bts", q, enc) / math.sqrt(16)
    logits = logits.masked_fill(pad.unsqueeze(1), float("-inf"))
    attn = torch.softmax(logits, -1)
    expected = torch.zeros(B, T, V)
    for b in range(B):
        for s in range(S):
            expected[b, :, src[b, s]] += attn[b, :, s]
    torch.testing.assert_close(log_p.exp(), expected.clamp(min=1e-10), atol=1e-6, rtol=1e-5)
    assert log_p.exp()[0, :, 1].max() < 1e-9  # padding receives no copy mass


def test_gate_zero_gives_the_vocabulary_distribution():
    gen = CopyGenerator(8, 8)
    with torch.no_grad():
        gen.gate.weight.zero_()
        gen.gate.bias.fill_(-60.0)
    logits = torch.randn(2, 3, 9)
    src = torch.tensor([[2, 3], [4, 5]])
    log_p = gen(logits, torch.randn(2, 3, 8), torch.randn(2, 2, 8), None, src)
    torch.testing.assert_close(log_p, torch.log_softmax(logits, -1), atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_beam_search_over_a_copy_model_reproduces_an_input_copy_task(tmp_path):
    """Train compgen_rel2_eb_c briefly on target = source; fairseq-generate's beam search must
    then reproduce unseen inputs exactly (the copy distribution carries the tokens)."""
    import random

    from conftest import fairseq_generate, fairseq_preprocess, fairseq_train

    rng = random.Random(0)
    vocab = [f"t{i}" for i in range(40)]
    for split, n in (("train", 4000), ("valid", 50), ("test", 60)):
        lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 10))) for _ in range(n)]
        for side in ("src", "tgt"):
            (tmp_path / f"{split}.{side}").write_text("\n".join(lines) + "\n")
    fairseq_preprocess(tmp_path, tmp_path / "bin")
    fairseq_train(
        tmp_path / "bin",
        tmp_path / "ckpt",
        ["--arch", "compgen_rel2_eb_c", "--optimizer", "adam", "--lr", "3e-3"]
        + ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "50", "--max-tokens", "1500"]
        + ["--max-update", "180", "--dropout", "0", "--cpu", "--no-epoch-checkpoints"]
        + ["--disable-validation"],
    )
    gen = fairseq_generate(
        tmp_path / "bin",
        tmp_path / "ckpt/checkpoint_last.pt",
        ["--beam", "4", "--cpu", "--batch-size", "64"],
    )
    hyps, refs = {}, {}
    for line in gen.stdout.splitlines():
        if line.startswith("H-"):
            key, _, text = line.split("\t")
            hyps[key[2:]] = text
        elif line.startswith("T-"):
            key, text = line.split("\t")
            refs[key[2:]] = text
    assert len(refs) == 60
    exact = sum(hyps[k] == refs[k] for k in refs)
    assert exact >= 57, f"only {exact}/60 inputs copied exactly"
