"""Bad input gets one clear line naming the flag or file, through the real command-line tools
(fairseq-train / fairseq-generate with --user-dir, and our scripts), before any output is
overwritten. The table of docs/reliability.md is this file's CASES.

The cases are independent processes: they run concurrently (two at a time) once per module, and
each test checks one of them. More option and checkpoint errors are checked in-process (cheap) at
the end; the CLI cases show that every kind reaches the user as one line.
"""

import hashlib
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from conftest import ROOT, USER_DIR, fairseq_command, fairseq_preprocess, fairseq_train, run
from model_testing import build

import fairseq_plugins  # noqa: F401  (torch.load of fairseq checkpoints, weights_only)
from plugin_tools.errors import (
    CheckpointCorruptError,
    CheckpointRefusedError,
    PluginConfigError,
)

PREFIX = "fairseq_plugins: error: "
TRAIN_ARGS = ["--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "500", "--max-update", "1"]
TRAIN_ARGS += ["--no-progress-bar", "--cpu", "--no-epoch-checkpoints"]
ENV = {"OMP_NUM_THREADS": "1"}


class CodeRunningPayload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def files(demo_raw, demo_bin, tmp_path_factory):
    """A trained checkpoint and the bad files made from it; separate-dictionary data."""
    tmp = tmp_path_factory.mktemp("bad_input")
    save = tmp / "save"
    fairseq_train(demo_bin, save, ["--arch", "compgen_small_2"] + TRAIN_ARGS, env=ENV)
    ckpt = save / "checkpoint_last.pt"
    data = ckpt.read_bytes()
    (tmp / "truncated.pt").write_bytes(data[: len(data) // 2])
    (tmp / "empty.pt").write_bytes(b"")
    (tmp / "notes.pt").write_text("not a checkpoint\n")
    state = torch.load(ckpt)
    state["extra_state"]["payload"] = CodeRunningPayload(tmp / "pwned")
    torch.save(state, tmp / "evil.pt")
    separate = tmp / "separate_bin"
    fairseq_preprocess(demo_raw, separate, joined=False)
    (tmp / "other_user_dir").mkdir()
    (tmp / "other_user_dir" / "__init__.py").write_text("")
    lines = (demo_raw / "test.tgt").read_text().splitlines()
    (tmp / "ref_short.txt").write_text("\n".join(lines[:-1]) + "\n")
    (tmp / "ref_long.txt").write_text("\n".join(lines + lines[:3]) + "\n")
    for side, n in (("src", 10), ("tgt", 9)):  # a parallel corpus whose sides differ
        (tmp / f"uneven.{side}").write_text("a b\n" * n)
    (tmp / "empty.src").write_text("")
    (tmp / "empty.tgt").write_text("")
    # generate output of an earlier run (must survive a failed run in the same OUT_DIR)
    out = tmp / "gen_out"
    out.mkdir()
    (out / "generate-test.txt").write_text("S-0\tkeep\nH-0\t-0.1\tkeep\n")
    (out / "hyp.txt").write_text("keep\n")
    return dict(
        tmp=tmp, save=save, ckpt=ckpt, bin=demo_bin, raw=demo_raw, separate=separate, out=out
    )


def train(f, *extra, data=None, user_dir=USER_DIR):
    args = ["--save-dir", f["save"], *TRAIN_ARGS, *extra]
    return fairseq_command("fairseq-train", data or f["bin"], args, user_dir=user_dir)


def generate(f, path, *extra, data=None):
    args = ["--path", path, "--cpu", "--batch-size", "16", "--beam", "1", "--max-len-b", "5"]
    return fairseq_command("fairseq-generate", data or f["bin"], args + list(extra))


def script(name, *args):
    return ["bash", ROOT / "scripts" / name, *args]


def py_script(name, *args):
    return [sys.executable, ROOT / "scripts" / name, *args]


def prepare_translation(f, corpus):
    """prepare-translation.sh of the fixture's files CORPUS.src / CORPUS.tgt (train and valid)."""
    corpus = f["tmp"] / corpus
    return script("prepare-translation.sh", "--src", "src", "--tgt", "tgt") + [
        *("--train", corpus, "--valid", corpus, "--out", f["tmp"] / "prep_out"),
        *("--tokenizer", "none", "--bpe", "none"),
    ]


# name -> (command from the fixture's files, expected last line of stderr (substring))
CASES = {
    # impossible architecture options (fairseq-train)
    "searches-not-dividing-dim": (
        lambda f: (
            train(f, "--arch", "compgen_abs", "--attention-type", "compositional")
            + ["--num-searches", "3"]
        ),
        PREFIX + "--num-searches 3 (the number of searches) does not divide the encoder "
        "attention width 64 (--encoder-embed-dim)",
    ),
    "zero-retrievals": (
        lambda f: (
            train(f, "--arch", "compgen_abs", "--attention-type", "compositional")
            + ["--num-retrievals", "0"]
        ),
        PREFIX + "--num-retrievals must be >= 1 (got 0)",
    ),
    "heads-not-dividing-dim": (
        lambda f: train(f, "--arch", "compgen_abs", "--decoder-attention-heads", "5"),
        PREFIX + "--decoder-embed-dim 64 is not divisible by --decoder-attention-heads 5",
    ),
    "unknown-fusion": (
        lambda f: train(f, "--arch", "graph_transformer", "--graph-fusion", "max"),
        "fairseq-train: error: argument --graph-fusion: invalid choice: 'max'",
    ),
    "unknown-rel-pos": (
        lambda f: train(f, "--arch", "compgen_abs", "--rel-pos", "ebx"),
        "fairseq-train: error: argument --rel-pos: invalid choice: 'ebx'",
    ),
    "radius-below-1": (
        lambda f: train(f, "--arch", "compgen_rel_eb", "--rel-pos-radius", "0"),
        PREFIX + "--rel-pos-radius must be >= 1 (got 0)",
    ),
    "copy-decoder-without-joined-dictionary": (
        lambda f: train(f, "--arch", "compgen_abs_c", data=f["separate"]),
        PREFIX + "--copy-decoder needs a joined source/target dictionary (run "
        "fairseq-preprocess with --joined-dictionary)",
    ),
    # checkpoints given to fairseq-train
    "restore-checkpoint-of-another-arch": (
        lambda f: train(f, "--arch", "compgen_rel_b"),  # SAVE_DIR holds a compgen_small_2 run
        PREFIX + "checkpoint {save}/checkpoint_last.pt does not match --arch compgen_rel_b and "
        "the model options of this run (it was saved by --arch compgen_small_2): ",
    ),
    "restore-file-missing": (
        lambda f: train(f, "--arch", "compgen_small_2", "--restore-file", f["tmp"] / "nope.pt"),
        PREFIX + "--restore-file {tmp}/nope.pt: no such checkpoint",
    ),
    "user-dir-elsewhere": (
        lambda f: train(f, "--arch", "compgen_abs", user_dir=f["tmp"] / "other_user_dir"),
        "fairseq-train: error: argument --arch/-a: invalid choice: 'compgen_abs'",
    ),
    # checkpoints given to fairseq-generate
    "truncated-checkpoint": (
        lambda f: generate(f, f["tmp"] / "truncated.pt"),
        PREFIX + "checkpoint {tmp}/truncated.pt is corrupt or truncated, or not a PyTorch file "
        "(RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
        "directory)",
    ),
    "missing-checkpoint": (
        lambda f: generate(f, f["tmp"] / "nope.pt"),
        PREFIX + "--path {tmp}/nope.pt: no such checkpoint",
    ),
    "checkpoint-vs-model-overrides": (
        lambda f: generate(f, f["ckpt"], "--model-overrides", "{'encoder_ffn_embed_dim': 128}"),
        PREFIX + "checkpoint {ckpt} does not match the model built for it (--arch "
        "compgen_small_2 with this command's --model-overrides and data): size mismatch for "
        "encoder.layers.0.fc1.weight: checkpoint [256, 64], model [128, 64]",
    ),
    "checkpoint-vs-other-dictionaries": (
        lambda f: generate(f, f["ckpt"], data=f["separate"]),
        "size mismatch for encoder.embed_tokens.weight",
    ),
    # our scripts
    "generate.sh-code-running-checkpoint": (
        lambda f: script("generate.sh", f["bin"], f["tmp"] / "evil.pt", f["out"], "--beam", "1"),
        "generate.sh: fairseq-generate failed: " + PREFIX + "checkpoint {tmp}/evil.pt was refused",
    ),
    "generate.sh-ref-wrong-length": (
        lambda f: (
            script("generate.sh", f["bin"], f["ckpt"], f["out"])
            + ["--ref", f["tmp"] / "ref_short.txt"]
        ),
        "generate.sh: --ref '{tmp}/ref_short.txt' has 99 lines, but subset 'test' of {bin} has "
        "100 sentences",
    ),
    "generate.sh-missing-data": (
        lambda f: script("generate.sh", f["tmp"] / "nodata", f["ckpt"], f["out"]),
        "generate.sh: DATA_BIN '{tmp}/nodata' is not a directory",
    ),
    "score-translation-ref-too-long": (
        lambda f: (
            py_script("score-translation.py", f["out"] / "generate-test.txt")
            + ["--out", f["out"], "--detok", "none", "--ref", f["tmp"] / "ref_long.txt"]
        ),
        "score: error: --ref {tmp}/ref_long.txt has 103 lines, but {out}/generate-test.txt "
        "holds 1 sentences (ids 0..0)",
    ),
    "significance.sh-ref-wrong-length": (
        lambda f: (
            script("significance.sh", f["raw"] / "test.tgt", f["raw"] / "test.tgt")
            + ["--ref", f["tmp"] / "ref_short.txt"]
        ),
        "significance.sh: error: {raw}/test.tgt: 100 lines but the reference "
        "({tmp}/ref_short.txt) has 99",
    ),
    "eval-lm.sh-code-running-checkpoint": (
        lambda f: script("eval-lm.sh", f["tmp"] / "evil.pt", f["tmp"] / "lm_bin"),
        "eval-lm.sh: checkpoint {tmp}/evil.pt was refused: it holds a pickled global that is "
        "not allowed (Weights only load failed: GLOBAL posix.system",
    ),
    "eval-lm.sh-code-running-checkpoint-in-fairseq-eval-lm": (
        lambda f: (
            script("eval-lm.sh", f["tmp"] / "evil.pt", f["tmp"] / "lm_bin")
            + ["--tokens-per-sample", "32", "--context-window", "0"]
        ),
        "eval-lm.sh: fairseq-eval-lm failed: checkpoint {tmp}/evil.pt was refused",
    ),
    "eval-lm.sh-user-dir-missing": (
        lambda f: script("eval-lm.sh", f["ckpt"], f["tmp"] / "lm_bin"),
        "eval-lm.sh: FAIRSEQ_USER_DIR '{tmp}/no_plugin' is not a directory",
    ),
    "train.sh-data-not-preprocessed": (
        lambda f: script("train.sh", f["raw"], f["tmp"] / "train_sh_save", "--arch", "compgen_abs"),
        "train.sh: no dict.*.txt in DATA_BIN '{raw}' (run fairseq-preprocess)",
    ),
    "prepare-translation-sides-differ": (
        lambda f: prepare_translation(f, "uneven"),
        "prepare-translation: error: line counts differ: {tmp}/uneven.src has 10, "
        "{tmp}/uneven.tgt has 9",
    ),
    "prepare-translation-empty-file": (
        lambda f: prepare_translation(f, "empty"),
        "prepare-translation: error: empty input file {tmp}/empty.src",
    ),
    "prepare-translation-missing-file": (
        lambda f: prepare_translation(f, "absent"),
        "prepare-translation: error: missing input file {tmp}/absent.src (or .gz)",
    ),
}
CASE_ENV = {"eval-lm.sh-user-dir-missing": {"FAIRSEQ_USER_DIR": "{tmp}/no_plugin"}}


def digest(folder):
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


@pytest.fixture(scope="module")
def results(files):
    lm_bin = files["tmp"] / "lm_bin"  # what eval-lm.sh checks for before loading anything
    lm_bin.mkdir()
    (lm_bin / "dict.txt").write_text("a 1\n")
    (lm_bin / "test.idx").write_bytes(b"")
    names = {k: str(v) for k, v in files.items()}
    before = {"save": digest(files["save"]), "out": digest(files["out"])}

    def one(name):
        build, _ = CASES[name]
        env = {**ENV, **{k: v.format(**names) for k, v in CASE_ENV.get(name, {}).items()}}
        return run(build(files), env=env, check=False, timeout=600)

    with ThreadPoolExecutor(max_workers=2) as pool:
        procs = dict(zip(CASES, pool.map(one, CASES)))
    return procs, before, names


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_gets_one_line_naming_it(name, results):
    procs, _, names = results
    proc = procs[name]
    expected = CASES[name][1].format(**names)
    assert proc.returncode != 0, proc.stdout[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines, proc.stdout[-2000:]
    assert expected in lines[-1], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


@pytest.mark.slow
def test_nothing_written_is_lost(files, results):
    """The failed runs above pointed at a SAVE_DIR holding a run and an OUT_DIR holding outputs:
    both are byte for byte as they were, and no checkpoint payload ran."""
    _, before, _ = results
    for folder in ("save", "out"):  # (new files, e.g. generate.sh's log, may appear)
        after = digest(files[folder])
        assert {name: after.get(name) for name in before[folder]} == before[folder]
    assert not (files["tmp"] / "pwned").exists()
    assert not (files["tmp"] / "prep_out").exists()  # prepare checks everything before writing


def test_excepthook_keeps_other_tracebacks(capsys, monkeypatch):
    """Only our errors are shortened (the CLI cases above show the installed hook at work); any
    other exception goes to the previous hook with its traceback."""
    from fairseq_plugins.compat.excepthook import plugin_excepthook, running_fairseq_command

    # installed in fairseq's commands only (the CLI cases above), not in this test process
    assert not getattr(sys.excepthook, "fairseq_plugins_hook", False)
    assert running_fairseq_command(["/venv/bin/fairseq-train", "data"], "")
    assert running_fairseq_command(["/x/train.py"], "fairseq_cli.train")
    assert not running_fairseq_command(["/venv/bin/pytest"], "pytest")
    passed_on = []
    hook = plugin_excepthook(lambda *exc_info: passed_on.append(exc_info))
    error = PluginConfigError("--x must be\n>= 1")
    hook(PluginConfigError, error, None)
    assert capsys.readouterr().err == PREFIX + "--x must be >= 1\n" and passed_on == []
    other = KeyError("not ours")
    hook(KeyError, other, None)
    assert passed_on == [(KeyError, other, None)] and capsys.readouterr().err == ""
    monkeypatch.setenv("FAIRSEQ_PLUGINS_TRACEBACK", "1")
    hook(PluginConfigError, error, None)
    assert passed_on[-1] == (PluginConfigError, error, None)


def test_atomic_checkpoint_copy_keeps_the_old_file_when_the_copy_fails(tmp_path, monkeypatch):
    from fairseq import checkpoint_utils, file_io

    # Only checkpoint writing is changed; fairseq's PathManager stays as it was everywhere else.
    assert file_io.PathManager.copy is not checkpoint_utils.PathManager.copy
    PathManager = checkpoint_utils.PathManager

    src, dst = tmp_path / "checkpoint_best.pt", tmp_path / "checkpoint_last.pt"
    src.write_bytes(b"new" * 1000)
    dst.write_bytes(b"old")

    def failing_copyfile(a, b, *args, **kwargs):
        with open(b, "wb") as f:
            f.write(b"ne")  # part of it, then the process "dies"
        raise OSError("disk gone")

    monkeypatch.setattr(shutil, "copyfile", failing_copyfile)
    with pytest.raises(OSError):
        PathManager.copy(str(src), str(dst), overwrite=True)
    assert dst.read_bytes() == b"old"
    monkeypatch.undo()
    assert PathManager.copy(str(src), str(dst), overwrite=True)
    assert dst.read_bytes() == src.read_bytes()
    assert not (tmp_path / "checkpoint_last.pt.tmp").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--arch", "compgen_abs", "--attention-type", "compositional"]
            + ["--num-retrievals", "4", "--compositional-attn-dim", "30"],
            "--num-retrievals 4 (the number of retrievals) does not divide the encoder retrieval "
            "value width 30",
        ),
        (
            ["--arch", "compgen_abs", "--attention-type", "compositional"]
            + ["--decoder-attention-heads", "3"],
            "--decoder-attention-heads 3 (the number of searches) does not divide the decoder "
            "attention width 64",
        ),
        (
            ["--arch", "graph_transformer", "--graph-half-dim", "--encoder-embed-dim", "36"]
            + ["--encoder-attention-heads", "4"],
            "--graph-half-dim needs d/2 = 18.0 divisible by --encoder-attention-heads 4",
        ),
        (["--arch", "compgen_abs", "--cross-attention-type", "dot"], "--cross-attention-type"),
        (["--arch", "compgen_abs", "--rel-pos-cross"], "--rel-pos-cross needs --rel-pos"),
        (["--arch", "compgen_abs", "--encoder-attention-heads", "0"], "must be >= 1"),
        (["--arch", "compgen_rel_e", "--rel-pos-radius", "-2"], "--rel-pos-radius must be >= 1"),
        (
            ["--arch", "compgen_abs", "--attention-type", "compositional", "--retrieval-gumbel"]
            + ["--retrieval-gumbel-temperature", "0"],
            "--retrieval-gumbel-temperature must be a finite number > 0 (got 0.0)",
        ),
        (
            ["--arch", "compgen_abs", "--cross-attention-type", "compositional"]
            + ["--retrieval-scoring", "mlp", "--retrieval-mlp-hidden", "-1"],
            "--retrieval-mlp-hidden must be >= 0 (got -1)",
        ),
    ],
)
def test_option_errors_name_the_flag(args, message):
    with pytest.raises(PluginConfigError) as info:
        build(args)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)  # callers catching ValueError still do


def test_lm_option_errors_name_the_flag():
    with pytest.raises(PluginConfigError, match="--decoder-attention-heads 5"):
        build(["--arch", "compositional_transformer_lm", "--decoder-attention-heads", "5"], lm=True)
    with pytest.raises(PluginConfigError, match="--copy-decoder needs an encoder"):
        build(["--arch", "variant_transformer_lm", "--copy-decoder"], lm=True)


@pytest.mark.slow
def test_checkpoint_errors_in_process(files):
    from fairseq import checkpoint_utils

    tmp = files["tmp"]
    for name, detail in (("empty.pt", "(empty file)"), ("notes.pt", "Unsupported operand")):
        with pytest.raises(CheckpointCorruptError, match="is corrupt or truncated") as info:
            checkpoint_utils.load_checkpoint_to_cpu(str(tmp / name))
        assert detail in str(info.value)
    with pytest.raises(CheckpointRefusedError, match="GLOBAL posix.system") as info:
        checkpoint_utils.load_checkpoint_to_cpu(str(tmp / "evil.pt"))
    assert isinstance(info.value, __import__("pickle").UnpicklingError)
    assert not (tmp / "pwned").exists()
    state = checkpoint_utils.load_checkpoint_to_cpu(str(files["ckpt"]))  # a good one still loads
    assert "model" in state
