"""The results model of the study reports (study_report.py): what a study's output folder holds
(runs.tsv, each run's train.log, train.seconds, eval-*.txt, generate-*.txt, selection.txt, the
LM study's plan.json, result.json files and params.json), read into dataclasses in one place. The
report computes on these and never reads back a document it wrote."""

import csv
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from plugin_tools import seq_accuracy

from .runs import ExperimentError


class ReportError(ExperimentError):
    pass


# --------------------------------------------------------------------------------------------
# a fairseq-train log

VALID = re.compile(r"\| valid \| (.*)$")
TRAIN_EPOCH = re.compile(r"\| train \| (.*)$")
PARAMS = re.compile(r"num\. (?:shared )?model params: ([0-9,]+)")


def _fields(rest):
    out = {}
    for part in rest.split(" | "):
        parts = part.strip().split(" ")
        if len(parts) == 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def parse_train_log(path):
    """params, validation records, train epoch records of a fairseq-train log (simple format)."""
    p = Path(path)
    if not p.is_file():
        raise ReportError(f"{path}: no such file")
    params, valid, train = None, [], []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        if params is None and (m := PARAMS.search(line)):
            params = int(m.group(1).replace(",", ""))
        if m := VALID.search(line):
            valid.append(_fields(m.group(1)))
        elif m := TRAIN_EPOCH.search(line):
            train.append(_fields(m.group(1)))
    return {"params": params, "valid": valid, "train": train}


LOADED = re.compile(r"loaded ([0-9,]+) examples from: (\S+)")
LM_DICT = re.compile(r"dictionary: ([0-9,]+) types")


def data_facts(run_dir):
    """Examples per split (train/valid/test) and the LM dictionary size, from the run's logs."""
    facts = {}
    for name in ("train.log", "generate.log", "eval-test.log"):
        f = Path(run_dir) / name
        if not f.is_file():
            continue
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            if m := LOADED.search(line):
                split = Path(m.group(2)).name.split(".")[0]
                facts.setdefault(split, int(m.group(1).replace(",", "")))
            elif "types" in line and (m := LM_DICT.search(line)):
                facts.setdefault("dict", int(m.group(1).replace(",", "")))
    return facts


def length_ratio(run_dir):
    """Hypothesis over reference length on the decoded subset, in the post-processed (Moses) tokens
    of fairseq-generate's H- and T- lines: why BLEU and chrF can disagree (BLEU's brevity penalty
    below 1; above 1, extra words only lower its n-gram precisions). None without one output."""
    outputs = sorted(Path(run_dir).glob("generate-*.txt"))
    if len(outputs) != 1:
        return None
    with open(outputs[0], encoding="utf-8", errors="replace") as fh:
        hyps, refs, _ = seq_accuracy.parse_generate_output(fh)
    hyp = sum(len(h.split()) for h in hyps.values())
    ref = sum(len(r.split()) for r in refs.values())
    return hyp / ref if ref else None


def read_seconds(run_dir, name="train.seconds"):
    f = Path(run_dir) / name
    if not f.is_file():
        return None, None
    parts = f.read_text().split()
    wall = float(parts[0]) if parts else None
    cpu = float(parts[1]) if len(parts) > 1 else None
    return wall, cpu


def read_text(path, default=""):
    p = Path(path)
    return p.read_text(encoding="utf-8").strip() if p.is_file() else default


# --------------------------------------------------------------------------------------------
# runs and their statistics


@dataclass
class Run:
    """A row of OUT/runs.tsv (or a run the LM study lists): its name, seed ('' for none) and
    folder; FIELDS holds the other columns (arch, src, tgt, beam, lenpen, selected ...)."""

    name: str
    dir: str
    seed: str = ""
    fields: dict = field(default_factory=dict)

    def __getitem__(self, key):
        return getattr(self, key) if key in ("name", "dir", "seed") else self.fields[key]

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    @property
    def label(self):
        return self.name + (f" (seed {self.seed})" if self.seed else "")


def read_runs(out):
    f = Path(out) / "runs.tsv"
    if not f.is_file():
        raise ReportError(f"{f}: no such file (run scripts/compare-{{nmt,lm}}.sh first)")
    with open(f, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        raise ReportError(f"{f}: no runs")
    return [Run(r.pop("name"), r.pop("dir"), r.pop("seed", None) or "", fields=r) for r in rows]


@dataclass
class RunStats:
    """What a run's train.log and train.seconds say."""

    params: int | None
    epochs: int | None
    updates: int | None
    best_loss: float | None
    best_ppl: float | None
    best_epoch: int | None
    wps: float | None
    tokens: float | None
    wall: float | None
    cpu: float | None
    n_valid: int

    @property
    def per_cpu(self):
        """Target tokens trained per CPU second (robust to a shared machine, unlike fairseq's
        wps)."""
        return self.tokens / self.cpu if self.tokens and self.cpu else None


def _tokens_trained(train):
    """Per epoch line, words per batch x updates of that epoch."""
    tokens, prev = 0.0, 0
    for t in train:
        n = int(t.get("num_updates", prev))
        tokens += t.get("wpb", 0.0) * max(n - prev, 0)
        prev = n
    return tokens


def run_stats(run_dir):
    log = parse_train_log(Path(run_dir) / "train.log")
    wall, cpu = read_seconds(run_dir)
    valid = [v for v in log["valid"] if "loss" in v]
    best = min(valid, key=lambda v: v["loss"]) if valid else None
    updates = next(
        (int(r["num_updates"]) for r in reversed(log["train"] + valid) if "num_updates" in r),
        None,
    )
    wps = [t["wps"] for t in log["train"] if "wps" in t]
    return RunStats(
        params=log["params"],
        epochs=int(log["train"][-1].get("epoch", 0)) if log["train"] else None,
        updates=updates,
        best_loss=best["loss"] if best else None,
        best_ppl=best.get("ppl") if best else None,
        best_epoch=int(best["epoch"]) if best and "epoch" in best else None,
        wps=statistics.mean(wps) if wps else None,
        tokens=_tokens_trained(log["train"]) or None,
        wall=wall,
        cpu=cpu,
        n_valid=len(valid),
    )


@dataclass
class Selection:
    """OUT/NAME/selection.txt of a fused system: the winner (a config path), the epochs each
    candidate trained, and the candidates as their rows (name, config, best validation loss)."""

    winner: str | None
    epochs: str | None
    candidates: list

    def losers(self):
        """The names of the candidates that lost (the winner's run is its system's run)."""
        return [c[0] for c in self.candidates if len(c) > 1 and c[1] != self.winner]


def read_selection(path):
    rows = [tuple(ln.split("\t")) for ln in Path(path).read_text(encoding="utf-8").splitlines()]
    winner = next((r[1] for r in rows if r[0] == "winner"), None)
    epochs = next((r[1] for r in rows if r[0] == "epochs"), None)
    return Selection(winner, epochs, [r for r in rows if r[0] not in ("winner", "epochs")])


def load_significance(out, seed):
    stem = f"significance-seed{seed}" if seed else "significance"
    f = Path(out) / f"{stem}.json"
    if not f.is_file():
        raise ReportError(f"{f}: no such file (did scripts/compare-nmt.sh finish?)")
    return json.loads(f.read_text(encoding="utf-8"))


def eval_result(path):
    """eval-{valid,test}.txt of an LM run: ppl, loss and the evaluation setting."""
    out = {}
    for line in read_text(path).splitlines():
        if line.startswith("ppl: "):
            out["ppl"] = float(line.split()[1])
        elif line.startswith("loss: "):
            out["loss"] = float(line.split()[1])
        elif line.startswith("subset: "):
            out["setting"] = line[len("subset: ") :]
    return out


# --------------------------------------------------------------------------------------------
# the LM study (studies/lm_study.py)


@dataclass
class ParamCount:
    """A row of OUT/params.json: the architecture with its arguments and its parameter count."""

    arch_and_flags: str
    parameters: int

    @property
    def arch(self):
        return self.arch_and_flags.split()[0]


def read_param_counts(path):
    """OUT/params.json, what ``scripts/param-counts.py --json`` printed for the study (an input
    the study archives beside its runs; the report does not write it)."""
    if not path.is_file():
        raise ReportError(f"{path}: no such file (run scripts/study-lm.sh first)")
    try:
        rows = json.loads(path.read_text())
        return [ParamCount(r["arch_and_flags"], int(r["parameters"])) for r in rows]
    except (ValueError, KeyError, TypeError) as e:
        raise ReportError(f"{path}: not a parameter-count list ({e})") from None


@dataclass
class LmStudy:
    """An LM study folder: its plan, the sweep's and the seeds' result.json files, the chosen
    learning rates and the parameter counts."""

    out: Path
    plan: dict
    lrs: list  # ascending
    sweep: dict  # system -> lr -> result.json
    results: dict  # system -> [result.json per seed]
    chosen: dict  # system -> (lr, at the edge of the grid)
    params: list  # ParamCount per system, in the plan's order

    @property
    def systems(self):
        return self.plan["systems"]

    @property
    def seeds(self):
        return self.plan["seeds"]

    def test_word_ppl(self):
        return {s: [r["eval"]["test"]["word_ppl"] for r in self.results[s]] for s in self.systems}


def _result(path):
    if not path.is_file():
        raise ReportError(f"{path}: no such file (did scripts/study-lm.sh finish?)")
    return json.loads(path.read_text())


def load_lm_study(out):
    from . import study_stats

    out = Path(out)
    plan_file = out / "plan.json"
    if not plan_file.is_file():
        raise ReportError(f"{plan_file}: no such file (run scripts/study-lm.sh first)")
    plan = json.loads(plan_file.read_text())
    systems, seeds = plan["systems"], plan["seeds"]
    lrs = sorted(plan["lrs"], key=float)  # --lrs may come in any order
    sweep = {
        s: {lr: _result(out / "sweep" / s / f"lr{lr}" / "result.json") for lr in lrs}
        for s in systems
    }
    results = {s: [_result(out / s / f"seed{k}" / "result.json") for k in seeds] for s in systems}
    chosen = {
        s: study_stats.choose_lr({lr: r["valid_ppl"] for lr, r in sweep[s].items()})
        for s in systems
    }
    params = read_param_counts(out / "params.json")
    if len(params) != len(systems):
        raise ReportError(f"{out / 'params.json'}: {len(params)} rows for {len(systems)} systems")
    return LmStudy(out, plan, lrs, sweep, results, chosen, params)
