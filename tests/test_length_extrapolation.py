"""Length extrapolation end to end: each position scheme of docs/method.md §5 and the Neural
Data Router trains a tiny model a few hundred updates through fairseq-train on Reverse (training
strings of 1-16 digits), then fairseq-generate decodes strings of 17-24 digits, longer than any
seen in training; the model then runs in-process on inputs three times the longest training
length, with the position modules checked as they run (finite, no bucket or table index out of
range, ALiBi exactly -m|i - j|)."""

import math
import re

import pytest
import torch
from conftest import ROOT, fairseq_preprocess, run, train_then_generate

ARCHS = {
    "compgen_alibi_c": [],
    # small T5 tables, so that test distances pass the last bucket (max distance 12)
    "compgen_t5_c": ["--t5-num-buckets", "8", "--t5-max-distance", "12"],
    "compgen_rope_c": ["--rel-pos-cross"],
    "compgen_comp_t5_c": ["--rel-pos-cross"],
    "compgen_rel_eb_nope_c": [],
    "compgen_ndr_c": [],
}
TINY = ["--encoder-embed-dim", "32", "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64"]
TINY += ["--decoder-ffn-embed-dim", "64"]
UPDATES = 300
TRAIN = ["--task", "translation_accuracy", "--optimizer", "adam", "--lr", "3e-3"]
TRAIN += ["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "30", "--batch-size", "32"]
TRAIN += ["--max-update", str(UPDATES), "--criterion", "cross_entropy", "--seed", "1"]
TRAIN += ["--no-epoch-checkpoints", "--no-progress-bar", "--log-interval", "50", "--cpu"]
TRAIN += ["--validate-interval", "1000", "--save-interval", "1000"]


@pytest.fixture(scope="module")
def reverse_bin(tmp_path_factory):
    """Reverse (Ontanon et al.): train 1-16 digits, test 17-24, a joined dictionary."""
    raw = tmp_path_factory.mktemp("reverse") / "raw"
    sizes = ["--train", "800", "--valid", "50", "--test", "40", "--seed", "1"]
    run(["python", ROOT / "scripts" / "compgen-data.py", "reverse", raw, *sizes])
    out = raw.parent / "bin"
    fairseq_preprocess(raw, out)
    return raw, out


def longest(path):
    return max(len(line.split()) for line in path.read_text().splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("arch", list(ARCHS))
def test_trains_and_decodes_longer_inputs(reverse_bin, tmp_path, arch):
    raw, data = reverse_bin
    assert longest(raw / "test.src") > longest(raw / "train.src")  # really longer
    save = tmp_path / "ckpt"
    gen, hyps = train_then_generate(
        data,
        save,
        ["--arch", arch] + TINY + ARCHS[arch] + TRAIN,
        ["--task", "translation_accuracy", "--beam", "2", "--batch-size", "20", "--cpu"],
        updates=UPDATES,
    )
    assert len(hyps) == 40  # every longer string decoded
    scores = [float(h.split("\t")[1]) for h in hyps]
    positional = [
        float(v)
        for line in gen.stdout.splitlines()
        if line.startswith("P-")
        for v in line.split()[1:]
    ]
    assert all(math.isfinite(s) for s in scores + positional)
    check_long_forward(data, save / "checkpoint_last.pt", 3 * longest(raw / "train.src"))


def check_long_forward(data, checkpoint, length):
    """Encoder and teacher-forced decoder on one input of ``length`` digits, every position module
    watched: finite outputs, T5 buckets inside the table, ALiBi = -m|i - j|."""
    from fairseq import checkpoint_utils

    from fairseq_plugins.modules.position_schemes import AlibiBias, T5RelativeBias

    models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data)}
    )
    model = models[0].eval()
    seen = []

    def watch(module, inputs, output):
        labels = inputs[1]
        assert torch.isfinite(output).all()
        if isinstance(module, T5RelativeBias):
            assert 0 <= int(labels.min()) and int(labels.max()) < module.bias.size(0)
        if isinstance(module, AlibiBias):  # 0 on the diagonal, -m_h per step of distance
            steepest = float(module.slopes.max()) * int(labels.max())
            assert float(output.amax()) == 0.0
            assert float(output.amin()) == pytest.approx(-steepest, rel=1e-6)
        seen.append((type(module).__name__, tuple(output.shape)))

    hooks = [
        m.register_forward_hook(watch)
        for m in model.modules()
        if isinstance(m, (AlibiBias, T5RelativeBias))
    ]
    vocab = task.source_dictionary
    digits = [vocab.index(str(d)) for d in range(10)]
    generator = torch.Generator().manual_seed(0)
    src = torch.tensor(digits)[torch.randint(0, 10, (length,), generator=generator)]
    src = torch.cat([src, torch.tensor([vocab.eos()])]).unsqueeze(0)
    prev = torch.cat([torch.tensor([[vocab.eos()]]), src.flip(1)[:, 1:]], dim=1)
    with torch.no_grad():
        out, _ = model(src, torch.tensor([src.size(1)]), prev)
        logprobs = model.get_normalized_probs((out, _), log_probs=True)
    for hook in hooks:
        hook.remove()
    assert torch.isfinite(logprobs).all()
    if any(isinstance(m, (AlibiBias, T5RelativeBias)) for m in model.modules()):
        assert seen and all(shape[-1] >= length for _, shape in seen)


def test_compgen_data_reverse_lengths_are_as_the_test_assumes(tmp_path):
    """The fixture's premise without training: test strings are longer than training ones."""
    raw = tmp_path / "raw"
    run(
        ["python", ROOT / "scripts" / "compgen-data.py", "reverse", raw, "--train", "50"]
        + ["--valid", "5", "--test", "5", "--seed", "1"]
    )
    assert longest(raw / "train.src") <= 17 < longest(raw / "test.src")
    assert re.fullmatch(r"[\d ]+", (raw / "test.src").read_text().splitlines()[0])
