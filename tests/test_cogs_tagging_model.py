"""COGS as sequence tagging (Ontañón et al. 2022, 4.5.1): the tagging model, its parent heads, the
criterion, the metric plumbing, and the task end to end through fairseq's tools."""

import json
import math
import re
import sys
from types import SimpleNamespace

import pytest
import torch
from attention_testing import randomize
from conftest import ROOT, fairseq_tool, fairseq_train, run
from model_testing import (
    COGS_E0,
    COGS_E2,
    TAGGING_TINY,
    assert_keras_defaults,
    build_tagging,
    embedding_std,
    parse_training_args,
    tagging_task,
)

from fairseq_plugins.modules.parent_heads import (
    INVALID_PARENT,
    AttentionParentHead,
    LinearParentHead,
)
from plugin_tools import cogs_tags as ct
from plugin_tools.tagging_accuracy import format_table, score_tagging

E0_LF = "rose ( x _ 1 ) AND help . theme ( x _ 3 , x _ 1 ) AND help . agent ( x _ 3 , x _ 6 ) AND dog ( x _ 6 )"
E2_LF = (
    "* girl ( x _ 1 ) ; * weapon ( x _ 4 ) ; offer . agent ( x _ 2 , x _ 1 ) AND offer . theme "
    "( x _ 2 , x _ 4 ) AND offer . recipient ( x _ 2 , x _ 10 ) AND weapon . nmod . beside "
    "( x _ 4 , x _ 7 ) AND machine ( x _ 7 ) AND chicken ( x _ 10 )"
)


def sample_for(task, sentences):
    """A collated batch (right padding) of (sentence, LF) pairs, as the task's dataset makes it."""
    from fairseq_plugins.tasks.cogs_tagging import CogsTaggingDataset

    examples = []
    for sentence, lf in sentences:
        tags = ct.lf_to_tags(sentence, lf)
        strings = ct.tags_to_strings(tags)
        examples.append(
            {
                "tokens": sentence.split(),
                "parent": tags.parent,
                **{row: strings[row] for row in ("role", "category", "noun_type", "verb_name")},
                "lf": lf,
                "distribution": "in_distribution",
            }
        )
    ds = CogsTaggingDataset(examples, task.source_dictionary, task.tag_dicts, shuffle=False)
    return ds.collater([ds[i] for i in range(len(ds))])


# ------------------------------------------------------------------------------ parent heads


@pytest.mark.parametrize("kind", ["absolute", "relative"])
def test_linear_parent_classes_are_the_official_ones_and_decode_back(kind):
    longest = 12
    head = LinearParentHead(kind, 8, longest)
    assert head.num_classes == (longest + 2 if kind == "absolute" else 2 * longest)
    rows = [ct.lf_to_tags(COGS_E0, E0_LF).parent, ct.lf_to_tags(COGS_E2, E2_LF).parent]
    parents = torch.full((2, 12), -100)
    for b, row in enumerate(rows):
        parents[b, : len(row)] = torch.tensor(row)
    pad = parents.eq(-100)
    targets = head.targets(parents, pad)
    for b, row in enumerate(rows):
        assert targets[b, : len(row)].tolist() == ct.parent_classes(row, kind, longest)
        assert (targets[b, len(row) :] == -100).all()
    decoded = head.decode(targets.clamp(min=0), pad)
    for b, row in enumerate(rows):
        assert decoded[b, : len(row)].tolist() == row
    # the padding class and classes pointing outside the sentence decode as invalid
    bad = torch.zeros_like(targets)
    bad[0, 1] = 0
    bad[0, 2] = (2 + 9) if kind == "absolute" else (9 - 2) + longest  # parent 9 in 8 tokens
    assert head.decode(bad, pad)[0, 1:3].tolist() == [INVALID_PARENT, INVALID_PARENT]


def test_attention_parent_head_restated():
    """logits_ij = (q_i.k_j + q_i.e[R + clip(i - j)] + b[R + clip(i - j)]) / sqrt(d), padded keys
    excluded; the official class of key j is j + 1 after the roll, ours is j."""
    torch.manual_seed(0)
    d, R = 6, 2
    head = randomize(AttentionParentHead(d, "eb", R), std=0.5).double()
    H = torch.randn(2, 5, d, dtype=torch.double)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    logits = head(H, pad)
    E, b = head.rel_pos.embeddings, head.rel_pos.bias[:, 0]
    for n in range(2):
        length = int((~pad[n]).sum())
        q = H[n] @ head.q_proj.weight.T + head.q_proj.bias
        k = H[n] @ head.k_proj.weight.T + head.k_proj.bias
        expected = torch.empty(5, length, dtype=torch.double)
        for i in range(5):
            for j in range(length):
                label = R + max(-R, min(R, i - j))
                expected[i, j] = (q[i] @ k[j] + q[i] @ E[label] + b[label]) / math.sqrt(d)
        got = torch.softmax(logits[n], -1)
        torch.testing.assert_close(got[:, :length], torch.softmax(expected, -1))
        assert (got[:, length:] < 1e-30).all()
        # official: roll by one over max_len = L + 1 columns, the last one padding
        official = torch.roll(torch.nn.functional.pad(got[:, :length], (0, 1)), 1, dims=-1)
        assert (official[:, 0] < 1e-30).all()
        torch.testing.assert_close(official[:, 1:], got[:, :length])
    # no parent = the token itself
    parents = torch.tensor([[1, -1, 0, -1, 2]])
    targets = head.targets(parents, torch.zeros(1, 5, dtype=torch.bool))
    assert targets.tolist() == [[1, 1, 0, 3, 2]]
    assert head.decode(targets, torch.zeros(1, 5, dtype=torch.bool)).tolist() == parents.tolist()


def test_attention_head_without_relative_positions_has_no_tables():
    assert AttentionParentHead(8).rel_pos is None


# ---------------------------------------------------------------------------------- the model


def test_presets_structure():
    model, args, _ = build_tagging(["--arch", "cogs_tagging_tuned"])
    assert (args.encoder_layers, args.encoder_embed_dim, args.encoder_ffn_embed_dim) == (2, 64, 256)
    assert args.encoder_attention_heads == 4 and args.share_encoder_layers
    assert args.rel_pos == "eb" and args.rel_pos_radius == 16 and args.parent_head == "attention"
    assert args.no_token_positional_embeddings and not args.encoder_normalize_before
    assert model.encoder.layers[0].fc1.weight is model.encoder.layers[1].fc1.weight
    assert model.parent_head.rel_pos.embeddings.shape == (33, 64)  # a table of dim d
    base, args, task = build_tagging(["--arch", "cogs_tagging_base"])
    assert args.parent_head == "absolute" and args.rel_pos == "none"
    assert base.encoder.embed_positions is not None  # sinusoidal absolute positions
    assert base.parent_head.proj.out_features == task.longest + 2
    assert not hasattr(base, "decoder")
    _, args, _ = build_tagging(["--arch", "cogs_tagging_rel_eb", "--parent-head", "relative"])
    assert args.rel_pos == "eb" and not args.share_encoder_layers and args.parent_head == "relative"


def test_sentences_longer_than_the_linear_parent_head_are_refused():
    from plugin_tools.errors import PluginConfigError

    model, _, task = build_tagging(
        ["--arch", "cogs_tagging_base", "--tagging-longest", "10"] + TAGGING_TINY
    )
    sample = sample_for(task, [(COGS_E2, E2_LF)])  # 12 tokens
    with pytest.raises(
        PluginConfigError, match="12 tokens is longer than the 10 .*--tagging-longest"
    ):
        model.targets(sample)


def test_official_init_is_the_notebooks_keras_defaults():
    """--tagging-init official: token embeddings uniform in [-0.05, 0.05] (padding row zero), tag
    heads Glorot-uniform with zero biases; --tagging-init fairseq keeps fairseq's
    normal(0, d^-0.5)."""
    task = tagging_task()
    fairseq_model, _, _ = build_tagging(
        ["--arch", "cogs_tagging_tuned", "--tagging-init", "fairseq"], task
    )
    official, args, _ = build_tagging(
        ["--arch", "cogs_tagging_tuned", "--tagging-init", "official"], task
    )
    assert args.tagging_init == "official"
    assert_keras_defaults(official.encoder.embed_tokens, official.tag_heads.values())
    d = official.encoder.embed_tokens.embedding_dim
    assert embedding_std(fairseq_model.encoder.embed_tokens) == pytest.approx(d**-0.5, rel=0.5)
    # The encoder's own layers are initialised as with fairseq's init (same seed, same values).
    a = dict(fairseq_model.encoder.layers.named_parameters())
    b = dict(official.encoder.layers.named_parameters())
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    "arch, init",
    [
        ("cogs_tagging_tuned", "official"),
        ("cogs_tagging_base", "official"),
        ("cogs_tagging_rel_eb", "fairseq"),
        ("cogs_tagging_rel_eb_s", "fairseq"),
        ("tagging_transformer", "fairseq"),
    ],
)
def test_the_notebooks_models_default_to_the_notebooks_init(arch, init):
    """The notebook's base and tuned models reproduce Table 5 with its initialisation, so it is
    their default; the grid's tagging twins and the plain architecture keep fairseq's."""
    task = tagging_task()
    model, args, _ = build_tagging(["--arch", arch], task)
    assert args.tagging_init == init
    if init == "official":
        assert_keras_defaults(model.encoder.embed_tokens, model.tag_heads.values())
    else:
        d = model.encoder.embed_tokens.embedding_dim
        assert embedding_std(model.encoder.embed_tokens) == pytest.approx(d**-0.5, rel=0.5)
    _, args, _ = build_tagging(["--arch", arch, "--tagging-init", "fairseq"], task)
    assert args.tagging_init == "fairseq"


def test_tagging_model_refuses_the_copy_decoder():
    from plugin_tools.errors import PluginConfigError

    with pytest.raises(PluginConfigError, match="--copy-decoder"):
        build_tagging(["--arch", "cogs_tagging_base", "--copy-decoder"])


@pytest.mark.parametrize(
    "arch",
    [
        ["--arch", "cogs_tagging_base"],
        ["--arch", "cogs_tagging_tuned", "--rel-pos-radius", "3"],
        ["--arch", "cogs_tagging_rel_eb_s", "--parent-head", "relative"],
        ["--arch", "cogs_tagging_tuned", "--attention-type", "compositional"],
    ],
    ids=["base", "tuned", "rel-eb-s-relative", "tuned-compositional"],
)
def test_outputs_are_padding_invariant(arch):
    model, _, task = build_tagging(arch + TAGGING_TINY)
    model = randomize(model, std=0.3).eval()
    sample = sample_for(task, [(COGS_E0, E0_LF), (COGS_E2, E2_LF)])
    src = sample["net_input"]["src_tokens"]
    assert src[0, 8:].eq(task.source_dictionary.pad()).all()  # COGS_E0 right-padded to 12
    with torch.no_grad():
        batched = model(**sample["net_input"])
        alone = model(src[:1, :8], sample["net_input"]["src_lengths"][:1])
    for row in ("parent", "role", "category", "noun_type", "verb_name"):
        b = batched[row][:1, :8]
        if row == "parent" and b.size(-1) == 12:  # attention head: keys are positions
            assert torch.softmax(b, -1)[..., 8:].max() < 1e-30
            b = b[..., :8]
        torch.testing.assert_close(b, alone[row], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["absolute", "relative", "attention"])
def test_criterion_is_the_sum_of_five_cross_entropies(kind):
    from fairseq_plugins.criterions.cogs_tagging import CogsTaggingCriterion

    model, _, task = build_tagging(
        ["--arch", "cogs_tagging_base", "--parent-head", kind] + TAGGING_TINY
    )
    model = randomize(model, std=0.3).train()
    sample = sample_for(task, [(COGS_E0, E0_LF), (COGS_E2, E2_LF)])
    criterion = CogsTaggingCriterion(task)
    torch.manual_seed(3)
    loss, sample_size, log = criterion(model, sample)
    torch.manual_seed(3)  # same dropout (none: --dropout 0) and same forward
    out = model(**sample["net_input"])
    # by hand: official classes, -log softmax at the target, summed over real tokens and heads
    hand = 0.0
    L = task.longest
    for b, (sentence, lf) in enumerate([(COGS_E0, E0_LF), (COGS_E2, E2_LF)]):
        tags = ct.lf_to_tags(sentence, lf)
        strings = ct.tags_to_strings(tags)
        for i, p in enumerate(tags.parent):
            if kind == "absolute":
                cls = p + 2
            elif kind == "relative":
                cls = (0 if p == -1 else p - i) + L
            else:
                cls = i if p == -1 else p
            hand -= torch.log_softmax(out["parent"][b, i], -1)[cls].item()
            for row in ("role", "category", "noun_type", "verb_name"):
                idx = task.tag_dicts[row].index(strings[row][i])
                hand -= torch.log_softmax(out[row][b, i], -1)[idx].item()
    assert sample_size == len(COGS_E0.split()) + len(COGS_E2.split()) == sample["ntokens"]
    assert loss.item() == pytest.approx(hand, rel=1e-5)
    assert sum(log[f"loss_{r}"].item() for r in ct.Tags._fields) == pytest.approx(loss.item())
    assert "_scored" not in log  # metrics only in evaluation
    model.eval()
    _, _, log = criterion(model, sample)
    assert log["_scored"] == 2


# ------------------------------------------------------------------------------- the metrics


def test_task_scores_tags_and_logical_forms_separately():
    _, _, task = build_tagging(["--arch", "cogs_tagging_base"] + TAGGING_TINY)
    sample = sample_for(task, [(COGS_E0, E0_LF), (COGS_E2, E2_LF)])
    gold = {k: v.clone() for k, v in sample["target"].items()}
    gold["parent"] = gold["parent"].masked_fill(gold["parent"] == -100, -1)
    score = task.score
    assert [(t, lf) for _, t, lf in score(sample, gold)] == [(True, True), (True, True)]
    wrong = {k: v.clone() for k, v in gold.items()}
    # category is not used to rebuild the LF: tags wrong, LF right
    wrong["category"][0, 1] = task.tag_dicts["category"].index("VERB")
    # a wrong verb name breaks both
    wrong["verb_name"][1, 2] = task.tag_dicts["verb_name"].index("help")
    assert [(t, lf) for _, t, lf in score(sample, wrong)] == [(False, True), (False, False)]
    # a parent outside the sentence: wrong, no exception
    wrong = {k: v.clone() for k, v in gold.items()}
    wrong["parent"][0, 1] = INVALID_PARENT
    assert [(t, lf) for _, t, lf in score(sample, wrong)][0] == (False, False)


def test_scores_per_category():
    records = [("a", True, True), ("b", False, True), ("a", False, False), ("b", True, True)]
    records += [("c", False, False)]
    s = score_tagging(records)
    assert (s["total"], s["correct"], s["lf_correct"]) == (5, 2, 3)
    assert s["accuracy"] == pytest.approx(0.4) and s["lf_accuracy"] == pytest.approx(0.6)
    assert list(s["categories"]) == ["a", "b", "c"]
    assert s["categories"]["a"] == {
        "accuracy": 0.5,
        "lf_accuracy": 0.5,
        "correct": 1,
        "lf_correct": 1,
        "total": 2,
    }
    assert s["categories"]["b"]["lf_accuracy"] == 1.0 and s["categories"]["c"]["accuracy"] == 0
    table = format_table(s).splitlines()
    assert table[-1].split() == ["all", "5", "0.4000", "0.6000"]
    with pytest.raises(ValueError):
        score_tagging([])


# ------------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_fairseq_train_validate_and_predict(tiny_tags, tmp_path):
    save = tmp_path / "ckpt"
    train = fairseq_train(
        tiny_tags,
        save,
        ["--task", "cogs_tagging", "--criterion", "cogs_tagging", "--arch", "cogs_tagging_tuned"]
        + ["--optimizer", "adam", "--lr", "3e-3", "--batch-size", "32", "--max-update", "6"]
        + ["--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--cpu"]
        + ["--no-progress-bar", "--log-format", "simple", "--no-epoch-checkpoints"]
        + ["--best-checkpoint-metric", "accuracy", "--maximize-best-checkpoint-metric"],
    )
    log = train.stdout + train.stderr
    assert re.search(r"valid on 'valid' subset .*\| accuracy [\d.]+ \| lf_accuracy [\d.]+", log)
    assert (save / "checkpoint_best.pt").is_file()
    val = fairseq_tool(
        "fairseq-validate",
        tiny_tags,
        ["--task", "cogs_tagging", "--path", save / "checkpoint_best.pt", "--valid-subset", "test"]
        + ["--cpu", "--batch-size", "16"],
    )
    assert re.search(r"\| accuracy [\d.]+ \| lf_accuracy [\d.]+", val.stdout + val.stderr)
    out = tmp_path / "pred"
    pred = run(
        [sys.executable, ROOT / "scripts" / "cogs-tagging-predict.py", tiny_tags]
        + [save / "checkpoint_best.pt", "--outdir", out, "--cpu", "--batch-size", "16"]
    )
    gen_cats = (tiny_tags / "gen.category").read_text().split()
    scores = json.loads((out / "gen.scores.json").read_text())
    assert scores["total"] == 60 and list(scores["categories"]) == list(dict.fromkeys(gen_cats))
    assert sum(c["total"] for c in scores["categories"].values()) == 60
    for cat in set(gen_cats):
        assert re.search(rf"^gen\t{re.escape(cat)} +\d+ +[\d.]+ +[\d.]+$", pred.stdout, re.M)
    assert re.search(
        r"^test: accuracy [\d.]+ lf_accuracy [\d.]+ \(40 sentences\)$", pred.stdout, re.M
    )
    lines = (out / "test.pred.tsv").read_text().splitlines()
    assert len(lines) == 40 and [line.split("\t")[0] for line in lines] == [
        str(i) for i in range(40)
    ]
    assert all(len(line.split("\t")) == 10 for line in lines)


@pytest.mark.slow
def test_one_line_errors(tiny_tags, tmp_path):
    bad = fairseq_train(
        tiny_tags,
        tmp_path / "x",
        ["--task", "cogs_tagging", "--criterion", "cogs_tagging", "--arch", "cogs_tagging_base"]
        + ["--copy-decoder", "--cpu", "--max-update", "1", "--batch-size", "8"],
        check=False,
    )
    assert bad.returncode != 0
    assert "fairseq_plugins: error: --copy-decoder: the tagging model has no decoder" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = run(
        [sys.executable, ROOT / "scripts" / "cogs-tagging-predict.py", tiny_tags]
        + [tmp_path / "none.pt"],
        check=False,
    )
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == (
        f"cogs-tagging-predict: {tmp_path / 'none.pt'}: no such checkpoint"
    )
    helped = run([sys.executable, ROOT / "scripts" / "cogs-tagging-predict.py", "--help"])
    assert "lf_accuracy" in helped.stdout
    no_data = fairseq_train(
        tmp_path / "nothing",
        tmp_path / "y",
        ["--task", "cogs_tagging", "--criterion", "cogs_tagging", "--arch", "cogs_tagging_base"]
        + ["--cpu", "--batch-size", "8"],
        check=False,
    )
    assert no_data.stderr.strip().splitlines()[-1] == (
        f"fairseq_plugins: error: {tmp_path / 'nothing' / 'meta.json'}: no such file "
        "(run scripts/cogs-tags.py)"
    )


def test_run_script_help_and_bad_arguments():
    script = ROOT / "scripts" / "cogs-tagging-run.sh"
    helped = run(["bash", script, "--help"])
    assert "cogs_tagging_tuned" in helped.stdout and "lf_accuracy" in helped.stdout
    bad = run(["bash", script, "--parent-head", "sideways"], check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "cogs-tagging-run.sh: --parent-head sideways: choose from absolute, relative, attention"
    )
    bad = run(["bash", script, "compgen_abs", "--max-update", "1"], check=False)
    assert bad.returncode == 2 and "unknown tagging --arch compgen_abs" in bad.stderr


# ------------------------------------------------------------ the grid's tagging column


def grid_tagging():
    """{row: (tagging arch, options)} and {row: seq2seq extra options} of the grid's plan."""
    from studies import grid_plan, grid_report

    rows = {  # the rows that run the tagging column
        r.preset: " ".join(r.extra)
        for r in grid_plan.ROWS
        if grid_plan.runs_column(r, grid_plan.TAGGING_TASK)
    }
    return grid_report.tagging_plan(), rows


def seq2seq_encoder(arch_args):
    from fairseq_plugins.models.variant_transformer import VariantTransformerModel

    args = parse_training_args("translation", arch_args)
    src = tagging_task().source_dictionary
    task = SimpleNamespace(source_dictionary=src, target_dictionary=src)
    return VariantTransformerModel.build_model(args, task).encoder


def test_grid_tagging_models_have_the_rows_encoders():
    """Every grid row's tagging model (compgen-grid.sh TAGGING) has the row's encoder, module by
    module; the rows that borrow another row's tagging run have that row's encoder too."""
    tagging, rows = grid_tagging()
    # The paper-budget rows are tagging models themselves (the row is the tagging --arch).
    paper_rows = {"cogs_tagging_tuned", "cogs_tagging_base", "cogs_tagging_tuned_comp"}
    assert set(tagging) == set(rows) | paper_rows
    for row in paper_rows - {"cogs_tagging_tuned_comp"}:
        assert tagging[row] == (row, "")
    assert tagging["cogs_tagging_tuned_comp"][0] == "cogs_tagging_tuned"
    for row, (arch, extra) in tagging.items():
        if row in paper_rows:
            continue
        source = arch[1:] if arch.startswith("=") else row
        arch, extra = tagging[source]
        tagger, args, _ = build_tagging(["--arch", arch] + extra.split())
        encoder = seq2seq_encoder(["--arch", row] + rows[row].split())
        assert str(tagger.encoder) == str(encoder), row
        shapes = [(n, tuple(p.shape)) for n, p in tagger.encoder.named_parameters()]
        assert shapes == [(n, tuple(p.shape)) for n, p in encoder.named_parameters()], row
        if arch in ("cogs_tagging_base", "cogs_tagging_rel_eb", "cogs_tagging_rel_eb_s"):
            assert args.parent_head == "absolute"  # Table 5's / the notebook's base head
    assert tagging["compgen_rel2_eb"][0] == tagging["compgen_rel2_eb_c"][0] == "=compgen_rel_eb"


@pytest.mark.slow
def test_grid_row_run_records_one_grid_line_and_resumes(cogs_data, tmp_path):
    """cogs-tagging-run.sh --grid-row --resume, as compgen-grid.sh calls it, on slices of COGS."""
    import gzip

    raw = tmp_path / "raw"
    raw.mkdir()
    for name, n in (("train", 200), ("dev", 20), ("test", 20)):
        lines = (cogs_data / f"{name}.tsv").read_text().splitlines()[:n]
        (raw / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    with gzip.open(cogs_data / "gen.tsv.gz", "rt") as f:
        (raw / "gen.tsv").write_text("\n".join(f.read().splitlines()[::525][:40]) + "\n")
    out = tmp_path / "out"
    opts = ["--cpu", *TAGGING_TINY, "--save-interval-updates", "2", "--keep-interval-updates", "1"]
    opts += ["--save-interval", "1000000", "--validate-interval", "1000000", "--log-interval", "1"]

    def tag_run(csv_path, updates=4):
        return run(
            ["bash", ROOT / "scripts" / "cogs-tagging-run.sh", "cogs_tagging_base"]
            + ["--grid-row", "compgen_abs", "--seed", "1", "--resume", "--max-update", updates]
            + ["--raw-dir", raw, "--out", out, "--csv", csv_path, "--", *opts]
        )

    def rows(csv_path):
        import csv

        with open(csv_path, newline="") as f:
            return list(csv.DictReader(f))

    first = tmp_path / "a.csv"
    tag_run(first)
    (row,) = rows(first)
    run_dir = out / "runs" / "compgen_abs" / "seed1"
    gen = json.loads((run_dir / "pred" / "gen.scores.json").read_text())
    assert list(row) == (
        "preset,task,seed,updates,accuracy,wall_seconds,date,split,n_test,n_train,beam,"
        "extra_args,threads,cpu_seconds,checkpoint,accuracy_best,accuracy_last"
    ).split(",")
    assert (row["checkpoint"], row["accuracy_best"], row["accuracy_last"]) == (
        "best",
        row["accuracy"],
        "",
    )
    assert [row[k] for k in ("preset", "task", "seed", "updates", "split", "n_test")] == [
        "compgen_abs",
        "cogs-tagging",
        "1",
        "4",
        "gen",
        "40",
    ]
    assert row["n_train"] == "200" and row["beam"] == "" and row["threads"] == "1"
    assert row["extra_args"] == "--arch cogs_tagging_base " + " ".join(map(str, opts))
    assert float(row["accuracy"]) == round(gen["accuracy"], 6)
    assert float(row["cpu_seconds"]) > 0 and float(row["wall_seconds"]) > 0
    assert sum(c["total"] for c in gen["categories"].values()) == 40
    # Recorded: skipped. Finished but not in the CSV: only evaluated.
    again = tag_run(first)
    assert "already in" in again.stderr and len(rows(first)) == 1
    log_size = (run_dir / "train.log").stat().st_size
    second = tmp_path / "b.csv"
    evaluated = tag_run(second)
    assert "training already finished, evaluating" in evaluated.stderr
    assert (run_dir / "train.log").stat().st_size == log_size
    assert len(rows(second)) == 1 and len((run_dir / "wall.pieces").read_text().split()) == 2
    # Interrupted (no .trained): continues from checkpoint_last.pt.
    (run_dir / ".trained").unlink()
    third = tmp_path / "c.csv"
    resumed = tag_run(third, updates=6)
    assert "resuming from" in resumed.stderr
    assert "Loaded checkpoint" in (run_dir / "train.log").read_text()
    assert rows(third)[0]["updates"] == "6"


@pytest.mark.slow
def test_paper_budget_epochs_and_final_checkpoint(cogs_data, tmp_path):
    """--epochs N trains N * floor(n_train / 64) updates; --report-checkpoint last evaluates the
    final checkpoint too and records it as the accuracy, the best one beside it."""
    import csv

    raw = tmp_path / "raw"
    raw.mkdir()
    for name, n in (("train", 200), ("dev", 20), ("test", 20), ("gen", 20)):
        src = cogs_data / ("test.tsv" if name == "gen" else f"{name}.tsv")
        lines = src.read_text().splitlines()[:n]
        (raw / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    out, results = tmp_path / "out", tmp_path / "r.csv"
    opts = ["--cpu", *TAGGING_TINY, "--validate-interval-updates", "3", "--log-interval", "1"]
    proc = run(
        ["bash", ROOT / "scripts" / "cogs-tagging-run.sh", "cogs_tagging_base", "--grid-row", "x"]
        + ["--epochs", "2", "--report-checkpoint", "last", "--raw-dir", raw, "--out", out]
        + ["--csv", results, "--", *opts]
    )
    (row,) = list(csv.DictReader(results.open()))
    assert row["updates"] == str(2 * (200 // 64)) == "6"
    run_dir = out / "runs" / "x" / "seed1"
    best = json.loads((run_dir / "pred" / "gen.scores.json").read_text())["accuracy"]
    last = json.loads((run_dir / "pred-last" / "gen.scores.json").read_text())["accuracy"]
    assert row["checkpoint"] == "last"
    assert float(row["accuracy"]) == float(row["accuracy_last"]) == round(last, 6)
    assert float(row["accuracy_best"]) == round(best, 6)
    assert "best checkpoint, gen:" in proc.stderr and "last checkpoint, gen:" in proc.stderr
    bad = run(
        ["bash", ROOT / "scripts" / "cogs-tagging-run.sh", "--report-checkpoint", "middle"],
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "cogs-tagging-run.sh: --report-checkpoint middle: choose best or last"
    )
