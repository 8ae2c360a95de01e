"""The notebook path (docs/compgen.md, "The authors' notebook and our pipeline"): one test per
option that switches a difference to the authors' seq2seq notebook, each against a plain
re-statement of what the notebook does, and one fairseq-train run with all of them."""

import csv
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from conftest import ROOT, run
from model_testing import build, toy_dictionary

from fairseq_plugins.compat.batching import NotebookBatches
from fairseq_plugins.modules.relative_positions import RelativePositionBias
from plugin_tools import compgen_data
from studies import compgen_run

ENV = {"OMP_NUM_THREADS": "1"}
ARCH = ["--arch", "compgen_rel2_eb_c"]


# --- batches ---------------------------------------------------------------------------------


def test_notebook_batches_are_64_distinct_sentences_from_a_fresh_shuffle():
    """Every batch exactly 64 sentences, every sentence at most once an epoch, the partial batch
    dropped (floor(N / 64) batches), sentences of any index mixed; a different order every epoch
    and every seed, the same for the same (seed, epoch) (a resumed run)."""
    n = 1000
    sampler = NotebookBatches(np.arange(n), 64, seed=3)
    epochs = [sampler(None, epoch) for epoch in (1, 2)]
    for batches in epochs:
        assert len(batches) == n // 64 == 15
        assert all(len(b) == 64 for b in batches)
        flat = np.concatenate(batches)
        assert len(set(flat.tolist())) == len(flat) == 15 * 64  # 40 sentences left out
        # not length-grouped: a batch spans the whole index range (a sorted order would not)
        assert max(b.max() - b.min() for b in batches) > n // 2
    assert not np.array_equal(np.concatenate(epochs[0]), np.concatenate(epochs[1]))
    assert np.array_equal(np.concatenate(sampler(None, 1)), np.concatenate(epochs[0]))
    other_seed = NotebookBatches(np.arange(n), 64, seed=4)(None, 1)
    assert not np.array_equal(np.concatenate(other_seed), np.concatenate(epochs[0]))
    # only the indices it is given (fairseq's size filter comes first)
    kept = np.arange(0, n, 2)
    assert set(np.concatenate(NotebookBatches(kept, 64, 1)(None, 1)).tolist()) <= set(kept)
    with pytest.raises(ValueError, match="--notebook-batches needs --batch-size"):
        NotebookBatches(np.arange(n), None, 1)


# --- model options ---------------------------------------------------------------------------


def test_layernorm_eps_reaches_every_layernorm():
    default, _ = build(ARCH)
    notebook, _ = build(ARCH + ["--layernorm-eps", "1e-6"])
    norms = [m for m in notebook.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(norms) == 2 * 2 + 3 * 2  # 2 per encoder layer, 3 per decoder layer
    assert {m.eps for m in norms} == {1e-6}
    assert {m.eps for m in default.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-5}
    x = torch.randn(3, 64)
    norm = norms[0]
    expected = (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + 1e-6
    )
    assert torch.allclose(norm(x), expected * norm.weight + norm.bias, atol=1e-6)


@pytest.mark.parametrize("bad", ["0", "-1e-6"])
def test_bad_layernorm_eps_is_a_one_line_error(bad):
    from plugin_tools.errors import PluginConfigError

    with pytest.raises(
        PluginConfigError, match=f"--layernorm-eps {float(bad)}: must be a positive number"
    ):
        build(ARCH + [f"--layernorm-eps={bad}"])


def glorot_bound(linear):
    fan_out, fan_in = linear.weight.shape
    return math.sqrt(6 / (fan_in + fan_out))


def test_official_dense_init_is_glorot_uniform_and_zero_bias_everywhere():
    """--seq2seq-init official-dense: every linear layer (attention q/k/v/out, feed-forward, output
    projection, copy decoder) Glorot-uniform with zero bias, the relative-position vectors and
    scalars uniform in [-0.05, 0.05] (Keras Embedding), the token embeddings as `official`."""
    torch.manual_seed(0)
    model, args = build(ARCH + ["--seq2seq-init", "official-dense"])
    assert args.seq2seq_init == "official-dense"
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(linears) > 20
    for linear in linears:
        bound = glorot_bound(linear)
        assert linear.weight.abs().max() <= bound
        if linear.weight.numel() >= 1000:  # uniform in +-bound: std bound / sqrt(3)
            assert linear.weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.15)
        assert linear.bias is None or linear.bias.abs().max() == 0
    tables = [m for m in model.modules() if isinstance(m, RelativePositionBias)]
    assert len(tables) == 2 + 2 + 2  # encoder self, decoder self, rel2 cross, per layer
    for table in tables:
        for p in (table.embeddings, table.bias):
            assert p.abs().max() <= 0.05 and p.abs().max() > 0.03
    embed = model.encoder.embed_tokens.weight
    assert embed.abs().max() <= 0.05
    # fairseq's own draws differ: q/k/v biases are random and the tables are normal / zero
    torch.manual_seed(0)
    fairseq_model, _ = build(ARCH)
    q = fairseq_model.encoder.layers[0].self_attn.q_proj
    assert q.bias.abs().max() > 0
    rel = [m for m in fairseq_model.modules() if isinstance(m, RelativePositionBias)][0]
    assert rel.bias.abs().max() == 0


def test_decoder_output_bias_is_a_zero_bias_on_the_output_projection():
    default, _ = build(ARCH)
    assert default.decoder.output_projection.bias is None
    model, _ = build(ARCH + ["--decoder-output-bias", "--seq2seq-init", "official-dense"])
    bias = model.decoder.output_projection.bias
    assert bias is not None and bias.shape == (len(toy_dictionary()),) and bias.abs().max() == 0
    assert any(p is bias for p in model.parameters())
    from plugin_tools.errors import PluginConfigError

    with pytest.raises(PluginConfigError, match="--decoder-output-bias needs an untied"):
        build(ARCH + ["--decoder-output-bias", "--share-decoder-input-output-embed"])


def test_copy_attend_padding_gives_the_padding_positions_their_share():
    """With the flag the copy attention is softmax over every source position, padding included
    (the notebook's: no mask), so the padding symbol gets copy mass; without it, none."""
    d = toy_dictionary()
    pad = d.pad()
    src = torch.tensor([[d.index("w3"), d.index("w4"), d.eos(), pad, pad]])
    prev = torch.tensor([[d.eos(), d.index("w3")]])
    out = {}
    for name, flags in (("masked", []), ("attends", ["--copy-attend-padding"])):
        torch.manual_seed(0)
        model, _ = build(ARCH + ["--dropout", "0"] + flags)
        model.eval()
        generator = model.decoder.copy_generator
        generator.gate.bias.data.fill_(30.0)  # gate ~1: the output is the copy distribution
        generator.gate.weight.data.zero_()
        encoder_out = model.encoder(src, src_lengths=torch.tensor([3]))
        with torch.no_grad():
            logp, _ = model.decoder(prev, encoder_out=encoder_out)
        out[name] = logp.exp()[0]
        # the plain re-statement: softmax over all 5 positions of q . e / sqrt(d), scattered
        features, _ = model.decoder.extract_features(prev, encoder_out=encoder_out)
        q = generator.copy_query(features[0])
        e = encoder_out["encoder_out"][0][:, 0]
        logits = q @ e.t() / math.sqrt(e.size(-1))
        if name == "masked":
            logits[:, 3:] = -math.inf
        expected = torch.zeros(2, len(d)).index_add_(1, src[0], torch.softmax(logits, -1))
        assert torch.allclose(out[name], expected, atol=1e-5)
    assert out["masked"][:, pad].max() < 1e-6
    assert out["attends"][:, pad].min() > 0.01


# --- schedule --------------------------------------------------------------------------------


def test_inverse_sqrt_from_zero_is_the_notebooks_schedule():
    """The notebook's learning rate at optimizer step s (0 at the first update): d^-0.5 *
    min(s^-0.5, s * 4000^-1.5). fairseq's inverse_sqrt with --warmup-init-lr 0 and peak
    d^-0.5 * 4000^-0.5 gives update k the rate of num_updates = k - 1: the same at every step."""
    from fairseq.optim import FairseqOptimizer
    from fairseq.optim.lr_scheduler.inverse_square_root_schedule import (
        InverseSquareRootLRScheduleConfig,
        InverseSquareRootSchedule,
    )

    d, warmup = 64, 4000
    peak = float(compgen_run.runs.noam_lr(d))
    cfg = InverseSquareRootLRScheduleConfig(warmup_updates=warmup, warmup_init_lr=0, lr=[peak])

    class Optimizer(FairseqOptimizer):
        lr = None

        def set_lr(self, lr):
            self.lr = lr

        def get_lr(self):
            return self.lr

    optimizer = Optimizer(cfg)
    schedule = InverseSquareRootSchedule(cfg, optimizer)
    for step in (0, 1, 10, 1000, 3999, 4000, 4001, 6250, 31250):
        notebook = 0.0 if step == 0 else d**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert schedule.step_update(step) == pytest.approx(notebook, rel=1e-5, abs=1e-12)


# --- data ------------------------------------------------------------------------------------


def write_cogs(raw, rows):
    raw.mkdir(parents=True)
    for name, lines in rows.items():
        (raw / name).write_text("".join(f"{s}\t{lf}\t{c}\n" for s, lf, c in lines))


def test_notebook_cogs_data_start_token_and_the_notebooks_target_cut(tmp_path):
    """compgen-data --notebook cogs: `[START]` first in every source; the notebook's tensor length
    is the longest `[START] sentence [END]` of train, test and gen (dev not counted), and a
    longer `[START] lf [END]` keeps its last that-many tokens, of which the scored targets are
    all but the first (with [END] = fairseq's </s>)."""
    raw = tmp_path / "raw"
    lf = " ".join(f"t{i}" for i in range(12))
    write_cogs(
        raw,
        {
            "train.tsv": [("a b", lf, "in_distribution"), ("a", "x y", "in_distribution")],
            "dev.tsv": [("a b c d e f g h", "x", "in_distribution")],
            "test.tsv": [("b", "y", "in_distribution")],
            "gen.tsv": [("a b c d", lf, "case1"), ("c", "z", "case2")],
        },
    )
    out = tmp_path / "out"
    compgen_data.main(["cogs", str(out), "--raw-dir", str(raw), "--notebook"])
    length = 4 + 2  # "a b c d" with [START] and [END]
    full = ["[START]", *lf.split(), "[END]"]
    scored = full[-length:][1:-1]
    assert scored == lf.split()[-(length - 2) :]
    assert (out / "train.src").read_text().splitlines() == ["[START] a b", "[START] a"]
    assert (out / "train.tgt").read_text().splitlines() == [" ".join(scored), "x y"]
    assert (out / "gen.tgt").read_text().splitlines() == [" ".join(scored), "z"]
    assert (out / "valid.src").read_text().splitlines() == ["[START] a b c d e f g h"]
    # without the option: unchanged
    plain = tmp_path / "plain"
    compgen_data.main(["cogs", str(plain), "--raw-dir", str(raw)])
    assert (plain / "train.tgt").read_text().splitlines()[0] == lf
    assert (plain / "train.src").read_text().splitlines()[0] == "a b"


def test_notebook_scan_data_trains_on_the_whole_file(tmp_path):
    """compgen-data --notebook scan-length: every training line stays in train (the notebook holds
    nothing out), valid is a part of it, every source begins with [START]."""
    raw = tmp_path / "raw" / "length_split"
    raw.mkdir(parents=True)
    train = [f"IN: walk {'and walk ' * i}OUT: {'I_WALK ' * (i + 1)}".strip() for i in range(20)]
    (raw / "tasks_train_length.txt").write_text("\n".join(train) + "\n")
    (raw / "tasks_test_length.txt").write_text("IN: jump twice OUT: I_JUMP I_JUMP\n")
    out = tmp_path / "out"
    compgen_data.main(
        ["scan-length", str(out), "--raw-dir", str(tmp_path / "raw"), "--notebook", "--valid", "5"]
    )
    src = (out / "train.src").read_text().splitlines()
    assert len(src) == 20 and all(s.startswith("[START] walk") for s in src)
    valid = (out / "valid.src").read_text().splitlines()
    assert len(valid) == 5 and set(valid) <= set(src)
    assert (out / "test.src").read_text() == "[START] jump twice\n"
    plain = tmp_path / "plain"
    compgen_data.main(["scan-length", str(plain), "--raw-dir", str(tmp_path / "raw")])
    assert len((plain / "train.src").read_text().splitlines()) == 18  # 10% held out


def test_notebook_data_refuses_other_tasks(tmp_path):
    proc = run(
        [
            ".venv/bin/python",
            "scripts/compgen-data.py",
            "scan-length-cutoff-26",
            tmp_path,
            "--notebook",
        ],
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip() == (
        "compgen-data: --notebook: only for add, addneg, reverse, dup, cart, inters, scan-length, "
        "scan-addjump, cogs, not scan-length-cutoff-26"
    )


def test_notebook_padding_is_the_longest_source_plus_end(tmp_path):
    for name, lines in (("train", "a b\na"), ("valid", "a"), ("test", "a b c d")):
        (tmp_path / f"{name}.src").write_text(lines + "\n")
    assert compgen_run.notebook_padding(tmp_path, "test") == [
        "--left-pad-source",
        "--pad-source-to-length",
        "5",
    ]


def test_pad_source_to_length_pads_on_the_right_to_the_length(tmp_path):
    """--pad-source-to-length N with --left-pad-source (fairseq 0.12: sets it to False): every
    batch's source is N wide, tokens first, padding after, as the notebook's tensors."""
    from fairseq.data import LanguagePairDataset

    from fairseq_plugins.tasks.translation_accuracy import (
        TranslationAccuracyConfig,
        TranslationAccuracyTask,
    )

    d = toy_dictionary()
    src = [
        torch.tensor([d.index("w1"), d.eos()]),
        torch.tensor([d.index("w2"), d.index("w3"), d.eos()]),
    ]
    dataset = LanguagePairDataset(src, [2, 3], d, src, [2, 3], d, left_pad_source=False)
    cfg = TranslationAccuracyConfig(pad_source_to_length=7, left_pad_source=False)
    task = TranslationAccuracyTask(cfg, d, d)
    task.datasets["valid"] = dataset
    itr = task.get_batch_iterator(dataset, max_sentences=8)
    sample = next(itr.next_epoch_itr(shuffle=False))
    tokens = sample["net_input"]["src_tokens"]
    assert tokens.shape == (2, 7)
    assert tokens[:, 3:].eq(d.pad()).all() and tokens[:, 0].ne(d.pad()).all()
    bad = TranslationAccuracyTask(TranslationAccuracyConfig(pad_source_to_length=-1), d, d)
    with pytest.raises(Exception, match="--pad-source-to-length -1: must be >= 0"):
        bad.get_batch_iterator(dataset, max_sentences=8)


def test_notebook_batches_on_the_training_split_only(tmp_path):
    from fairseq.data import LanguagePairDataset

    from fairseq_plugins.tasks.translation_accuracy import (
        TranslationAccuracyConfig,
        TranslationAccuracyTask,
    )

    d = toy_dictionary()
    src = [torch.tensor([d.index(f"w{1 + i % 5}")] * (1 + i % 7) + [d.eos()]) for i in range(200)]
    sizes = [len(s) for s in src]
    train = LanguagePairDataset(src, sizes, d, src, sizes, d)
    valid = LanguagePairDataset(src[:70], sizes[:70], d, src[:70], sizes[:70], d)
    task = TranslationAccuracyTask(TranslationAccuracyConfig(notebook_batches=True), d, d)
    task.datasets.update(train=train, valid=valid)
    itr = task.get_batch_iterator(train, max_sentences=64, seed=5)
    batches = list(itr.next_epoch_itr())
    assert [b["nsentences"] for b in batches] == [64, 64, 64]
    assert (
        sum(
            b["nsentences"]
            for b in task.get_batch_iterator(valid, max_sentences=64).next_epoch_itr()
        )
        == 70
    )
    with pytest.raises(
        Exception, match="--notebook-batches needs --batch-size N and no --max-tokens"
    ):
        fresh = TranslationAccuracyTask(TranslationAccuracyConfig(notebook_batches=True), d, d)
        fresh.datasets.update(train=train)
        fresh.get_batch_iterator(train, max_tokens=100)


# --- the grid's path -------------------------------------------------------------------------


def test_grid_notebook_path_commands(tmp_path):
    """`--budget paper` defaults to the notebook path: every seq2seq cell runs compgen-run
    --notebook, COGS on the whole gen split, the tagging cells as on the fairseq path, its own
    CSV; `--path fairseq` is our pipeline; a bad --path is a one-line error."""
    grid = ROOT / "scripts" / "compgen-grid.sh"
    tagging_csv = tmp_path / "tagging.csv"  # none recorded: the 15 tagging cells are to do
    for path in ([], ["--path", "notebook"]):
        proc = run(
            ["bash", grid, "--budget", "paper", *path, "--dry-run", "--out", tmp_path]
            + ["--tagging-csv", tagging_csv],
            env=ENV,
        )
        lines = proc.stdout.splitlines()
        seq2seq = [line for line in lines if " compgen-run " in line]
        tagging = [line for line in lines if " cogs-tagging-run " in line]
        assert seq2seq and len(tagging) == 15 and len(seq2seq) + len(tagging) == len(lines)
        assert all(" --notebook " in line for line in seq2seq)
        assert not any("--notebook" in line for line in tagging)
        for line in seq2seq:  # a data set per seed, as the notebook draws one per repetition
            seed = line.split(" --seed ")[1].split()[0]
            assert f" --data-seed {seed} " in line
        cogs = [line for line in seq2seq if " cogs " in line]
        assert cogs and all("--test" not in line for line in cogs)
        assert all(str(ROOT / "docs" / "compgen-paper-notebook.csv") in line for line in seq2seq)
        assert all(str(tagging_csv) in line for line in tagging)
    listed = run(["bash", grid, "--budget", "paper", "--list", "--out", tmp_path], env=ENV)
    assert listed.stdout.startswith("budget paper, path notebook;")
    bad = run(["bash", grid, "--path", "nb", "--list"], env=ENV, check=False)
    assert bad.returncode != 0
    assert bad.stderr.strip() == "compgen-grid.sh: --path nb: choose notebook or fairseq"
    ours = run(
        ["bash", grid, "--budget", "paper", "--path", "fairseq", "--dry-run", "--out", tmp_path],
        env=ENV,
    )
    assert " --notebook" not in ours.stdout and " --data-seed " not in ours.stdout
    assert str(ROOT / "docs" / "compgen-paper.csv") in ours.stdout
    short = run(["bash", grid, "--list", "--out", tmp_path], env=ENV)
    assert short.stdout.startswith("budget short, path fairseq;")


# --- end to end ------------------------------------------------------------------------------


@pytest.mark.slow
def test_tiny_notebook_run_end_to_end(tmp_path):
    """compgen-run --notebook: the notebook's options reach fairseq-train (batches of exactly 64,
    floor(1000 / 64) = 15 a epoch), generation pads the source the same way, and a row is
    recorded with --notebook in its extra_args."""
    out, results = tmp_path / "out", tmp_path / "r.csv"
    run(
        ["bash", ROOT / "scripts" / "compgen-run.sh", "compgen_rel2_eb_c", "reverse", "--small"]
        + ["--epochs", "2", "--notebook", "--out", out, "--csv", results, "--", "--cpu"]
        + ["--log-interval", "5"],
        env=ENV,
    )
    (row,) = list(csv.DictReader(results.open()))
    assert row["updates"] == "30" and row["extra_args"].startswith("--notebook ")
    run_dir = out / "runs" / "compgen_rel2_eb_c" / "reverse-small-nb" / "seed1"
    log = (run_dir / "train.log").read_text()
    for option in ("notebook_batches=True", "layernorm_eps=1e-06", "seq2seq_init='official-dense'"):
        assert option in log
    for option in ("decoder_output_bias=True", "copy_attend_padding=True", "left_pad_source=False"):
        assert option in log
    assert "warmup_init_lr=0.0" in log and "pad_source_to_length=" in log
    assert "epoch 001:     15 / 15" in log and " bsz 64 " in log
    assert (run_dir / "generate.out").read_text().count("\nH-") == 100
    data = out / "data" / "reverse-small-nb-s1" / "raw"
    assert SimpleNamespace(**{"n": len((data / "train.src").read_text().splitlines())}).n == 1000


@pytest.mark.slow
def test_notebook_padding_alone_is_one_factor(tmp_path):
    """compgen-run --notebook-padding: rows 5 and 6 only (copy attention over padding, the source
    right-padded to the notebook's length in training and generation), everything else ours."""
    out, results = tmp_path / "out", tmp_path / "r.csv"
    run(
        ["bash", ROOT / "scripts" / "compgen-run.sh", "compgen_rel2_eb_c", "reverse", "--small"]
        + ["--max-update", "4", "--notebook-padding", "--out", out, "--csv", results]
        + ["--", "--cpu", "--log-interval", "2"],
        env=ENV,
    )
    (row,) = list(csv.DictReader(results.open()))
    assert row["extra_args"].startswith("--notebook-padding ")
    run_dir = out / "runs" / "compgen_rel2_eb_c" / "reverse-small" / "seed1"
    raw = out / "data" / "reverse-small-s1" / "raw"
    length = compgen_run.notebook_padding(raw, "test")[-1]
    log = (run_dir / "train.log").read_text()
    for option in ("copy_attend_padding=True", "left_pad_source=False"):
        assert option in log
    assert f"pad_source_to_length={length}" in log
    for option in ("notebook_batches=False", "seq2seq_init='fairseq'", "warmup_init_lr=1e-07"):
        assert option in log
    assert "layernorm_eps=1e-06" not in log and "decoder_output_bias=True" not in log
    generation = (run_dir / "generate.log").read_text()
    # fairseq-generate prints its task config as a dict
    assert f"'pad_source_to_length': {length}" in generation
    assert "'left_pad_source': False" in generation
