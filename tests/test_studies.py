"""The NMT and LM studies: scripts/study-{nmt,lm}.sh, compare-nmt.sh's seeds/selection/resume,
compare-lm.sh, study-report.py and the study configs (cheap checks; the studies themselves are
long runs)."""

import sys
from pathlib import Path

import pytest
from conftest import ROOT, run

SCRIPTS = ROOT / "scripts"
ENV = {"OMP_NUM_THREADS": "1"}

TINY = """NAME={name}
ARCH={arch}
DATA=/nonexistent/overridden-by-data-flag
TRAIN_ARGS=(--encoder-layers 2 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32
  --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64
  --encoder-attention-heads 2 --decoder-attention-heads 2
  --optimizer adam --lr 0.005 --lr-scheduler inverse_sqrt --warmup-updates 10
  --max-tokens 2048 --max-epoch 3 --no-epoch-checkpoints --seed 1 --num-workers 0 {extra})
"""


def test_help():
    for script in ("compare-nmt.sh", "compare-lm.sh", "study-nmt.sh", "study-lm.sh"):
        proc = run(["bash", SCRIPTS / script, "--help"])
        assert proc.stdout.startswith("Usage:"), script
    assert "--smoke" in run([sys.executable, SCRIPTS / "study-report.py", "--help"]).stdout


@pytest.mark.parametrize(
    "cmd, named",
    [
        (["compare-nmt.sh", "--seeds", "1,x", "c.sh"], "--seeds"),
        (["compare-nmt.sh", "--seeds", "1,1", "c.sh"], "seed 1 given twice"),
        (["compare-nmt.sh", "--train-args"], "--train-args"),
        (["compare-nmt.sh", "--bogus", "c.sh"], "--bogus"),
        (["compare-lm.sh", "--context-window", "x", "c.sh"], "--context-window"),
        (["compare-lm.sh", "/nonexistent/c.sh"], "/nonexistent/c.sh"),
        (["study-nmt.sh", "--seeds", "0"], "--seeds"),
        (["study-lm.sh", "--threads", "x"], "--threads"),
        (["study-lm.sh", "--nope"], "--nope"),
    ],
)
def test_bad_options_one_line(cmd, named, tmp_path):
    cfg = tmp_path / "c.sh"
    cfg.write_text("NAME=x\nARCH=transformer\nDATA=/nonexistent\n")
    args = [str(cfg) if a == "c.sh" else a for a in cmd[1:]]
    proc = run(["bash", SCRIPTS / cmd[0], *args], cwd=tmp_path, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr


def test_selection_config_errors(tmp_path):
    sel = tmp_path / "sel.sh"
    sel.write_text("NAME=best\nSELECT_FROM=(a.sh b.sh)\n")
    proc = run(["bash", SCRIPTS / "compare-nmt.sh", sel], check=False)
    assert proc.returncode == 2 and "SELECT_EPOCHS" in proc.stderr
    sel.write_text("NAME=best\nSELECT_FROM=(a.sh)\nSELECT_EPOCHS=2\n")
    proc = run(["bash", SCRIPTS / "compare-nmt.sh", sel], check=False)
    assert proc.returncode == 2 and "a.sh: no such config file" in proc.stderr


def test_study_report_errors(tmp_path):
    report = [sys.executable, SCRIPTS / "study-report.py"]
    proc = run([*report, "nmt", tmp_path / "none", "--doc", tmp_path / "d.md"], check=False)
    assert proc.returncode == 2 and "none: no such directory" in proc.stderr
    proc = run([*report, "lm", tmp_path, "--doc", tmp_path / "d.md"], check=False)
    assert proc.returncode == 2 and "runs.tsv: no such file" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("direction", ["en-de", "de-en"])
def test_study_prepares_data_once_then_runs_the_comparison(direction, tmp_path, monkeypatch):
    """What `study-nmt` runs (in-process, with the subprocess and the comparison stubbed): the
    data preparation when its dictionary is missing, the invocation file, then the comparison
    pipeline (nmt_compare, recorded as scripts/compare-nmt.sh) with the direction's configs, 3
    seeds, the smoke budget and the options after `--`."""
    kind = "nmt"
    from studies import studies

    ran, execd = [], []
    monkeypatch.setattr(studies.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or _Done())

    def fake_compare(argv, prog, usage, argv0):
        execd.append(["bash", argv0, *argv])
        raise SystemExit(0)

    monkeypatch.setattr(studies.nmt_compare, "main", fake_compare)
    monkeypatch.chdir(tmp_path)  # the study changes to the checkout; restored afterwards
    out = tmp_path / "out"
    argv = ["--out", str(out), "--smoke", "--threads", "1", "--direction", direction]
    argv += ["--", "--skip-train"]
    usage = f"scripts/study-{kind}.sh"
    with pytest.raises(SystemExit):
        studies.run_study(kind, argv, f"study-{kind}.sh", usage)
    data = f"data-bin/multi30k.{direction}-smoke"
    if not (ROOT / data / "bin").is_dir():
        assert ran[0][:2] == [
            "bash",
            f"scripts/prepare-{'multi30k' if kind == 'nmt' else 'wikitext'}.sh",
        ]
        assert data in ran[0] and "--max-train-lines" in ran[0]
    assert (out / "study-invocation.txt").read_text() == f"bash {usage} {' '.join(argv)} \n"
    cmd = execd[0]
    assert cmd[:2] == ["bash", f"scripts/compare-{kind}.sh"] and cmd[-1] == "--skip-train"
    assert cmd[cmd.index("--data") + 1] == f"{data}/bin" and cmd[cmd.index("--out") + 1] == str(out)
    assert cmd[cmd.index("--doc") + 1] == f"{out}/results-{kind}.md" and "--smoke" in cmd
    configs = [c for c in cmd if c.startswith("configs/")]
    assert all((ROOT / c).is_file() for c in configs)
    pair = direction.replace("-", "")
    expected = {
        "en-de": ["baseline", "baseline-wide", "compositional", "graph-halfdim-weightgate"]
        + ["graph-best"],
        "de-en": ["baseline", "baseline-wide", "graph-halfdim-weightgate", "graph-selfgate"],
    }[direction]
    assert configs == [f"configs/nmt/multi30k-{pair}-{s}.sh" for s in expected]
    assert cmd[cmd.index("--seeds") + 1] == "1,2,3" and "--select-epochs" in cmd


@pytest.mark.parametrize(
    "extra, archive",
    [
        ([], "docs/study-runs/nmt-deen"),
        (["--archive", "elsewhere"], "elsewhere"),
        (["--archive", "/tmp/kept-runs"], "/tmp/kept-runs"),
        (["--no-archive"], None),
        (["--smoke"], None),
    ],
)
def test_nmt_study_archive_default(extra, archive, monkeypatch):
    """A real study keeps its finished runs in the committed folder docs/study-runs/nmt-PAIR by
    default (they outlive the machine); a smoke run and --no-archive keep none. A given folder
    is the caller's path; inside the checkout the recorded command names it relative to it."""
    from studies import studies

    monkeypatch.chdir(ROOT)
    args = studies.parse("nmt", ["--direction", "de-en", *extra], "study-nmt.sh")
    cmd = studies.plan("nmt", args)[3]
    got = cmd[cmd.index("--archive") + 1] if "--archive" in cmd else None
    assert got == archive


@pytest.mark.parametrize(
    "extra, archive",
    [
        ([], ROOT / "docs/study-runs/lm"),
        (["--archive", "kept"], Path("/tmp/kept")),
        (["--no-archive"], None),
        (["--smoke"], None),
    ],
)
def test_lm_study_archive_default(extra, archive, monkeypatch):
    """The LM study's archive: docs/study-runs/lm by default, a given folder resolved against
    the caller's directory (the study then moves to the checkout), none for a smoke run."""
    from studies import lm_study

    monkeypatch.chdir("/tmp")
    assert lm_study.parse(extra, "study-lm.sh").archive == archive


@pytest.mark.parametrize("study", ["nmt", "lm"])
def test_study_archive_flags_conflict(study):
    from studies import lm_study, studies
    from studies.runs import ExperimentError

    argv = ["--archive", "x", "--no-archive"]
    with pytest.raises(ExperimentError, match="--archive and --no-archive"):
        studies.parse("nmt", argv, "study-nmt.sh") if study == "nmt" else lm_study.parse(
            argv, "study-lm.sh"
        )


class _Done:
    returncode = 0


def _source(cfg, expr):
    script = f'set -euo pipefail; source "$1"; {expr}'
    return run(["bash", "-c", script, "x", cfg]).stdout


def test_nmt_study_configs():
    cfgs = {c.stem: c for c in (ROOT / "configs" / "nmt").glob("multi30k-*.sh")}
    base_args = _source(cfgs["multi30k-ende-baseline"], 'printf "%s\\n" "${TRAIN_ARGS[@]}"')
    wide = ["--encoder-ffn-embed-dim", "768", "--decoder-ffn-embed-dim", "768"]
    expected_extra = {
        "multi30k-ende-baseline": ("transformer", []),
        "multi30k-ende-baseline-wide": ("transformer", wide),
        "multi30k-ende-compositional": (
            "compositional_transformer",
            ["--attention-type", "compositional", "--num-searches", "4", "--num-retrievals", "4"],
        ),
        "multi30k-ende-graph-halfdim-weightgate": (
            "graph_transformer",
            ["--graph-half-dim", "--graph-fusion", "weight-gate"],
        ),
        "multi30k-ende-graph-sum": ("graph_transformer", ["--graph-fusion", "sum"]),
        "multi30k-ende-graph-selfgate": ("graph_transformer", ["--graph-fusion", "self-gate"]),
    }
    # the De-En study (the Graph-Transformer's own direction): the same systems, reversed
    for sys_name in ("baseline", "baseline-wide", "graph-halfdim-weightgate", "graph-selfgate"):
        expected_extra[f"multi30k-deen-{sys_name}"] = expected_extra[f"multi30k-ende-{sys_name}"]
    for stem, (arch, extra) in expected_extra.items():
        out = _source(
            cfgs[stem],
            'echo "$NAME|$ARCH|$SRC|$TGT|$BEAM|$DATA"; printf "%s\\n" "${TRAIN_ARGS[@]}"',
        )
        first, *args = out.splitlines()
        pair = "en|de" if "-ende-" in stem else "de|en"
        data = "data-bin/multi30k." + pair.replace("|", "-") + "/bin"
        assert first == f"{stem}|{arch}|{pair}|5|{data}"
        # one recipe: the baseline's arguments, then the architecture's own flags only
        assert "\n".join(args[: len(args) - len(extra)]) == base_args.rstrip("\n")
        assert args[len(args) - len(extra) :] == extra
    assert "--patience" in base_args and "--max-epoch" in base_args
    sel = _source(cfgs["multi30k-ende-graph-best"], 'echo "$NAME|${SELECT_FROM[*]}|$SELECT_EPOCHS"')
    assert (
        sel.strip()
        == "multi30k-ende-graph-best|multi30k-ende-graph-sum.sh multi30k-ende-graph-selfgate.sh|2"
    )


def test_lm_study_configs_same_tokens_and_params():
    """The three LM systems: the same data, batches and widths; the matched baseline is the
    compositional LM with multi-head attention (shared layers, the same ffn), within 5% of its
    parameters, and within 2% of the stock model's at the study's 8,000-entry dictionary."""
    cfgs = {c.stem: c for c in (ROOT / "configs" / "lm").glob("wikitext2-study-*.sh")}
    stems = ["wikitext2-study-" + s for s in ("baseline", "matched", "compositional")]
    assert set(cfgs) == set(stems)
    from model_testing import parse_lm_config

    parsed = {}
    for stem, cfg in cfgs.items():
        lines = _source(cfg, 'echo "$ARCH"; printf "%s\\n" "${TRAIN_ARGS[@]}"').splitlines()
        parsed[stem] = (lines[0], parse_lm_config(lines[0], " ".join(map(repr, lines[1:]))))
    (ab, b), (am, m), (ac, c) = (parsed[s] for s in stems)
    assert (ab, am, ac) == (
        "transformer_lm",
        "compositional_transformer_lm_baseline",
        "compositional_transformer_lm",
    )
    for k in ("max_update", "max_tokens", "tokens_per_sample", "update_freq", "decoder_embed_dim"):
        assert getattr(b, k) == getattr(c, k) == getattr(m, k), k  # the same tokens and widths
    assert c.share_decoder_layers and not getattr(b, "share_decoder_layers", False)
    assert c.num_searches == c.num_retrievals == c.decoder_attention_heads == 4
    # the matched pair differs in the attention alone
    assert m.share_decoder_layers and m.attention_type == "multihead"
    assert c.attention_type == "compositional"
    for k in ("decoder_layers", "decoder_ffn_embed_dim", "decoder_attention_heads", "dropout"):
        assert getattr(m, k) == getattr(c, k), k
    from types import SimpleNamespace

    from fairseq.data import Dictionary
    from fairseq.models import build_model

    d = Dictionary()
    for i in range(8000 - len(d)):
        d.add_symbol(f"w{i}")
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d)
    n = {
        k: sum(p.numel() for p in build_model(a, task).parameters()) for k, (_, a) in parsed.items()
    }
    comp, matched, stock = (n[s] for s in reversed(stems))
    assert (stock, matched, comp) == (1_817_344, 1_798_208, 1_815_776)  # as the configs say
    assert abs(comp / matched - 1) < 0.05 and abs(comp / stock - 1) < 0.02


def test_length_ratio_counts_post_processed_tokens(tmp_path):
    """The report's hyp/ref length: H- (third field) over T- (second field) tokens; S-, D- and
    P- lines do not count; no output or two outputs give no ratio."""
    from studies.study_report import length_ratio

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert length_ratio(run_dir) is None
    (run_dir / "generate-test.txt").write_text(
        "S-0\tein Hund .\nT-0\tein Hund läuft .\nH-0\t-0.5\tein Hund läuft läuft .\n"
        "D-0\t-0.5\tein Hund läuft läuft .\nP-0\t-0.1 -0.2 -0.3 -0.4 -0.5\n"
        "T-1\tzwei Katzen schlafen hier .\nH-1\t-0.3\tzwei Katzen .\n",
        encoding="utf-8",
    )
    assert length_ratio(run_dir) == pytest.approx((5 + 3) / (4 + 5))
    (run_dir / "generate-valid.txt").write_text("T-0\ta\nH-0\t-1\ta\n", encoding="utf-8")
    assert length_ratio(run_dir) is None


@pytest.mark.slow
def test_compare_nmt_selection_seeds_resume(demo_bin, tmp_path):
    """Selection (2 candidates), --seeds, --train-args, started twice at once (the two-cores
    protocol: every run is trained by one process only, both write the report), then a third
    start that skips everything; study-report.py writes the document with the smoke label."""
    import os
    import subprocess

    base = tmp_path / "base.sh"
    base.write_text(TINY.format(name="base", arch="transformer", extra=""))
    for name, fusion in (("gsum", "sum"), ("gself", "self-gate")):
        (tmp_path / f"{name}.sh").write_text(
            TINY.format(name=name, arch="graph_transformer", extra=f"--graph-fusion {fusion}")
        )
    sel = tmp_path / "best.sh"
    sel.write_text("NAME=gbest\nSELECT_FROM=(gsum.sh gself.sh)\nSELECT_EPOCHS=1\n")
    out = tmp_path / "out"
    doc = tmp_path / "docs" / "results.md"
    cmd = ["bash", SCRIPTS / "compare-nmt.sh", base, sel, "--data", demo_bin, "--out", out]
    cmd += ["--seeds", "3", "--train-args", "--max-epoch 2", "--resamples", "50", "--trials", "50"]
    archive = tmp_path / "kept"
    cmd += ["--doc", doc, "--smoke", "--archive", archive]
    cmd = [str(c) for c in cmd]
    env = {**os.environ, **ENV}
    procs = [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    errs = [p.communicate(timeout=900)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert sum(e.count("selected") for e in errs) == 1  # one process selected, the other waited
    for log in (
        out / "base" / "seed3" / "train.log",
        out / "gbest" / "select" / "gsum" / "train.log",
    ):
        assert log.read_text().count("compare-nmt.sh: training at") == 1, log
    selection = (out / "gbest" / "selection.txt").read_text().splitlines()
    assert selection[0].startswith("winner\t") and selection[1] == "epochs\t1"
    assert {ln.split("\t")[0] for ln in selection[2:]} == {"gsum", "gself"}
    log = (out / "gbest" / "seed3" / "train.log").read_text()
    # the winner's 1-epoch run continued to the 2-epoch cap from its checkpoint
    assert "resuming from checkpoint_last.pt" in log and "| epoch 002 |" in log
    # its train.seconds sums the selection piece and its own (one `timed` piece each)
    pieces = [
        (out / "gbest" / "seed3" / f"{m}.pieces").read_text().split() for m in ("wall", "cpu")
    ]
    assert len(pieces[0]) == len(pieces[1]) == 2
    seconds = (out / "gbest" / "seed3" / "train.seconds").read_text().split()
    assert seconds == [f"{sum(map(float, p)):.0f}" for p in pieces]
    assert float(pieces[1][1]) > 0  # fairseq-train's CPU, read from the child
    assert "--seed 3" in (out / "base" / "seed3" / "commands.txt").read_text()
    report = (out / "REPORT.md").read_text()
    assert "## Paired significance against base-seed3" in report
    res = (out / "significance-seed3.json").read_text()
    assert '"chrF"' in res
    text = doc.read_text()
    assert "Smoke run, not results" in text and "| gbest |" in text
    assert "| Hyp/ref length |" in text
    assert (doc.parent / "results-curves.png").read_bytes()[:4] == b"\x89PNG"

    again = run(cmd, env=ENV)  # resumable: nothing is trained or decoded again
    assert again.stderr.count("already trained") == 2
    assert again.stderr.count("already decoded") == 2
    assert "training" not in again.stderr.replace("already trained", "")

    # --archive: the finished runs were kept without their checkpoints; a fresh output folder
    # (another machine, a new clone) restores them: nothing is trained or decoded, the same
    # hypotheses are scored to the same significance results and the report lists both systems
    kept = archive / "gbest" / "seed3"
    assert (kept / "generate.done").is_file() and not (kept / "checkpoints").exists()
    assert (archive / "gbest" / "selection.txt").read_text() == "\n".join(selection) + "\n"
    fresh = tmp_path / "fresh"
    restored = run([fresh if c == str(out) else c for c in cmd], env=ENV)
    assert restored.stderr.count("restored from") == 2
    assert "training" not in restored.stderr.replace("already trained", "")
    assert "decoding" not in restored.stderr
    for name in ("base", "gbest"):
        hyps = out / name / "seed3" / "generate-test.txt"
        assert (fresh / name / "seed3" / "generate-test.txt").read_text() == hyps.read_text()
    assert (fresh / "gbest" / "selection.txt").is_file()
    import json

    def scores(folder):
        text = (folder / "significance-seed3.json").read_text()
        return json.loads(text.replace(str(folder), "OUT"))

    assert scores(fresh) == scores(out)  # the same files, the same resampling seed
    assert "| gbest |" in (fresh / "REPORT.md").read_text()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


TINY_LM = (
    "--decoder-layers 2 --decoder-embed-dim 32 --decoder-input-dim 32 --decoder-output-dim 32 "
    "--decoder-ffn-embed-dim 64 --tokens-per-sample 64 --max-tokens 1024 --warmup-updates 4 --validate-interval-updates 0 "
    "--save-interval-updates 0 --log-interval 10"
)


@pytest.mark.slow
def test_lm_study_smoke_two_processes_share_the_runs(wikitext2_data, tmp_path):
    """The whole LM study at a tiny size through fairseq's tools (prepare-wikitext.sh,
    sentencepiece, fairseq-preprocess, train-lm.sh, eval-lm.sh), started twice at once as the
    two-core protocol does: every run is trained by exactly one process, both finish,
    and the document has the sweep, the per-word perplexities, the Holm-corrected across-seed
    tests and the curves. Then a third start trains nothing."""
    import subprocess

    out, doc = tmp_path / "study", tmp_path / "docs" / "results-lm.md"
    cmd = ["bash", SCRIPTS / "study-lm.sh", "--out", out, "--doc", doc, "--smoke"]
    cmd += ["--raw-dir", wikitext2_data, "--data-root", tmp_path / "data", "--max-lines", "300,30"]
    cmd += ["--vocab", "200", "--lrs", "0.004", "--seeds", "1,2", "--sweep-updates", "4"]
    cmd += ["--min-epochs", "1", "--max-epochs", "1", "--context-window", "32"]
    cmd += ["--train-args", TINY_LM, "--threads", "1", "--archive", tmp_path / "kept"]
    cmd = [str(c) for c in cmd]
    env = {**__import__("os").environ, **ENV}
    procs = [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    errs = [p.communicate(timeout=900)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    runs = [out / "sweep" / s / "lr0.004" for s in ("baseline", "matched", "compositional")]
    runs += [out / s / f"seed{k}" for s in ("baseline", "matched", "compositional") for k in (1, 2)]
    for d in runs:  # one training command per run, whichever process ran it
        trains = [ln for ln in (d / "commands.txt").read_text().splitlines() if "train-lm" in ln]
        assert len(trains) == 1, d
        assert "--decoder-embed-dim 32" in trains[0] and "--lr 0.004" in trains[0]
    text = doc.read_text()
    assert "Smoke run, not results" in text
    assert "## Learning-rate sweep" in text and "0.004 (**chosen**)" in text
    assert "Holm" in text and ("not distinguishable" in text or "better than" in text)
    assert "| compositional vs matched | test ppl/word |" in text
    params = __import__("json").loads((out / "params.json").read_text())
    assert len(params) == 3 and params[1]["arch_and_flags"].startswith(
        "compositional_transformer_lm_baseline "
    )
    assert (doc.parent / "results-lm-curves.png").read_bytes()[:4] == b"\x89PNG"
    result = __import__("json").loads((out / "matched" / "seed1" / "result.json").read_text())
    test = result["eval"]["test"]
    assert test["tokens"] > test["words"] > 0  # pieces outnumber words at a 200-piece vocabulary
    assert test["word_ppl"] == pytest.approx(2 ** (test["loss"] * test["tokens"] / test["words"]))
    again = run(cmd, env=ENV)
    assert "training" not in again.stderr and "busy" not in again.stderr
    # --archive: a fresh output folder restores all 9 runs (no checkpoints were kept), trains
    # nothing and reports the same test perplexities
    assert not list((tmp_path / "kept").rglob("*.pt"))
    fresh = tmp_path / "fresh"
    restored = run([str(fresh) if c == str(out) else c for c in cmd], env=ENV)
    assert restored.stderr.count("restored from") == len(runs) == 9
    assert "training" not in restored.stderr and "resuming" not in restored.stderr
    for d in runs:
        again_result = (fresh / d.relative_to(out) / "result.json").read_text()
        assert again_result == (d / "result.json").read_text()
    assert "| compositional vs matched | test ppl/word |" in doc.read_text()
    # --only: the sweep, then the chosen seed run alone, and no document
    only, only_doc = tmp_path / "only", tmp_path / "only.md"
    swap = {str(out): str(only), str(doc): str(only_doc), str(tmp_path / "kept"): "x"}
    cmd_only = [swap.get(c, c) for c in cmd]
    cmd_only.remove("--archive")
    cmd_only.remove("x")
    got = run([*cmd_only, "--no-archive", "--only", "compositional:2"], env=ENV)
    assert "no document" in got.stderr and not only_doc.exists()
    assert sorted(p.parent.name + "/" + p.name for p in only.glob("*/seed*")) == [
        "compositional/seed2"
    ]
    assert (only / "compositional" / "seed2" / "result.json").is_file()


@pytest.mark.parametrize(
    "given, best, widenings, grid",
    [
        # the top wins twice: 0.008 is added, then 0.016, where 0.008 is inside and wins
        ("0.001,0.002,0.004", 0.01, 2, ["0.001", "0.002", "0.004", "0.008", "0.016"]),
        ("0.001,0.002,0.004", 0.0003, 2, ["0.00025", "0.0005", "0.001", "0.002", "0.004"]),
        ("0.001,0.002,0.004", 0.002, 2, ["0.001", "0.002", "0.004"]),  # inside: as given
        ("0.001,0.002,0.004", 0.1, 1, ["0.001", "0.002", "0.004", "0.008"]),  # the cap
        ("0.001,0.002,0.004", 0.1, 0, ["0.001", "0.002", "0.004"]),
    ],
)
def test_lm_study_sweep_widens_past_a_winning_edge(given, best, widenings, grid, tmp_path):
    """While a system's best lr lies at an edge of the grid, every system also runs the next
    value past it (x2 at the top, /2 at the bottom), at most --sweep-widenings times; the
    chosen rate is the best of the grown grid. Training is stubbed: validation perplexity
    grows with the distance of log(lr) from BEST (the matched system's optimum is 1.2x that of
    the others: still one grid for all)."""
    import json
    import math

    from studies import lm_study

    def fake_sweep_run(run_dir, system, data, lr, args):
        optimum = best * (1.2 if system == "matched" else 1)
        ppl = 100 + 10 * abs(math.log(float(lr) / optimum))
        (run_dir / "result.json").write_text(json.dumps({"valid_ppl": ppl}))

    argv = ["--lrs", given, "--sweep-widenings", str(widenings), "--no-archive"]
    args = lm_study.parse(argv, "study-lm.sh")
    mp = pytest.MonkeyPatch()
    mp.setattr(lm_study, "sweep_run", fake_sweep_run)
    try:
        lrs, chosen = lm_study.lr_sweep("study-lm", tmp_path, tmp_path, args, None)
    finally:
        mp.undo()
    assert sorted(lrs, key=float) == grid
    for system in lm_study.SYSTEMS:
        assert sorted(p.name for p in (tmp_path / "sweep" / system).iterdir()) == sorted(
            f"lr{lr}" for lr in grid
        )
        optimum = best * (1.2 if system == "matched" else 1)
        assert chosen[system] == min(grid, key=lambda lr: abs(math.log(float(lr) / optimum)))
    from studies.study_report import widened_sweep

    said = widened_sweep({"lrs": lrs, "lrs_given": given.split(","), "sweep_widenings": 2})
    added = [lr for lr in grid if lr not in given.split(",")]
    assert (f"also ran {', '.join(added)}" in said) if added else said == ""


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--sweep-widenings", "two"], "--sweep-widenings"),
        (["--only", "compositional"], "--only compositional"),
        (["--only", "stock:1"], "--only stock:1"),
        (["--only", "matched:4"], "--only matched:4"),
    ],
)
def test_lm_study_bad_option_values(argv, named):
    from studies import lm_study
    from studies.runs import ExperimentError

    with pytest.raises(ExperimentError, match=named):
        lm_study.parse(argv, "study-lm.sh")


def test_lm_study_only():
    from studies import lm_study

    args = lm_study.parse(["--only", "compositional:1,matched:3"], "study-lm.sh")
    assert args.only == {("compositional", 1), ("matched", 3)}
    assert lm_study.parse([], "study-lm.sh").only is None
