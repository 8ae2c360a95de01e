"""Usage: scripts/study-report.py nmt|lm|lm-study OUT --doc FILE [--smoke]
       scripts/study-report.py archive ARCHIVE --doc FILE
       (the same: scripts/experiment.py report nmt|lm ...)

`report nmt|lm`: write the results document of a study from its outputs.

  study-report.py nmt OUT --doc docs/results-nmt.md [--smoke]   # OUT of scripts/compare-nmt.sh
  study-report.py lm  OUT --doc docs/results-lm.md  [--smoke]   # OUT of scripts/compare-lm.sh
  study-report.py lm-study OUT --doc docs/results-lm.md [--smoke] # OUT of scripts/study-lm.sh
  study-report.py archive docs/study-runs/nmt-ende --doc docs/results-nmt.md
  study-report.py archive docs/study-runs/nmt-deen --doc docs/results-nmt-deen.md
  study-report.py archive docs/study-runs/lm --doc docs/results-lm.md

Reads OUT/runs.tsv, every run's train.log, train.seconds (wall and CPU seconds of training),
selection.txt, the significance JSON files (nmt) and eval-{valid,test}.txt (lm); writes the
document (tables, the learning curves copied next to it as DOC-stem-curves.png, the exact
commands and the wall time). --smoke labels the document "smoke run, not results".
`archive` regenerates a committed results document from the committed run archive alone
(docs/study-runs/...; no training, checkpoints or corpora): the runs are restored into a
temporary study folder, the NMT significance tests recomputed from the archived hypotheses.
The document holds no time, machine or absolute path: the same runs give the same bytes on any
machine. The machine the runs were made on and how the document was written (relative paths,
no time) go to DOC-stem.provenance.json.
Errors (missing or malformed outputs): one line on stderr, exit code 2.
"""

import csv
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import plot_curves, seq_accuracy
from . import run_archive, study_stats
from .runs import ROOT, ExperimentError, Parser

PROG = "study-report.py"
SMOKE_BANNER = (
    "> **Smoke run, not results.** This document was generated from a pipeline check at a tiny "
    "budget (a slice of the data, a few updates). Its numbers say nothing about the "
    "architectures; the study itself has not been run yet. Run it with `{command}` (it "
    "rewrites this document)."
)
STUDY_COMMAND = {
    "nmt": "bash scripts/study-nmt.sh",
    "lm": "bash scripts/study-lm.sh",
    "lm-study": "bash scripts/study-lm.sh",
}
# Each committed results document: (the study that makes it, its output folder, its archive,
# the document). The document names these, never the folder or the machine it was written on.
STUDIES = {
    ("nmt", "en-de"): (
        "bash scripts/study-nmt.sh",
        "outputs/study-nmt",
        "docs/study-runs/nmt-ende",
        "docs/results-nmt.md",
    ),
    ("nmt", "de-en"): (
        "bash scripts/study-nmt.sh --direction de-en",
        "outputs/study-nmt-deen",
        "docs/study-runs/nmt-deen",
        "docs/results-nmt-deen.md",
    ),
    ("lm-study", ""): (
        "bash scripts/study-lm.sh",
        "outputs/study-lm",
        "docs/study-runs/lm",
        "docs/results-lm.md",
    ),
}
# The reference point of the NMT baseline: published from-scratch, text-only Multi30k
# task-1 scores on test 2016 flickr, each read in the source named; none is
# scored as we score, and the text says how each differs.
PUBLISHED_NMT = (
    "Published from-scratch, text-only scores on the same test set (Multi30k task 1, "
    "test_2016_flickr, 1,000 sentences; no pre-training, no extra data), none of them scored "
    "as we score (detokenized, cased sacreBLEU and chrF2):\n\n"
    '- En→De, the closest in size: Wu et al. (ACL 2021, "Good for Misconceived Reasons"), '
    "the text-only Transformer-Tiny (fairseq, 4+4 layers, d 128, ffn 256, 4 heads, shared "
    "embeddings, dropout 0.3; about 2.6M parameters, our estimate, not stated by the authors): "
    "BLEU 41.02, as the authors' repository prints it "
    "(github.com/LividWo/Revisit-MMT, README-baseline.md; we could not read the paper's own "
    "table). Tokenized, lowercased fairseq BLEU on Moses-tokenized text (BPE removed), 8,000 "
    "updates on 2 GPUs, the average of the last 10 checkpoints, beam 5: lowercasing and "
    "tokenization alone raise BLEU over detokenized cased sacreBLEU, and the model is trained to "
    "convergence, so it is an upper reference for our CPU budget, not a like-for-like one.\n"
    "- En→De, older recurrent baselines: Elliott and Kádár (IJCNLP 2017), text-only GRU NMT, "
    "BLEU 35.5 ± 0.8 and METEOR 54.0 ± 0.6 over 3 runs (lowercased, tokenized); Calixto, Liu and "
    "Campbell (ACL 2017), text-only GRU NMT trained on Multi30k only, BLEU 33.7, METEOR 52.3, "
    "chrF3 65.2 (cased, tokenized; chrF3 weighs recall with β = 3, not sacreBLEU's chrF2).\n"
    "- De→En: Calixto and Liu (EMNLP 2017), the same text-only GRU NMT, BLEU 38.2, METEOR 35.8 "
    "(cased, tokenized).\n\n"
    "The two GRU papers' numbers were read in PDF copies held in a public repository "
    "(github.com/ZihengZZH/awesome-multimodal-machine-translation, folder paper/). A "
    "like-for-like number would need a released system output rescored with our sacreBLEU "
    "signature; none of these papers ships one that we could find."
)


class ReportError(ExperimentError):
    pass


# --------------------------------------------------------------------------------------------
# reading the outputs

VALID = re.compile(r"\| valid \| (.*)$")
TRAIN_EPOCH = re.compile(r"\| train \| (.*)$")
PARAMS = re.compile(r"num\. (?:shared )?model params: ([0-9,]+)")


def _fields(rest):
    out = {}
    for field in rest.split(" | "):
        parts = field.strip().split(" ")
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


def read_runs(out):
    f = Path(out) / "runs.tsv"
    if not f.is_file():
        raise ReportError(f"{f}: no such file (run scripts/compare-{{nmt,lm}}.sh first)")
    with open(f, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        raise ReportError(f"{f}: no runs")
    return rows


def run_stats(run_dir):
    log = parse_train_log(Path(run_dir) / "train.log")
    wall, cpu = read_seconds(run_dir)
    valid = [v for v in log["valid"] if "loss" in v]
    best = min(valid, key=lambda v: v["loss"]) if valid else None
    epochs = int(log["train"][-1].get("epoch", 0)) if log["train"] else None
    updates = None
    for rec in reversed(log["train"] + valid):
        if "num_updates" in rec:
            updates = int(rec["num_updates"])
            break
    wps = [t["wps"] for t in log["train"] if "wps" in t]
    # tokens trained: per epoch line, words per batch x updates of that epoch
    tokens, prev = 0.0, 0
    for t in log["train"]:
        n = int(t.get("num_updates", prev))
        tokens += t.get("wpb", 0.0) * max(n - prev, 0)
        prev = n
    return {
        "params": log["params"],
        "epochs": epochs,
        "updates": updates,
        "best_loss": best["loss"] if best else None,
        "best_ppl": best.get("ppl") if best else None,
        "best_epoch": int(best["epoch"]) if best and "epoch" in best else None,
        "wps": statistics.mean(wps) if wps else None,
        "tokens": tokens or None,
        "wall": wall,
        "cpu": cpu,
        "n_valid": len(valid),
    }


# --------------------------------------------------------------------------------------------
# formatting


def per_cpu(st):
    """Target tokens trained per CPU second (robust to a shared machine, unlike fairseq's wps)."""
    return st["tokens"] / st["cpu"] if st["tokens"] and st["cpu"] else None


def fmt(x, spec="{:,.0f}", none="-"):
    return none if x is None else spec.format(x)


def fmt_p(p):
    return "-" if p is None else f"{p:.4f}{'*' if p < 0.05 else ''}"


def table(header, rows, align=None, text_cols=1):
    align = align or ["---"] * text_cols + ["---:"] * (len(header) - text_cols)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for mod in ("torch", "fairseq", "sacrebleu"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001 - a version is only informative
            pass
    return (
        f"{platform.node() or 'host'}: {os.cpu_count()} logical CPUs ({cpu}), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
        f"Python {platform.python_version()}, {', '.join(versions)}"
    )


def read_text(path, default=""):
    p = Path(path)
    return p.read_text(encoding="utf-8").strip() if p.is_file() else default


def copy_curves(out, doc):
    src = Path(out) / "curves.png"
    if not src.is_file():
        return None
    dst = doc.with_name(f"{doc.stem}-curves.png")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst.name


def header(title, smoke, out, kind):
    lines = [f"# {title}" + (" (smoke run, not results)" if smoke else ""), ""]
    if smoke:
        lines += [SMOKE_BANNER.format(command=STUDY_COMMAND[kind[0]]), ""]
    study = STUDIES.get(kind)
    if study and not smoke:
        lines += [
            f"Generated by `scripts/study-report.py` from the runs of `{study[0]}`, archived in "
            f"`{study[2]}`; `python scripts/study-report.py archive {study[2]} --doc "
            f"{study[3]}` regenerates it from that archive alone (no training). The machine the "
            "runs were made on: the `.provenance.json` file of the same name.",
            "",
        ]
    return lines


def scrub_history(text):
    """A config comment quoted in a document, without the issue numbers of its planning."""
    text = re.sub(r"\(issues? [0-9]+(?: and [0-9]+)?: ", "(", text)
    text = re.sub(r" \(issues? [0-9]+(?: and [0-9]+)?\)", "", text)
    text = re.sub(r"\bIssue [0-9]+ \(", "This study (", text)
    return re.sub(r"\bthe issue-[0-9]+ ", "the earlier ", text)


def commands_section(out, runs, key_dir="dir", kind=None):
    """The study's command (the one that writes the document) and each run's commands as
    executed."""
    study = STUDIES.get(kind)
    lines = ["## Commands", ""]
    if study:
        lines += ["The study, one command (resumable; it writes this document):", "", "```"]
        lines += [study[0], "```", ""]
    lines += ["Each run, as executed:", ""]
    for r in runs:
        label = r["name"] + (f" (seed {r['seed']})" if r.get("seed") else "")
        lines += [f"<details><summary>{label}</summary>", "", "```"]
        lines.append(read_text(Path(r[key_dir]) / "commands.txt", "(commands.txt missing)"))
        lines += ["```", "", "</details>", ""]
    return lines


# --------------------------------------------------------------------------------------------
# NMT


def load_significance(out, seed):
    stem = f"significance-seed{seed}" if seed else "significance"
    f = Path(out) / f"{stem}.json"
    if not f.is_file():
        raise ReportError(f"{f}: no such file (did scripts/compare-nmt.sh finish?)")
    return json.loads(f.read_text(encoding="utf-8"))


def nmt_doc(out, smoke):
    runs = read_runs(out)
    seeds = list(dict.fromkeys(r["seed"] for r in runs))
    names = list(dict.fromkeys(r["name"] for r in runs))
    baseline = names[0]
    stats = {(r["name"], r["seed"]): run_stats(r["dir"]) for r in runs}
    sig = {s: load_significance(out, s) for s in seeds}
    r0 = runs[0]
    lang = {"en": "English", "de": "German"}
    pair = f"{lang.get(r0['src'], r0['src'])}→{lang.get(r0['tgt'], r0['tgt'])}"
    kind = ("nmt", f"{r0['src']}-{r0['tgt']}")
    lines = header(f"Multi30k {pair}: stock vs the plugin's systems", smoke, out, kind)
    facts = data_facts(r0["dir"])
    sizes = ", ".join(f"{k} {facts[k]:,} pairs" for k in ("train", "valid", "test") if k in facts)
    lines += [
        "**Question**: on a real corpus, do these architectures train as well "
        "as the stock baseline and as a stock model of the largest system's parameter count, at "
        "what cost, and is a difference larger than the variation between training seeds?",
        "",
        "## Setup",
        "",
        f"- Data: Multi30k task 1 {r0['src']}→{r0['tgt']}, valid = val, test = test_2016_flickr "
        f"({sizes}; the full corpus: 29,000 / 1,014 / 1,000), `scripts/prepare-multi30k.sh` "
        "(Moses tokenization, joint sentencepiece BPE, joined dictionary).",
        "- One recipe for every system (configs/nmt/multi30k-ende-baseline.sh"
        + ("" if r0["src"] == "en" else ", which the de→en configs source, swapping the languages")
        + "; the others change the architecture only, the -baseline-wide system the ffn width); "
        "the exact fairseq-train commands are under Commands.",
        f"- Decoding: checkpoint_best.pt (lowest validation loss), beam {r0['beam']}, lenpen "
        f"{r0['lenpen']}, on the test subset; every sentence scored.",
        "- Scores: detokenized sacreBLEU and chrF (sacremoses-detokenized fairseq output against the "
        "detokenized references; signatures below) and tokenized BLEU (multi-bleu style on the "
        "Moses tokens); hyp/ref length: hypothesis over reference tokens on the test set (BLEU's "
        "brevity penalty acts below 1; above 1 the extra words lower BLEU's precisions, and chrF, "
        "which weights recall twice, less). "
        "Paired bootstrap resampling and paired approximate randomization "
        "(sacrebleu's implementation via `scripts/significance.sh`) against the baseline "
        f"**{baseline}** per seed, Holm's correction over the seed's comparisons (bootstrap, BLEU "
        "and chrF); across seeds, paired t-tests of the per-seed scores with Holm's correction "
        "over all comparisons; * marks p < 0.05 (two-sided).",
        f"- Seeds: {', '.join(s or 'the config seed' for s in seeds)}.",
        "",
    ]
    sel = []
    for n in names:
        f = Path(out) / n / "selection.txt"
        if f.is_file():
            rows = [ln.split("\t") for ln in f.read_text(encoding="utf-8").splitlines()]
            winner = next(r[1] for r in rows if r[0] == "winner")
            epochs = next(r[1] for r in rows if r[0] == "epochs")
            cands = [r for r in rows if r[0] not in ("winner", "epochs")]
            sel.append(
                f"- **{n}**: candidates trained {epochs} epoch(s) each (first seed); best validation "
                "loss: "
                + ", ".join(
                    f"{c[0]} {float(c[2]):.3f}" + (" (**chosen**)" if c[1] == winner else "")
                    for c in cands
                )
                + ". The chosen run continued from that checkpoint; the other candidate's epochs "
                "count in the budget below but not in its row."
            )
    if sel:
        lines += ["## Fusion chosen on validation", ""] + sel + [""]

    lines += ["## Results", ""]
    for s in seeds:
        res = sig[s]
        m = res["metrics"]
        by = {k: {r["system"]: r for r in v["rows"]} for k, v in m.items()}
        header_row = ["System", "Arch", "Params", "Epochs (best)", "Best valid loss", "BLEU"]
        header_row += ["chrF"] if "chrF" in m else []
        header_row += ["tok-BLEU", "Hyp/ref length", "ΔBLEU", "p bs", "p ar", "p bs (Holm)"]
        header_row += (
            ["ΔchrF", "p bs (chrF)", "p ar (chrF)", "p bs (chrF, Holm)"] if "chrF" in m else []
        )
        holm_bs = seed_holm(m)
        header_row += ["Train wall (s)", "Train CPU (s)", "words/s (wall)", "words/CPU-s"]
        rows = []
        for r in (r for r in runs if r["seed"] == s):
            st = stats[(r["name"], s)]
            b = by["BLEU"][r["name"]]
            arch = f"`{r['arch']}`" + (f" ({r['selected']})" if r.get("selected") else "")
            row = [
                r["name"],
                arch,
                fmt(st["params"]),
                f"{fmt(st['epochs'])} ({fmt(st['best_epoch'])})",
                fmt(st["best_loss"], "{:.3f}"),
                f"{b['score']:.2f}",
            ]
            if "chrF" in m:
                row.append(f"{by['chrF'][r['name']]['score']:.2f}")
            row.append(f"{by['tok-BLEU'][r['name']]['score']:.2f}")
            row.append(fmt(length_ratio(r["dir"]), "{:.3f}"))
            row += [fmt(b["delta"], "{:+.2f}"), fmt_p(b["p_bs"]), fmt_p(b["p_ar"])]
            row.append(fmt_p(holm_bs.get(("BLEU", r["name"]))))
            if "chrF" in m:
                c = by["chrF"][r["name"]]
                row += [fmt(c["delta"], "{:+.2f}"), fmt_p(c["p_bs"]), fmt_p(c["p_ar"])]
                row.append(fmt_p(holm_bs.get(("chrF", r["name"]))))
            row += [fmt(st["wall"]), fmt(st["cpu"]), fmt(st["wps"]), fmt(per_cpu(st))]
            rows.append(row)
        lines += [
            f"### Test 2016 flickr{f', seed {s}' if s else ''}",
            "",
            table(header_row, rows, text_cols=2),
            "",
            f"{res['sentences']} sentences; bootstrap {res['settings']['resamples']} resamples, "
            f"approximate randomization {res['settings']['trials']} trials. Signatures:",
            "",
        ]
        for k, v in m.items():
            lines.append(f"- {k} ({v['description']}): `{v['signature_bs']}`")
        lines.append("")
    if len(seeds) > 1:
        rows = []
        for n in names:
            vals = {
                k: [
                    {r["system"]: r for r in sig[s]["metrics"][k]["rows"]}[n]["score"]
                    for s in seeds
                ]
                for k in sig[seeds[0]]["metrics"]
            }
            rows.append(
                [n]
                + [f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}" for k, v in vals.items()]
            )
        lines += [
            "### Mean ± standard deviation over seeds",
            "",
            table(["System", *sig[seeds[0]]["metrics"].keys()], rows),
            "",
        ]
        entries = nmt_across_seed_entries(sig, seeds, names)
        test_table, across_reading = across_seed_tests(entries, len(seeds))
        lines += [
            "### Across seeds",
            "",
            "The test that speaks to the architectures: a paired t-test of each system's score "
            "against each baseline's over the training seeds (paired by seed; two-sided), "
            f"Holm's correction over all {len(entries)} comparisons of this table (* adjusted "
            "p < 0.05).",
            "",
            test_table,
            "",
        ]

    lines += ["## Reading", ""]
    if len(seeds) > 1:
        lines += [
            f"Across {len(seeds)} training seeds (the verdicts; Holm-corrected paired t-tests "
            "above):",
            "",
            *across_reading,
            "",
            "Per seed, on the test sentences of one trained model each (paired bootstrap and "
            "approximate randomization; they say nothing about the variance between seeds):",
            "",
        ]
    else:
        lines += [
            "One training seed: no test across seeds was possible, so no verdict on the "
            "architectures; per seed, on the test sentences:",
            "",
        ]
    for s in seeds:
        m = sig[s]["metrics"]
        for r in m["BLEU"]["rows"][1:]:
            c = (
                {x["system"]: x for x in m["chrF"]["rows"]}.get(r["system"])
                if "chrF" in m
                else None
            )
            p_holm = seed_holm(m)[("BLEU", r["system"])]
            sig_bs, sig_ar = p_holm < 0.05, r["p_ar"] < 0.05
            direction = "better" if r["delta"] > 0 else "worse"
            # Both tests resample test sentences of one trained model: they say nothing about
            # the variance between training seeds, so the verdict names its scope.
            if sig_bs and sig_ar:
                verdict = (
                    f"{direction} on the test sentences at this training seed (both "
                    "sentence-resampling tests p < 0.05, bootstrap Holm-corrected; not a test "
                    "across training seeds)"
                )
            elif sig_bs or sig_ar:
                verdict = "p < 0.05 in one sentence-resampling test only: no firm difference"
            else:
                verdict = "no difference on the test sentences (p >= 0.05 in both tests)"
            lines.append(
                f"- {r['system']}{f' (seed {s})' if s else ''}: BLEU {r['delta']:+.2f} vs "
                f"{baseline} (paired bootstrap p = {r['p_bs']:.4f}, Holm-adjusted over the seed's "
                f"comparisons {p_holm:.4f}; approximate randomization p = {r['p_ar']:.4f}): "
                f"{verdict}"
                + (f"; chrF {c['delta']:+.2f} (p = {c['p_bs']:.4f})" if c else "")
                + "."
            )
    at_last = [st["best_epoch"] == st["epochs"] for st in stats.values() if st["epochs"]]
    if at_last and all(at_last):
        # then the differences are at a fixed budget, not at convergence: say so
        lines += [
            "",
            f"Every run's best validation loss is at its last epoch ({len(at_last)} of "
            f"{len(at_last)} runs): the epoch budget, not convergence, ended training, so the "
            "comparison is at equal training budget; longer training may change it.",
        ]
    lines += ["", "## Reference point", "", PUBLISHED_NMT, ""]

    return lines, runs, stats, kind


def seed_holm(metrics):
    """Holm-adjusted paired-bootstrap p-values of one seed's significance JSON: the family is
    every (metric, system) against the baseline on BLEU and chrF. {(metric, system): p}."""
    keys = [
        (k, r["system"])
        for k in ("BLEU", "chrF")
        if k in metrics
        for r in metrics[k]["rows"][1:]
        if r.get("p_bs") is not None
    ]
    by = {k: {r["system"]: r for r in metrics[k]["rows"]} for k in ("BLEU", "chrF") if k in metrics}
    adjusted = study_stats.holm([by[k][n]["p_bs"] for k, n in keys])
    return dict(zip(keys, adjusted))


def nmt_across_seed_entries(sig, seeds, names):
    """The across-seed family of the NMT study: on BLEU and chrF, every system against the
    baseline (the first system) and every non-stock system against the wide baseline (a system
    whose name ends in -baseline-wide: stock at the parameter count of the largest system)."""
    metrics = [k for k in ("BLEU", "chrF") if k in sig[seeds[0]]["metrics"]]

    def scores(metric, name):
        return [
            {r["system"]: r for r in sig[s]["metrics"][metric]["rows"]}[name]["score"]
            for s in seeds
        ]

    wide = [n for n in names if n.endswith("-baseline-wide")]
    pairs = [(names[0], n) for n in names[1:]]
    pairs += [(w, n) for w in wide for n in names[1:] if n not in wide]
    return [(b, a, k, scores(k, a), scores(k, b), True) for k in metrics for a, b in pairs]


def planned_budget(out, name):
    """The '# Budget ...' paragraph of the first system's config (its copy OUT/NAME/config.sh)."""
    return scrub_history(config_comment(Path(out) / name / "config.sh", "# Budget"))


def budget_lines(runs, stats, extra_dirs=(), per="epoch", out=None):
    total_wall = sum(s["wall"] or 0 for s in stats.values())
    total_cpu = sum(s["cpu"] or 0 for s in stats.values())
    for d in extra_dirs:
        w, c = read_seconds(d)
        total_wall += w or 0
        total_cpu += c or 0
    rows = []
    for r in runs:
        s = stats[(r["name"], r.get("seed", ""))]
        if per == "epoch":
            per_unit = (s["cpu"] / s["epochs"]) if s["cpu"] and s["epochs"] else None
        else:
            per_unit = (1000 * s["cpu"] / s["updates"]) if s["cpu"] and s["updates"] else None
        rows.append(
            [
                r["name"] + (f" (seed {r['seed']})" if r.get("seed") else ""),
                fmt(s["updates"]),
                fmt(s["wall"]),
                fmt(s["cpu"]),
                fmt(per_unit),
            ]
        )
    return [
        "## Cost",
        "",
        table(
            [
                "Run",
                "Updates",
                "Train wall (s)",
                "Train CPU (s)",
                "CPU s / epoch" if per == "epoch" else "CPU s / 1000 updates",
            ],
            rows,
        ),
        "",
        f"Training in total: {total_wall / 60:.1f} min wall, {total_cpu / 60:.1f} min CPU "
        "(user + sys of fairseq-train, summed over resumed attempts"
        + (", the losing selection candidates included" if extra_dirs else "")
        + "). Decoding/evaluation not included. On a shared machine the wall time is inflated; "
        "the CPU time is close to what one thread alone would take.",
        "",
    ] + (
        [f"Planned (from `{runs[0]['name']}`'s config): {plan}", ""]
        if out and (plan := planned_budget(out, runs[0]["name"]))
        else []
    )


def closing_sections(out, doc, runs, curve_metric, kind=None):
    """The end of either document: learning curves (PNG beside the doc), machine, commands."""
    lines = []
    curves = copy_curves(out, doc)
    if curves:
        lines += [
            "## Learning curves",
            "",
            f"![{curve_metric} vs epoch and updates]({curves})",
            "",
            f"TensorBoard logs (when run with --tensorboard): `tensorboard --logdir {out}/tensorboard`.",
            "",
        ]
    return lines + commands_section(out, runs, kind=kind)


def write_nmt(out, doc, smoke):
    lines, runs, stats, kind = nmt_doc(out, smoke)
    # the losing selection candidates (the winner's run is part of its system's run)
    cand_dirs = []
    for f in sorted(Path(out).glob("*/selection.txt")):
        rows = [ln.split("\t") for ln in f.read_text(encoding="utf-8").splitlines()]
        winner = next((r[1] for r in rows if r[0] == "winner"), None)
        cand_dirs += [
            f.parent / "select" / r[0]
            for r in rows
            if r[0] not in ("winner", "epochs") and len(r) > 1 and r[1] != winner
        ]
    lines += budget_lines(runs, stats, cand_dirs, out=out)
    return lines + closing_sections(out, doc, runs, "validation loss", kind)


# --------------------------------------------------------------------------------------------
# LM


def eval_result(path):
    text = read_text(path)
    out = {}
    for line in text.splitlines():
        if line.startswith("ppl: "):
            out["ppl"] = float(line.split()[1])
        elif line.startswith("loss: "):
            out["loss"] = float(line.split()[1])
        elif line.startswith("subset: "):
            out["setting"] = line[len("subset: ") :]
    return out


# Mittal et al.'s WikiText-103 result (docs/method.md §7): test perplexity, compositional vs
# multi-head, 6 shared layers of d 512, tokens per sample 512, context window 400.
PAPER_LM = {"compositional": 38.8, "baseline": 39.6}


def lm_reading(runs, stats):
    """The direction of each system's test perplexity against the baseline, next to the paper's."""
    base_run = runs[0]
    base = eval_result(Path(base_run["dir"]) / "eval-test.txt").get("ppl")
    paper = 100 * (PAPER_LM["compositional"] - PAPER_LM["baseline"]) / PAPER_LM["baseline"]
    lines = ["## Reading", ""]
    for r in runs[1:]:
        ppl = eval_result(Path(r["dir"]) / "eval-test.txt").get("ppl")
        if base is None or ppl is None:
            continue
        change = 100 * (ppl - base) / base
        holds = "holds" if (change < 0) == (paper < 0) else "does not hold"
        tokens = stats[(r["name"], "")]["tokens"]
        lines.append(
            f"- {r['name']}: test perplexity {ppl:.2f} against {base:.2f} for "
            f"{base_run['name']} ({change:+.1f}%). The paper's WikiText-103 result: "
            f"{PAPER_LM['compositional']} compositional vs {PAPER_LM['baseline']} multi-head "
            f"({paper:+.1f}%): the direction {holds} here. Budget: "
            + (f"{int(tokens):,} training tokens" if tokens else "the tokens above")
            + " (about one pass over WikiText-2's 2.1M) at this small shape, against a model "
            "of d 512 with 6 layers trained for its full schedule on WikiText-103's 103M tokens: "
            "both models are far from converged here (see the curves), so this is a "
            "comparison at equal tokens early in training, not of final perplexities."
        )
    return lines + [""] if len(lines) > 2 else []


def write_lm(out, doc, smoke):
    runs = read_runs(out)
    for r in runs:
        r.setdefault("seed", "")
    stats = {(r["name"], ""): run_stats(r["dir"]) for r in runs}
    lines = header("WikiText-2 language modelling: stock vs compositional", smoke, out, ("lm", ""))
    base = stats[(runs[0]["name"], "")]
    facts = data_facts(runs[0]["dir"])
    lines += [
        "**Question**: trained on the same tokens, does the compositional LM (the "
        "paper's recipe scaled down: shared pre-norm layers, S = R = heads) model WikiText-2 as "
        "well as a stock `transformer_lm` of the same size, and at what cost?",
        "",
        "## Setup",
        "",
        "- Data: WikiText-2, word level (v1 tokens) from `scripts/prepare-wikitext.sh 2`: "
        + ", ".join(f"{k} {facts[k]:,} lines" for k in ("train", "valid") if k in facts)
        + (f", dictionary {facts['dict']:,} types" if "dict" in facts else "")
        + " (the full corpus: 36,718 training lines, 33,280 types with the specials).",
        "- Models and training: configs/lm/wikitext2-study-*.sh (commands below); both see the "
        "same number of updates of the same batches, so the same tokens.",
        "- Evaluation: checkpoint_best.pt (lowest validation loss during training) with "
        "`scripts/eval-lm.sh` (fairseq-eval-lm with --context-window: every token scored with at "
        "least that much left context) on the full valid and test subsets.",
        "",
        "## Results",
        "",
    ]
    rows = []
    for r in runs:
        s = stats[(r["name"], "")]
        v = eval_result(Path(r["dir"]) / "eval-valid.txt")
        t = eval_result(Path(r["dir"]) / "eval-test.txt")
        dp = (
            f"{100 * (s['params'] - base['params']) / base['params']:+.2f}%"
            if s["params"] and base["params"]
            else "-"
        )
        rows.append(
            [
                r["name"],
                f"`{r['arch']}`",
                fmt(s["params"]),
                dp,
                fmt(s["updates"]),
                fmt(s["tokens"]),
                fmt(v.get("ppl"), "{:.2f}"),
                fmt(t.get("ppl"), "{:.2f}"),
                fmt(s["wps"]),
                fmt(per_cpu(s)),
                fmt(s["wall"]),
                fmt(s["cpu"]),
            ]
        )
    setting = eval_result(Path(runs[0]["dir"]) / "eval-test.txt").get("setting", "")
    lines += [
        table(
            [
                "System",
                "Arch",
                "Params",
                "vs baseline",
                "Updates",
                "Tokens trained",
                "Valid ppl",
                "Test ppl",
                "Train tokens/s (wall)",
                "Train tokens/CPU-s",
                "Train wall (s)",
                "Train CPU (s)",
            ],
            rows,
            text_cols=2,
        ),
        "",
        f"Evaluation: {setting}." if setting else "",
        "",
    ]
    lines += lm_reading(runs, stats)
    lines += budget_lines(runs, stats, per="1000 updates", out=out)
    return lines + closing_sections(out, doc, runs, "validation perplexity")


def finish(text, out, shown_out=None):
    """The document's text with no absolute path: the checkout's root removed, the study folder
    OUT shown as SHOWN_OUT (the study's own output folder when OUT is a temporary one)."""
    if shown_out:
        for form in {str(out), str(Path(out).resolve())}:
            text = text.replace(f"{form}/", f"{shown_out}/").replace(f"`{form}`", f"`{shown_out}`")
    return run_archive.relative_paths(text)


def shown_path(path):
    """PATH as a document or its provenance shows it: relative to the checkout when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(ROOT.resolve()))
    except ValueError:
        return run_archive.relative_paths(str(path))


def provenance_file(doc):
    return Path(doc).with_name(f"{Path(doc).stem}.provenance.json")


def write_provenance(doc, record):
    """DOC-stem.provenance.json beside DOC: where the runs were made and how the document was
    written (kept out of the document, which must not change with them). Relative paths only, no
    time of writing: the same runs written the same way give the same file."""
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    provenance_file(doc).write_text(text, encoding="utf-8")


def study_provenance(out, how):
    """The provenance of a document written from a study's own output folder OUT: the machine
    the runs were made on (this one: the study writes its document when its runs are done) and
    the study's invocation."""
    record = dict(runs_made_on=machine(), written_from=shown_path(out), written_by=how)
    for name in ("study-invocation.txt", "invocation.txt"):
        if (Path(out) / name).is_file():
            text = run_archive.relative_paths(read_text(Path(out) / name))
            record[name.removesuffix(".txt")] = text
    return record


def archive_provenance(archive, doc, kind):
    """The provenance of a document regenerated from ARCHIVE: the machine the runs were made on,
    carried from the provenance already beside DOC, else from the committed document's; the
    archive and the command, relative to the checkout."""
    record = {}
    for f in (provenance_file(doc), provenance_file(ROOT / STUDIES[kind][3])):
        try:
            old = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if "runs_made_on" in old:
            record["runs_made_on"] = old["runs_made_on"]
            break
    record["written_from"] = shown_path(archive)
    record["written_by"] = (
        f"scripts/study-report.py archive {shown_path(archive)} --doc {shown_path(doc)}"
    )
    return record


def write_doc(kind, out, doc, smoke, shown_out=None, how=None, provenance=None):
    writer = {"nmt": write_nmt, "lm": write_lm, "lm-study": write_lm_study}[kind]
    lines = writer(out, doc, smoke)
    doc.parent.mkdir(parents=True, exist_ok=True)
    text = finish("\n".join(lines).rstrip() + "\n", out, shown_out)
    doc.write_text(text, encoding="utf-8")
    if provenance is None:
        how = how or f"scripts/study-report.py {kind} {shown_path(out)} --doc {shown_path(doc)}"
        provenance = study_provenance(out, how)
    write_provenance(doc, provenance)


# --------------------------------------------------------------------------------------------
# regeneration from a committed archive


def _archived_runs(archive):
    """The run folders of an archive (a folder holding a done marker), relative to it."""
    found = {p.parent for m in run_archive.MARKERS for p in Path(archive).rglob(m)}
    return sorted(p.relative_to(archive) for p in found)


def _option(command, flag):
    words = command.split()
    return words[words.index(flag) + 1] if flag in words else None


def restore_nmt(archive, out):
    """A study folder OUT as scripts/compare-nmt.sh leaves it (runs.tsv, the significance JSON
    files, curves.png, config.sh copies), rebuilt from the archive of its finished runs."""
    from .studies import NMT_SYSTEMS

    archive, out = Path(archive), Path(out)
    rel = _archived_runs(archive)
    names = {str(r.parent) for r in rel}
    direction = next(
        d
        for d, systems in NMT_SYSTEMS.items()
        if all(n.split("-", 2)[-1] in systems for n in names)
        and any(f"-{d.replace('-', '')}-" in n for n in names)
    )
    src, tgt = direction.split("-")
    order = [f"multi30k-{src}{tgt}-{s}" for s in NMT_SYSTEMS[direction]]
    seeds = sorted({int(r.name.removeprefix("seed")) for r in rel})
    rows = []
    for seed in seeds:
        for name in order:
            run = archive / name / f"seed{seed}"
            if not (run / "generate.done").is_file():
                raise ReportError(f"{run}: not an archived run (no generate.done)")
            d = out / name / f"seed{seed}"
            run_archive.restore(run, d)
            sel = archive / name / "selection.txt"
            selected, cfg = "", f"configs/nmt/{name}.sh"
            if sel.is_file():
                shutil.copyfile(sel, out / name / "selection.txt")
                winner = next(
                    ln.split("\t")[1]
                    for ln in sel.read_text(encoding="utf-8").splitlines()
                    if ln.startswith("winner\t")
                )
                cfg, selected = winner, Path(winner).stem
            shutil.copyfile(ROOT / f"configs/nmt/{name}.sh", out / name / "config.sh")
            train, gen = read_text(d / "commands.txt").splitlines()[:2]
            rows.append(
                [name, str(seed), _option(train, "--arch"), cfg, str(d), src, tgt]
                + [_option(gen, "--beam"), _option(gen, "--lenpen"), selected]
            )
    with open(out / "runs.tsv", "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(
            ["name", "seed", "arch", "config", "dir", "src", "tgt", "beam", "lenpen"] + ["selected"]
        )
        w.writerows(rows)
    for seed in seeds:  # as compare-nmt.sh: every system against the first, per seed
        hyps = [str(out / n / f"seed{seed}" / "generate-test.txt") for n in order]
        cmd = [sys.executable, str(ROOT / "scripts/bleu-significance.py"), *hyps, "--names"]
        cmd += [*order, "--tokenized", "--lang", tgt, "--format", "markdown", "--json"]
        cmd += [str(out / f"significance-seed{seed}.json")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ReportError(f"bleu-significance.py failed: {proc.stderr.strip()[-300:]}")
    logs = [str(out / n / f"seed{s}" / "train.log") for s in seeds for n in order]
    labels = [n for _ in seeds for n in order]
    plot_curves.plot(logs, labels, "loss", ["epoch", "updates"], out / "curves.png", group=True)
    return ("nmt", direction)


def restore_lm(archive, out):
    """A study folder OUT as scripts/study-lm.sh leaves it, from the archive of its runs (with
    the study's plan.json and params.md, which the study saves beside them)."""
    archive, out = Path(archive), Path(out)
    for name in ("plan.json", "params.md"):
        if not (archive / name).is_file():
            raise ReportError(f"{archive / name}: no such file (not an LM study archive)")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(archive / name, out / name)
    for rel in _archived_runs(archive):
        run_archive.restore(archive / rel, out / rel)
    return ("lm-study", "")


def regenerate(archive, doc):
    """Write DOC from ARCHIVE alone (a committed docs/study-runs/ folder)."""
    archive = Path(archive)
    if not archive.is_dir():
        raise ReportError(f"{archive}: no such directory")
    with tempfile.TemporaryDirectory(prefix="study-report-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        is_lm = (archive / "plan.json").is_file()
        kind = restore_lm(archive, out) if is_lm else restore_nmt(archive, out)
        shown = STUDIES[kind][1]
        record = archive_provenance(archive, doc, kind)
        write_doc(kind[0] if is_lm else "nmt", out, doc, False, shown_out=shown, provenance=record)
    return 0


def main(argv=None, prog=PROG, usage=None):
    p = Parser(__doc__)
    p.add_argument("kind", choices=["nmt", "lm", "lm-study", "archive"], help="which study")
    p.add_argument("out", help="the study's output folder (compare-*.sh --out), or the archive")
    p.add_argument("--doc", required=True, help="the markdown document to write")
    p.add_argument(
        "--smoke", action="store_true", help='label the document "smoke run, not results"'
    )
    args = p.parse_args(argv)
    if not Path(args.out).is_dir():
        p.error(f"{args.out}: no such directory")
    doc = Path(args.doc)
    if args.kind == "archive":
        regenerate(args.out, doc)
    else:
        write_doc(args.kind, args.out, doc, args.smoke)
    print(f"{prog}: wrote {doc}")
    return 0


# --------------------------------------------------------------------------------------------
# the LM study (scripts/study-lm.sh: plugin_tools/experiments/lm_study.py)


def across_seed_tests(entries, n_seeds):
    """The across-seed tests of a family: ENTRIES [(system B, baseline A, measure, A's scores,
    B's scores (one per seed, same seed order), whether higher is better)]. A paired t-test per
    entry (paired by seed: the same seed gives both the same batch order), Holm's correction over
    the family. Returns the markdown table and one reading sentence per entry: "better"/"worse"
    only where the Holm-adjusted p-value is below 0.05, otherwise "not distinguishable"."""
    tests = [study_stats.paired_t_test(a, b) for _, _, _, a, b, _ in entries]
    adjusted = study_stats.holm([t[4] for t in tests])
    rows, reading = [], []
    for (b_name, a_name, measure, _, _, higher), (mean, sd, t, df, p), p_holm in zip(
        entries, tests, adjusted
    ):
        rows.append(
            [f"{b_name} vs {a_name}", measure, f"{mean:+.2f}", f"{sd:.2f}", f"{t:.2f}", df]
            + [f"{p:.4f}", f"{p_holm:.4f}{'*' if p_holm < 0.05 else ''}"]
        )
        if p_holm < 0.05:
            better = (mean > 0) == higher
            verdict = f"{'better' if better else 'worse'} than {a_name}"
        else:
            verdict = f"not distinguishable from {a_name} at {n_seeds} seeds"
        reading.append(
            f"- {b_name}, {measure} {mean:+.2f}: {verdict} (paired t-test across {n_seeds} "
            f"seeds, p = {p:.4f}, Holm-adjusted over the {len(entries)} comparisons "
            f"p = {p_holm:.4f})."
        )
    header_row = ["Comparison", "Measure", "Mean difference", "SD of differences", "t", "df"]
    return table([*header_row, "p", "p (Holm)"], rows, text_cols=2), reading


def config_comment(path, start):
    """The comment paragraph of a config that starts with START (e.g. '# Budget')."""
    lines, on = [], False
    for line in read_text(path).splitlines():
        if line.startswith(start):
            on = True
        if on:
            if not line.startswith("#"):
                break
            lines.append(line[1:].strip())
    return " ".join(lines)


def stopped(result):
    """'E epochs, rule|cap, last epoch -X.X%' of a seed's result.json."""
    gain = result.get("last_gain")
    gain_text = "" if gain is None else f", last epoch {100 * gain:+.1f}%"
    return f"{result['epochs']}, {result.get('stopped_by', '?')}{gain_text}"


def widened_sweep(plan):
    """The sentence on how the learning-rate grid grew past a winning edge (lm_study.lr_sweep)."""
    given = plan.get("lrs_given", plan["lrs"])
    added = [lr for lr in plan["lrs"] if lr not in given]
    if added:
        return (
            f" The given grid was {', '.join(given)}; a system's best lay at its edge, so every "
            f"system also ran {', '.join(added)} (the grid grows past a winning edge, x2 or /2, "
            f"at most {plan['sweep_widenings']} times)."
        )
    return ""


def write_lm_study(out, doc, smoke):
    out = Path(out)
    plan_file = out / "plan.json"
    if not plan_file.is_file():
        raise ReportError(f"{plan_file}: no such file (run scripts/study-lm.sh first)")
    plan = json.loads(plan_file.read_text())
    systems, seeds = plan["systems"], plan["seeds"]
    lrs = sorted(plan["lrs"], key=float)  # --lrs may come in any order

    def result(path):
        if not path.is_file():
            raise ReportError(f"{path}: no such file (did scripts/study-lm.sh finish?)")
        return json.loads(path.read_text())

    sweep = {
        s: {lr: result(out / "sweep" / s / f"lr{lr}" / "result.json") for lr in lrs}
        for s in systems
    }
    res = {s: [result(out / s / f"seed{k}" / "result.json") for k in seeds] for s in systems}
    chosen = {
        s: study_stats.choose_lr({lr: r["valid_ppl"] for lr, r in sweep[s].items()})
        for s in systems
    }
    counts = plan["counts"]
    lines = header(
        "WikiText-2 language modelling: stock vs matched baseline vs compositional",
        smoke,
        out,
        ("lm-study", ""),
    )
    params = read_text(out / "params.md")
    n_params = [int(x.replace(",", "")) for x in re.findall(r"\| ([0-9,]+) \| 0 \|", params)]
    archs = re.findall(r"^\| `(\S+)", params, re.M)
    lines += [
        "**Question**: at matched parameters, tokens and tuning, does "
        "compositional attention model WikiText-2 better than multi-head attention in the same "
        "shared-layer model (the paper's matched baseline), and than a stock `transformer_lm`?",
        "",
        "## Setup",
        "",
        f"- Data: WikiText-2 (v1 word tokens, `scripts/prepare-wikitext.sh 2`), re-tokenized "
        f"into a sentencepiece unigram vocabulary of {plan['vocab']:,} pieces trained on the "
        "training split: "
        + ", ".join(f"{k} {v['words']:,} words = {v['pieces']:,} pieces" for k, v in counts.items())
        + " (both counting one end of line per line). The smaller vocabulary is the budget "
        "choice (a word-level softmax of 33k entries made one epoch cost 31-39 CPU minutes); "
        "perplexity is therefore reported per piece and, **renormalised to words** (the same "
        "total log-likelihood divided by the word count: 2^(loss x pieces / words)), per word, "
        "which is the number comparable with word-level WikiText-2 results.",
        "- Systems and their parameters (`scripts/param-counts.py` of each config's arguments"
        + (" and the study's --train-args" if plan.get("train_args") else "")
        + "; the full table with the arguments is OUT/params.md):",
        "",
        table(
            ["System", "Config", "Arch", "Parameters", "vs stock"],
            [
                [s, f"`{c}`", f"`{a}`", f"{n:,}", f"{100 * (n - n_params[0]) / n_params[0]:+.1f}%"]
                for s, c, a, n in zip(systems, plan["configs"], archs, n_params)
            ],
            text_cols=3,
        )
        if len(n_params) == len(archs) == len(systems)
        else params.strip(),
        "",
    ]
    if len(n_params) == len(systems):
        i_m, i_c = systems.index("matched"), systems.index("compositional")
        gap = 100 * (n_params[i_c] - n_params[i_m]) / n_params[i_m]
        lines += [
            f"- The matched pair differs by {gap:+.1f}% in parameters (compositional against "
            "matched): "
            + (
                "within 5%, so no equalising variant is added; the difference is the retrieval "
                "projections of compositional attention."
                if abs(gap) <= 5
                else "MORE than 5%: an equalising variant is needed before a claim."
            ),
            "",
        ]
    lines += [
        f"- Learning rate: a sweep of {', '.join(lrs)} per system, seed 1, "
        f"{plan['sweep_updates']:,} updates each; the lowest validation perplexity (per piece, "
        "best checkpoint) chooses." + widened_sweep(plan),
        f"- Seeds {', '.join(map(str, seeds))} per system at its chosen rate, trained epoch by "
        f"epoch; stopping rule: after epoch e >= {plan['min_epochs']} once the end-of-epoch "
        f"validation perplexity improved by less than {100 * plan['min_gain']:.0f}% over epoch "
        f"e - 1, and after epoch {plan['max_epochs']} at the latest.",
        f"- Evaluation: checkpoint_best.pt with `scripts/eval-lm.sh --context-window "
        f"{plan['context_window']}` (fairseq-eval-lm) on the full valid and test subsets.",
    ]
    budget = scrub_history(config_comment(ROOT / plan["configs"][0], "# Budget"))
    lines += [f"- Planned ({plan['configs'][0]}): {budget}" if budget else "", ""]

    rows = []
    for s in systems:
        best, edge = chosen[s]
        for lr in lrs:
            r = sweep[s][lr]
            mark = (
                " (**chosen**" + (", at the edge of the grid" if edge else "") + ")"
                if lr == best
                else ""
            )
            rows.append([s, lr + mark, f"{r['valid_ppl']:.2f}"])
    lines += [
        "## Learning-rate sweep",
        "",
        table(["System", "lr", "Valid ppl per piece"], rows, text_cols=2),
        "",
        "## Results",
        "",
    ]
    word = {s: [r["eval"]["test"]["word_ppl"] for r in res[s]] for s in systems}
    rows = []
    for s in systems:
        vw = study_stats.mean_sd([r["eval"]["valid"]["word_ppl"] for r in res[s]])
        tw = study_stats.mean_sd(word[s])
        tp = study_stats.mean_sd([r["eval"]["test"]["ppl"] for r in res[s]])
        cpu = sum(r["cpu"] for r in res[s])
        rows.append(
            [
                s,
                chosen[s][0],
                ", ".join(str(r["epochs"]) for r in res[s]),
                f"{vw[0]:.2f} ± {vw[1]:.2f}",
                f"{tw[0]:.2f} ± {tw[1]:.2f}",
                f"{tp[0]:.2f} ± {tp[1]:.2f}",
                fmt(cpu / 60, "{:.1f}"),
            ]
        )
    lines += [
        table(
            [
                "System",
                "lr",
                "Epochs per seed",
                "Valid ppl/word",
                "Test ppl/word",
                "Test ppl/piece",
                "CPU min (all seeds)",
            ],
            rows,
            text_cols=2,
        ),
        "",
        f"Mean ± standard deviation over {len(seeds)} seeds. Per seed (test perplexity per word):",
        "",
        table(
            ["System", *[f"seed {k}" for k in seeds]],
            [[s, *[f"{x:.2f}" for x in word[s]]] for s in systems],
        ),
        "",
        "Where each seed stopped (epochs; what stopped it: the 1% rule or the epoch cap; the "
        "last epoch's relative improvement of validation perplexity):",
        "",
        table(
            ["System", *[f"seed {k}" for k in seeds]],
            [[s, *[stopped(r) for r in res[s]]] for s in systems],
        ),
        "",
    ]
    pairs = [("matched", "compositional"), ("baseline", "matched"), ("baseline", "compositional")]
    entries = [(b, a, "test ppl/word", word[a], word[b], False) for a, b in pairs]
    test_table, reading = across_seed_tests(entries, len(seeds))
    lines += [
        "## Across seeds",
        "",
        "Paired t-tests of the test perplexity per word, paired by seed (the same seed gives "
        "the same batch order), two-sided; Holm's correction over the three comparisons "
        "(* adjusted p < 0.05).",
        "",
        test_table,
        "",
        "## Reading",
        "",
        *reading,
    ]
    comp = statistics.fmean(word["compositional"])
    matched = statistics.fmean(word["matched"])
    paper = 100 * (PAPER_LM["compositional"] - PAPER_LM["baseline"]) / PAPER_LM["baseline"]
    ours = 100 * (comp - matched) / matched
    lines += [
        f"- The paper's direction: on WikiText-103 (103M tokens, d 512, 6 shared layers, full "
        f"schedule) compositional {PAPER_LM['compositional']} vs matched multi-head "
        f"{PAPER_LM['baseline']} ({paper:+.1f}%); here {comp:.2f} vs {matched:.2f} "
        f"({ours:+.1f}%, mean over seeds) at this study's size (above: about 50 times fewer "
        "parameters) and a few epochs of WikiText-2's 2M words (50 times less data): the "
        "direction "
        + ("is the same" if (ours < 0) == (paper < 0) else "is the opposite")
        + "; whether it is a finding is the across-seed test above.",
        "",
    ]
    logs = [out / s / f"seed{k}" / "train.log" for s in systems for k in seeds]
    labels = [s for s in systems for _ in seeds]
    curves = doc.with_name(f"{doc.stem}-curves.png")
    try:
        plot_curves.plot(logs, labels, "ppl", ["epoch", "updates"], curves, group=True)
        lines += [
            "## Learning curves",
            "",
            f"![validation perplexity per piece]({curves.name})",
            "",
            "Validation perplexity per piece (the first batches of valid during training); "
            "the line is the mean over seeds, the band the range.",
            "",
        ]
    except plot_curves.LogError as e:
        lines += ["## Learning curves", "", f"(not drawn: {e})", ""]
    total_cpu = sum(r["cpu"] for s in systems for r in res[s])
    sweep_cpu = sum(sweep[s][lr].get("cpu", 0) for s in systems for lr in lrs)
    lines += [
        "## Cost",
        "",
        f"Sweep {sweep_cpu / 3600:.2f} CPU hours, seeds {total_cpu / 3600:.2f} CPU hours "
        "(training and evaluation), together "
        f"{(sweep_cpu + total_cpu) / 3600:.2f} (user + sys of the tools, summed over resumed "
        "attempts: what one core alone would take; the wall time on a shared machine is longer).",
        "",
    ]
    run_rows = [
        {"name": f"{s} lr {lr} (sweep)", "dir": str(out / "sweep" / s / f"lr{lr}")}
        for s in systems
        for lr in lrs
    ]
    run_rows += [
        {"name": s, "seed": str(k), "dir": str(out / s / f"seed{k}")}
        for s in systems
        for k in seeds
    ]
    return lines + commands_section(out, run_rows, kind=("lm-study", ""))
