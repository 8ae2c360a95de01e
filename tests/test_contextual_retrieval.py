"""The Contextual Retrieval Task (Mittal et al.; docs/contextual-retrieval-task.md): the generator
against a plain re-statement of section 1, the model against a float64 re-statement of section 2,
compositional attention forced to the identity pairing against multi-head attention, and
fairseq-train / fairseq-validate end to end."""

import itertools
import math

import numpy as np
import pytest
import torch
from conftest import ROOT, fairseq_tool, fairseq_train, run

from fairseq_plugins.data import contextual_retrieval as cr
from fairseq_plugins.models.contextual_retrieval import (
    ContextualRetrievalModel,
    ContextualRetrievalModelConfig,
    joint_output_init,
)
from fairseq_plugins.tasks.contextual_retrieval import (
    ContextualRetrievalConfig,
    ContextualRetrievalTask,
)
from plugin_tools.errors import PluginConfigError

SETTINGS = [(2, 4), (4, 8), (4, 16)]


# -- data ------------------------------------------------------------------------------------------
def restated_targets(tokens, setting):
    """Section 1.2-1.4 with loops, from the tokens alone: (targets, preferences, partners)."""
    S, R = setting.searches, setting.retrievals
    B, n, _ = tokens.shape
    x, z = tokens[..., :S], tokens[..., S : S + R]
    onehots = tokens[..., S + R :].reshape(B, n, S, R)
    assert np.all(onehots.sum(-1) == 1)
    prefs = onehots.argmax(-1)
    alpha = [1.0] * S if setting.no_coeff else cr.ALPHA[:S]
    targets = np.zeros((B, n))
    partners = np.zeros((B, n, S), dtype=np.int64)
    for b, i, s in itertools.product(range(B), range(n), range(S)):
        others = [j for j in range(n) if j != i]
        j = min(others, key=lambda j: abs(x[b, j, s] - x[b, i, s]))
        partners[b, i, s] = j
        targets[b, i] += alpha[s] * z[b, j, prefs[b, i, s]]
    return targets, prefs, partners


@pytest.mark.parametrize("searches,retrievals", SETTINGS)
@pytest.mark.parametrize("ood,held_out", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("no_coeff", [False, True])
def test_generator_matches_the_restated_specification(
    searches, retrievals, ood, held_out, no_coeff
):
    setting = cr.RetrievalSetting(searches, retrievals, no_coeff=no_coeff)
    batch = cr.generate(np.random.RandomState(3), setting, 6, ood=ood, held_out=held_out)
    assert batch.tokens.shape == (6, 10, setting.token_dim)
    targets, prefs, partners = restated_targets(batch.tokens, setting)
    np.testing.assert_allclose(batch.targets, targets, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(batch.preferences, prefs)
    np.testing.assert_array_equal(batch.partners, partners)
    if ood:  # every object's whole tuple is from its side of the split
        train, test = cr.ood_split(setting)
        allowed = {tuple(t) for t in (test if held_out else train)}
        assert {tuple(p) for p in prefs.reshape(-1, searches)} <= allowed


def test_draws_follow_the_official_order():
    """i.i.d.: randn(B, n, S*+R*) then choice(R*, B n S*); OoD: randn, choice(|train|, B n),
    choice(|test|, B n), both index draws whichever split (section 1.7)."""
    setting = cr.RetrievalSetting(2, 4)
    rng = np.random.RandomState(11)
    features, prefs = rng.randn(5, 10, 6), rng.choice(4, 5 * 10 * 2)
    batch = cr.generate(np.random.RandomState(11), setting, 5)
    np.testing.assert_array_equal(batch.tokens[..., :6], features)
    np.testing.assert_array_equal(batch.preferences.reshape(-1), prefs)

    train, test = cr.ood_split(setting)
    rng = np.random.RandomState(11)
    features, train_pick, test_pick = rng.randn(5, 10, 6), rng.choice(12, 50), rng.choice(4, 50)
    for held_out, tuples in ((False, train[train_pick]), (True, test[test_pick])):
        batch = cr.generate(np.random.RandomState(11), setting, 5, ood=True, held_out=held_out)
        np.testing.assert_array_equal(batch.tokens[..., :6], features)
        np.testing.assert_array_equal(batch.preferences.reshape(-1, 2), tuples)


def test_ood_split_is_the_documented_one():
    train, test = cr.ood_split(cr.RetrievalSetting(2, 4))
    assert test.tolist() == [[2, 1], [2, 3], [3, 1], [3, 3]]
    assert len(train) == 12 and not {tuple(t) for t in train} & {tuple(t) for t in test}
    # every single (search, retrieval) pair is seen in training; only combinations are new
    assert all({t[s] for t in train.tolist()} == set(range(4)) for s in range(2))
    for (searches, retrievals), sizes, first in [
        ((4, 8), (3276, 820), [4, 6, 3, 1]),
        ((4, 16), (52428, 13108), [9, 9, 9, 9]),
    ]:
        train, test = cr.ood_split(cr.RetrievalSetting(searches, retrievals))
        assert (len(train), len(test)) == sizes and test[0].tolist() == first
        assert np.all(test[:, 3] % 2 == 1)


@pytest.mark.parametrize("setting,mean_abs", [((2, 4), 0.755), ((4, 8), 1.03), ((4, 16), 1.03)])
def test_target_statistics(setting, mean_abs):
    """The L1 of predicting 0 (section 1.7's table): the baseline every model must beat."""
    batch = cr.generate(np.random.RandomState(0), cr.RetrievalSetting(*setting), 2000)
    assert abs(np.abs(batch.targets).mean() - mean_abs) < 0.02


@pytest.mark.parametrize(
    "kwargs,flag",
    [
        (dict(searches=26, retrievals=4), "--gt-searches"),
        (dict(searches=0, retrievals=4), "--gt-searches"),
        (dict(searches=2, retrievals=0), "--gt-retrievals"),
        (dict(searches=2, retrievals=4, objects=1), "--num-objects"),
    ],
)
def test_bad_settings_name_their_flag(kwargs, flag):
    with pytest.raises(cr.RetrievalSettingError, match=f"^{flag}"):
        cr.RetrievalSetting(**kwargs)


# -- task --------------------------------------------------------------------------------------------
def make_task(searches=2, retrievals=4, batch_size=8, **kwargs):
    cfg = ContextualRetrievalConfig(
        gt_searches=searches,
        gt_retrievals=retrievals,
        seed=kwargs.pop("seed", 1),
        batch_size=batch_size,
        **{"epoch_batches": 3, "valid_batches": 2, **kwargs},
    )
    return ContextualRetrievalTask.setup_task(cfg)


def batches(task, split, epoch=1):
    task.load_dataset(split, epoch=epoch)
    dataset = task.dataset(split)
    size = task.cfg.batch_size
    return [
        dataset.collater([dataset[i] for i in range(k * size, (k + 1) * size)])
        for k in range(len(dataset) // size)
    ]


def test_batches_are_the_generators_and_fixed_by_the_seed():
    task = make_task(ood=True)
    train = batches(task, "train", epoch=2)
    for k, sample in enumerate(train):
        rng = np.random.RandomState([1, 0, 2, k])  # (seed, split, epoch, batch)
        expected = cr.generate(rng, task.setting, 8, ood=True)
        torch.testing.assert_close(
            sample["net_input"]["tokens"].double(), torch.tensor(expected.tokens).float().double()
        )
        torch.testing.assert_close(sample["target"], torch.tensor(expected.targets).float())
    again = batches(make_task(ood=True), "train", epoch=2)
    assert all(torch.equal(a["target"], b["target"]) for a, b in zip(train, again))
    other_epoch = batches(task, "train", epoch=3)
    assert not torch.equal(train[0]["target"], other_epoch[0]["target"])
    # evaluation sets: the same at every epoch, different per seed; 'ood' holds held-out tuples
    for split in ("valid", "ood"):
        first, later = batches(task, split, 1), batches(task, split, 5)
        assert all(torch.equal(a["target"], b["target"]) for a, b in zip(first, later))
        other_seed = batches(make_task(ood=True, seed=2), split)
        assert not torch.equal(first[0]["target"], other_seed[0]["target"])
    held_out = {tuple(t) for t in cr.ood_split(task.setting)[1].tolist()}
    prefs = torch.cat([b["preferences"] for b in batches(task, "ood")]).view(-1, 2).tolist()
    assert {tuple(p) for p in prefs} <= held_out


def test_fresh_valid_draws_new_batches_at_every_validation():
    """--fresh-valid (the authors' evaluation): batch b of the evaluation at training epoch e is
    the generator's from (seed, split, e, b), new at every epoch; 'ood' keeps to held-out tuples."""
    task = make_task(ood=True, fresh_valid=True)
    for split in ("valid", "ood"):
        task.load_dataset(split)
    seen = {}
    for epoch in (1, 2, 3):
        task.begin_valid_epoch(epoch, model=None)
        for split, stream in (("valid", 1), ("ood", 2)):
            dataset = task.dataset(split)
            for k in range(task.cfg.valid_batches):
                got = dataset.collater([dataset[i] for i in range(k * 8, (k + 1) * 8)])
                rng = np.random.RandomState([1, stream, epoch, k])
                expected = cr.generate(rng, task.setting, 8, True, split == "ood")
                torch.testing.assert_close(got["target"], torch.tensor(expected.targets).float())
            seen[split, epoch] = got["target"]
    assert not torch.equal(seen["valid", 1], seen["valid", 2])
    assert not torch.equal(seen["ood", 2], seen["ood", 3])
    fixed = make_task(ood=True)  # default: begin_valid_epoch does not change the fixed sets
    first = batches(fixed, "valid")[0]["target"]
    fixed.begin_valid_epoch(4, model=None)
    dataset = fixed.dataset("valid")
    assert torch.equal(dataset.collater([dataset[i] for i in range(8)])["target"], first)


def test_task_errors_name_their_flag():
    with pytest.raises(PluginConfigError, match="^--batch-size is required"):
        make_task(batch_size=None)
    with pytest.raises(PluginConfigError, match="^--gt-retrievals must be >= 1"):
        make_task(retrievals=0)
    with pytest.raises(PluginConfigError, match="^--epoch-batches must be >= 1"):
        make_task(epoch_batches=0)
    with pytest.raises(PluginConfigError, match="needs --ood"):
        make_task().load_dataset("ood")


# -- model -------------------------------------------------------------------------------------------
def make_model(task, **kwargs):
    return ContextualRetrievalModel.build_model(ContextualRetrievalModelConfig(**kwargs), task)


def restated_forward(model, tokens):
    """Section 2.1-2.5 in float64 with loops over heads / searches and retrievals, the official
    output projection W_o [o_0; ...; o_{H-1}; e] + b_o assembled from the model's weights."""

    def lin(layer, x, lo=None, hi=None):
        bias = layer.bias[lo:hi] if layer.bias is not None else 0
        return x @ layer.weight[lo:hi].T + bias

    relu = torch.relu
    h = lin(model.encoder[2], relu(lin(model.encoder[0], tokens)))
    att = model.attention
    n = tokens.size(1)
    diag = torch.eye(n, dtype=torch.bool)
    compositional = hasattr(att, "num_retrievals")
    d = h.size(-1)
    heads = att.num_searches if compositional else att.num_heads
    dk, dr = d // heads, d // (att.num_retrievals if compositional else heads)
    parts = []
    for a in range(heads):
        q = lin(att.q_proj, h, a * dk, (a + 1) * dk)
        k = lin(att.k_proj, h, a * dk, (a + 1) * dk)
        logits = (q @ k.transpose(1, 2) / math.sqrt(dk)).masked_fill(diag, float("-inf"))
        A = torch.softmax(logits, -1)
        if not compositional:
            parts.append(A @ lin(att.v_proj, h, a * dr, (a + 1) * dr))
            continue
        O = [A @ lin(att.v_proj, h, r * dr, (r + 1) * dr) for r in range(att.num_retrievals)]
        qbar = lin(att.retrieval_query_proj, h, a * dk, (a + 1) * dk)
        scores = torch.stack(
            [(qbar * lin(att.retrieval_key_proj, o)).sum(-1) / math.sqrt(dk) for o in O], -1
        )
        c = torch.softmax(scores, -1)
        parts.append(sum(c[..., r : r + 1] * O[r] for r in range(len(O))))
    parts.append(lin(model.extra_value, h))
    w_o = torch.cat([att.out_proj.weight, model.extra_value_out.weight], dim=1)
    m = torch.cat(parts, -1) @ w_o.T + att.out_proj.bias
    return lin(model.decoder[2], relu(lin(model.decoder[0], m))).squeeze(-1)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(attention_type="multihead", encoder_attention_heads=8),
        dict(attention_type="multihead", encoder_attention_heads=2),
        dict(attention_type="compositional", num_searches=2, num_retrievals=4),
        dict(attention_type="compositional", num_searches=4, num_retrievals=2),
    ],
)
def test_forward_matches_the_restated_model_in_float64(kwargs):
    torch.manual_seed(0)
    task = make_task()
    model = make_model(task, encoder_embed_dim=64, **kwargs).double()
    tokens = batches(task, "valid")[0]["net_input"]["tokens"].double()
    with torch.no_grad():
        torch.testing.assert_close(
            model(tokens), restated_forward(model, tokens), rtol=1e-10, atol=1e-10
        )


# The official parameter counts (section 2.7), which the official Model prints.
@pytest.mark.parametrize(
    "setting,d,kwargs,count",
    [
        ((2, 4), 64, dict(attention_type="multihead", encoder_attention_heads=8), 27017),
        ((2, 4), 64, dict(attention_type="multihead", encoder_attention_heads=2), 30113),
        ((2, 4), 64, dict(attention_type="compositional", num_searches=2, num_retrievals=4), 30705),
        ((2, 4), 32, dict(attention_type="compositional", num_searches=2, num_retrievals=2), 9217),
        (
            (4, 8),
            128,
            dict(attention_type="compositional", num_searches=4, num_retrievals=8),
            117937,
        ),
        (
            (4, 16),
            32,
            dict(attention_type="compositional", num_searches=4, num_retrievals=16),
            9531,
        ),
        ((4, 16), 64, dict(attention_type="multihead", encoder_attention_heads=16), 30981),
    ],
)
def test_parameter_counts_are_the_officials(setting, d, kwargs, count):
    model = make_model(make_task(*setting), encoder_embed_dim=d, **kwargs)
    assert sum(p.numel() for p in model.parameters()) == count


def test_identity_pairing_equals_multihead_attention():
    """S = R = h with the value scores forced to the identity (search a reads retrieval a): the
    compositional model is the multi-head model with the same weights."""
    torch.manual_seed(1)
    task = make_task()
    comp = make_model(task, attention_type="compositional", num_searches=4, num_retrievals=4)
    mha = make_model(task, attention_type="multihead", encoder_attention_heads=4)
    shared = {k: v for k, v in comp.state_dict().items() if k in mha.state_dict()}
    assert set(shared) == set(mha.state_dict())
    mha.load_state_dict(shared)

    def identity(pairs, query):
        bsz, searches, length, retrievals, _ = pairs.shape
        return torch.eye(searches).view(1, searches, 1, retrievals).expand(bsz, -1, length, -1)

    comp.attention.value_scores_override = identity
    tokens = batches(task, "valid")[0]["net_input"]["tokens"]
    torch.testing.assert_close(comp(tokens), mha(tokens), rtol=1e-5, atol=1e-6)
    comp.attention.value_scores_override = None
    assert not torch.allclose(comp(tokens), mha(tokens), atol=1e-3)  # the learned scores differ


@pytest.mark.parametrize("attention_type", ["multihead", "compositional"])
def test_set_model_is_permutation_equivariant_and_batch_independent(attention_type):
    """No positions: permuting the objects permutes the predictions; an example's predictions do
    not depend on the other examples of its batch (the analogue of padding invariance: no padding
    exists in this task)."""
    torch.manual_seed(2)
    task = make_task()
    model = make_model(task, attention_type=attention_type).eval()
    tokens = batches(task, "valid")[0]["net_input"]["tokens"]
    out = model(tokens)
    perm = torch.randperm(tokens.size(1))
    torch.testing.assert_close(model(tokens[:, perm]), out[:, perm], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model(tokens[2:3]), out[2:3], rtol=1e-5, atol=1e-6)


def test_joint_output_init_is_the_authors_single_linear():
    """joint_output_init draws [W_heads | W_oe] and b_o exactly as one nn.Linear over the
    concatenated input under the same RNG state (the authors' W_o)."""
    heads, extra = torch.nn.Linear(48, 64), torch.nn.Linear(16, 64, bias=False)
    torch.manual_seed(5)
    joint_output_init(heads, extra)
    torch.manual_seed(5)
    reference = torch.nn.Linear(64, 64)
    torch.testing.assert_close(torch.cat([heads.weight, extra.weight], 1), reference.weight)
    torch.testing.assert_close(heads.bias, reference.bias)


@pytest.mark.parametrize(
    "kwargs,fan_in",
    [
        (dict(attention_type="multihead", encoder_attention_heads=8), 64 + 8),
        (dict(attention_type="compositional", num_searches=2, num_retrievals=4), 2 * 16 + 16),
    ],
)
def test_output_projection_bounds_are_the_joint_linears_by_default(kwargs, fan_in):
    """Default (joint): every entry of W_o, W_oe and b_o within 1/sqrt((S+1) d_v), the bound
    reached (uniform draws); ``separate`` draws W_oe within 1/sqrt(d_v), wider."""
    torch.manual_seed(0)
    task = make_task()
    bound = fan_in**-0.5
    model = make_model(task, encoder_embed_dim=64, **kwargs)
    parts = [model.attention.out_proj.weight, model.extra_value_out.weight]
    parts.append(model.attention.out_proj.bias)
    for part in parts:
        assert part.abs().max() <= bound
    assert torch.cat([p.flatten() for p in parts]).abs().max() > 0.99 * bound
    separate = make_model(task, encoder_embed_dim=64, output_proj_init="separate", **kwargs)
    assert separate.extra_value_out.weight.abs().max() > 1.5 * bound


def test_gumbel_search_reaches_the_model():
    """--retrieval-gumbel --retrieval-gumbel-search (the authors' --gumbel in this model: both
    softmaxes): noisy in training, deterministic at evaluation; the module's equations are
    checked against the re-statement in test_compositional_attention.py."""
    torch.manual_seed(3)
    task = make_task()
    kwargs = dict(attention_type="compositional", num_searches=2, num_retrievals=4)
    model = make_model(task, retrieval_gumbel=True, retrieval_gumbel_search=True, **kwargs)
    assert model.attention.gumbel and model.attention.gumbel_search
    tokens = batches(task, "valid")[0]["net_input"]["tokens"]
    attention = model.attention
    real_gumbel = attention.sample_gumbel
    attention.sample_search_gumbel = real_gumbel
    attention.sample_gumbel = torch.zeros_like  # no retrieval noise: what differs is the search's
    with torch.no_grad():
        evaluated = model.eval()(tokens)
        assert not torch.allclose(model.train()(tokens), evaluated)
        attention.gumbel_search = False
        torch.testing.assert_close(model(tokens), evaluated)


def test_model_errors_name_their_flag():
    task = make_task()
    with pytest.raises(PluginConfigError, match="^--num-retrievals must be >= 1"):
        make_model(task, attention_type="compositional", num_retrievals=0)
    with pytest.raises(PluginConfigError, match="^--num-searches 3 .*--encoder-embed-dim"):
        make_model(task, attention_type="compositional", num_searches=3)
    with pytest.raises(PluginConfigError, match="--retrieval-gumbel-search needs"):
        make_model(task, attention_type="compositional", retrieval_gumbel_search=True)
    with pytest.raises(PluginConfigError, match="--encoder-attention-heads 5"):
        make_model(task, attention_type="multihead", encoder_attention_heads=5)


# -- fairseq's own tools -----------------------------------------------------------------------------
def train_retrieval(save, *extra, **kwargs):
    """fairseq-train of a tiny Contextual Retrieval model for 10 updates (data generated)."""
    return fairseq_train(None, save, [
        "--task", "contextual_retrieval", "--arch", "contextual_retrieval_model",
        "--criterion", "l1_loss", "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "32",
        "--epoch-batches", "5", "--valid-batches", "2", "--max-update", "10", "--cpu",
        "--num-workers", "0", "--no-epoch-checkpoints", "--seed", "1", *extra,
    ], **kwargs)  # fmt: skip


def valid_losses(log):
    """{subset: loss} of the last validation of each subset in a fairseq log."""
    found = {}
    for line in log.splitlines():
        if "valid on '" in line:
            subset = line.split("valid on '")[1].split("'")[0]
            found[subset] = float(line.split("| loss ")[1].split()[0])
    return found


@pytest.mark.slow
def test_fairseq_train_then_validate_ood(tmp_path):
    """Both attentions train through fairseq-train (OoD mode, validation on 'valid' and 'ood');
    fairseq-validate on the saved checkpoint gives the same losses; the specialisation script
    draws its figure from the compositional checkpoint."""
    for name, extra in [
        ("mha", ["--attention-type", "multihead", "--encoder-attention-heads", "8"]),
        (
            "comp",
            ["--attention-type", "compositional", "--num-searches", "2", "--num-retrievals", "4"],
        ),
    ]:
        save = tmp_path / name
        log = train_retrieval(save, "--ood", "--valid-subset", "valid,ood", *extra)
        trained = valid_losses(log.stderr + log.stdout)
        assert set(trained) == {"valid", "ood"} and all(0 < v < 2 for v in trained.values())
        val = fairseq_tool("fairseq-validate", None, [
            "--task", "contextual_retrieval", "--path", save / "checkpoint_last.pt",
            "--valid-subset", "valid,ood", "--batch-size", "32", "--cpu", "--num-workers", "0",
        ])  # fmt: skip
        validated = valid_losses(val.stderr + val.stdout)
        assert validated.keys() == trained.keys()
        for subset in trained:
            assert validated[subset] == pytest.approx(trained[subset], abs=2e-4)
    png = tmp_path / "specialisation.png"
    out = run(
        ["python", ROOT / "scripts" / "retrieval-specialisation.py",
         tmp_path / "comp" / "checkpoint_last.pt", "--out", png, "--examples", "64"]
    )  # fmt: skip
    assert png.stat().st_size > 0 and "best-permutation agreement" in out.stdout


@pytest.mark.slow
def test_fairseq_train_with_the_authors_evaluation_and_gumbel(tmp_path):
    """fairseq-train with the authors' options: fresh evaluation batches at every validation
    (--fresh-valid), the held-out subset first, Gumbel-softmax on both softmaxes. The evaluation
    at epoch 2 is drawn from (seed, split, 2, b): fairseq-validate of the final checkpoint (which
    validates as epoch 1, i.e. other batches) gives another loss than training's last one."""
    extra = ["--attention-type", "compositional", "--num-searches", "2", "--num-retrievals", "4"]
    extra += ["--retrieval-gumbel", "--retrieval-gumbel-search", "--fresh-valid"]
    save = tmp_path / "authors"
    log = train_retrieval(save, "--ood", "--valid-subset", "ood,valid", *extra)
    text = log.stderr + log.stdout
    trained = valid_losses(text)
    assert set(trained) == {"valid", "ood"} and "'fresh_valid': True" in text
    assert "| ood | epoch 002 | valid on 'ood' subset" in text
    val = fairseq_tool("fairseq-validate", None, [
        "--task", "contextual_retrieval", "--path", save / "checkpoint_last.pt",
        "--valid-subset", "ood", "--batch-size", "32", "--cpu", "--num-workers", "0",
    ])  # fmt: skip
    assert valid_losses(val.stderr + val.stdout)["ood"] != pytest.approx(trained["ood"], abs=1e-6)


@pytest.mark.slow
def test_bad_flags_are_one_line_errors(tmp_path):
    for extra, flag in [
        (["--gt-retrievals", "0"], "--gt-retrievals"),
        (["--attention-type", "compositional", "--num-searches", "3"], "--num-searches 3"),
    ]:
        proc = train_retrieval(tmp_path / "x", *extra, check=False)
        assert proc.returncode != 0
        errors = [line for line in proc.stderr.splitlines() if "error:" in line]
        assert len(errors) == 1 and flag in errors[0] and "Traceback" not in proc.stderr


# -- scripts -----------------------------------------------------------------------------------------
def study_cmd():
    return ["python", ROOT / "scripts" / "study-retrieval.py"]


def test_scripts_print_help_and_refuse_bad_arguments():
    scripts = ROOT / "scripts"
    for cmd in (
        ["bash", scripts / "demo-retrieval.sh"],
        study_cmd(),
        ["python", scripts / "retrieval-specialisation.py"],
    ):
        assert "Usage" in run([*cmd, "--help"]).stdout
    bad = run(["bash", scripts / "demo-retrieval.sh", "--dim", "12"], check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--dim must be a positive multiple of 8" in bad.stderr
    study = study_cmd()
    bad = run([*study, "run", "--settings", "3x3"], check=False)
    assert bad.returncode == 2 and "--settings" in bad.stderr and len(bad.stderr.splitlines()) == 1
    bad = run([*study, "run", "--settings", "4x8", "--models", "comp-s2r4"], check=False)
    assert bad.returncode == 2 and "--models: unknown ['comp-s2r4']" in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


def test_study_models_picks_a_queue_of_runs(tmp_path):
    # --models gives one core a queue of its own, e.g. the slow model on one core, the rest on the other
    args = ["run", "--out", tmp_path, "--settings", "4x8", "--modes", "iid", "--widths", "64"]
    dry = run([*study_cmd(), *args, "--seeds", "2", "--models", "mha-h4,comp-s4r8", "--dry-run"])
    lines = dry.stdout.splitlines()
    assert lines[0].startswith("4 runs to do (0 done)")
    assert ["--num-searches" in line for line in lines[1:]] == [False, True, False, True]
    assert all("--encoder-attention-heads 32" not in line for line in lines)


@pytest.mark.slow
def test_demo_part_prints_both_attentions(tmp_path):
    out = run(
        ["bash", ROOT / "scripts" / "demo-retrieval.sh", "--updates", "20", "--out", tmp_path]
    )
    rows = [line for line in out.stdout.splitlines() if line.startswith("| multihead-h8")]
    rows += [line for line in out.stdout.splitlines() if line.startswith("| compositional-s2r4")]
    assert len(rows) == 2
    for row in rows:
        l1 = float(row.split("|")[3])
        assert 0.3 < l1 < 1.5  # near the 0.755 of predicting 0 after 20 updates


@pytest.mark.slow
def test_study_runs_resumes_and_reports(tmp_path):
    study = ROOT / "scripts" / "study-retrieval.py"
    args = ["--out", tmp_path / "s", "--settings", "2x4", "--modes", "iid,ood", "--widths", "16"]
    args += ["--ood-widths", "16", "--seeds", "1", "--updates", "10", "--only-first", "4"]
    first = run(["python", study, "run", *args])
    assert "4 runs to do (0 done)" in first.stdout
    assert "0 runs to do (4 done)" in run(["python", study, "run", *args]).stdout
    doc = tmp_path / "doc.md"
    doc.write_text("# prose\n<!-- study:begin -->\nold\n<!-- study:end -->\nmore prose\n")
    run(["python", study, "report", "--out", tmp_path / "s", "--doc", doc])
    text = doc.read_text()
    assert text.startswith("# prose\n") and text.endswith("more prose\n") and "old" not in text
    assert "| comp-s2r4 | 16 | 2,205 | 1 |" in text and "training-tuples L1 | held-out L1" in text
    assert (tmp_path / "doc-curves.png").stat().st_size > 0
