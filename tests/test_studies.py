"""The issue-14 studies: scripts/study-{nmt,lm}.sh, compare-nmt.sh's seeds/selection/resume,
compare-lm.sh, study-report.py and the study configs (cheap checks; the studies themselves are
long runs)."""

import sys

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


@pytest.mark.parametrize("kind", ["nmt", "lm"])
def test_study_prepares_data_once_then_runs_the_comparison(kind, tmp_path, monkeypatch):
    """What `study-nmt` / `study-lm` run (in-process, with the subprocess and the exec stubbed):
    the data preparation when its dictionary is missing, the invocation file, then the
    comparison pipeline with the study's configs, the smoke budget and the options after `--`."""
    from plugin_tools.experiments import studies

    ran, execd = [], []
    monkeypatch.setattr(studies.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or _Done())

    def fake_exec(prog, argv):
        execd.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(studies.os, "execvp", fake_exec)
    monkeypatch.chdir(tmp_path)  # the study changes to the checkout; restored afterwards
    out = tmp_path / "out"
    argv = ["--out", str(out), "--smoke", "--threads", "1", "--", "--skip-train"]
    usage = f"scripts/study-{kind}.sh"
    with pytest.raises(SystemExit):
        studies.run_study(kind, argv, f"study-{kind}.sh", usage)
    data = {"nmt": "data-bin/multi30k.en-de-smoke", "lm": "data-bin/wikitext-2-smoke"}[kind]
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
    assert len(configs) == (4 if kind == "nmt" else 2)
    if kind == "nmt":
        assert cmd[cmd.index("--seeds") + 1] == "1" and "--select-epochs" in cmd
    else:
        assert cmd[cmd.index("--context-window") + 1] == "128"


class _Done:
    returncode = 0


def _source(cfg, expr):
    script = f'set -euo pipefail; source "$1"; {expr}'
    return run(["bash", "-c", script, "x", cfg]).stdout


def test_nmt_study_configs():
    cfgs = {c.stem: c for c in (ROOT / "configs" / "nmt").glob("multi30k-ende-*.sh")}
    base_args = _source(cfgs["multi30k-ende-baseline"], 'printf "%s\\n" "${TRAIN_ARGS[@]}"')
    expected_extra = {
        "multi30k-ende-baseline": ("transformer", []),
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
    for stem, (arch, extra) in expected_extra.items():
        out = _source(
            cfgs[stem], 'echo "$NAME|$ARCH|$SRC|$TGT|$BEAM"; printf "%s\\n" "${TRAIN_ARGS[@]}"'
        )
        first, *args = out.splitlines()
        assert first == f"{stem}|{arch}|en|de|5"
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
    cfgs = {c.stem: c for c in (ROOT / "configs" / "lm").glob("wikitext2-study-*.sh")}
    assert set(cfgs) == {"wikitext2-study-baseline", "wikitext2-study-compositional"}
    from model_testing import parse_lm_config

    parsed = {}
    for stem, cfg in cfgs.items():
        lines = _source(cfg, 'echo "$ARCH"; printf "%s\\n" "${TRAIN_ARGS[@]}"').splitlines()
        parsed[stem] = (lines[0], parse_lm_config(lines[0], " ".join(map(repr, lines[1:]))))
    (ab, b), (ac, c) = parsed["wikitext2-study-baseline"], parsed["wikitext2-study-compositional"]
    assert (ab, ac) == ("transformer_lm", "compositional_transformer_lm")
    for k in ("max_update", "max_tokens", "tokens_per_sample", "update_freq", "decoder_embed_dim"):
        assert getattr(b, k) == getattr(c, k), k  # the same tokens and widths
    assert c.share_decoder_layers and not getattr(b, "share_decoder_layers", False)
    assert c.num_searches == c.num_retrievals == c.decoder_attention_heads == 4
    # parameter counts within 2% (the vocabulary of WikiText-2: 33,276 words + 4 specials)
    from types import SimpleNamespace

    from fairseq.data import Dictionary
    from fairseq.models import build_model

    d = Dictionary()
    for i in range(33280 - len(d)):
        d.add_symbol(f"w{i}")
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d)
    n = {
        k: sum(p.numel() for p in build_model(a, task).parameters()) for k, (_, a) in parsed.items()
    }
    ratio = n["wikitext2-study-compositional"] / n["wikitext2-study-baseline"]
    assert abs(ratio - 1) < 0.02, n


@pytest.mark.slow
def test_compare_nmt_selection_seeds_resume(demo_bin, tmp_path):
    """Selection (2 candidates), --seeds, --train-args, then a second run that skips everything;
    study-report.py writes the document with the smoke label."""
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
    cmd += ["--doc", doc, "--smoke"]
    first = run(cmd, env=ENV)
    assert "selected" in first.stderr
    selection = (out / "gbest" / "selection.txt").read_text().splitlines()
    assert selection[0].startswith("winner\t") and selection[1] == "epochs\t1"
    assert {ln.split("\t")[0] for ln in selection[2:]} == {"gsum", "gself"}
    log = (out / "gbest" / "seed3" / "train.log").read_text()
    # the winner's 1-epoch run continued to the 2-epoch cap from its checkpoint
    assert "resuming from checkpoint_last.pt" in log and "| epoch 002 |" in log
    assert "--seed 3" in (out / "base" / "seed3" / "commands.txt").read_text()
    report = (out / "REPORT.md").read_text()
    assert "## Paired significance against base-seed3" in report
    res = (out / "significance-seed3.json").read_text()
    assert '"chrF"' in res
    text = doc.read_text()
    assert "Smoke run, not results" in text and "| gbest |" in text
    assert (doc.parent / "results-curves.png").read_bytes()[:4] == b"\x89PNG"

    again = run(cmd, env=ENV)  # resumable: nothing is trained or decoded again
    assert again.stderr.count("already trained") == 2
    assert again.stderr.count("already decoded") == 2
    assert "training" not in again.stderr.replace("already trained", "")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
