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

from plugin_tools import plot_curves
from plugin_tools.machine import cpu_name

from . import run_archive, study_stats
from .report_templates import render
from .runs import ROOT, Parser
from .study_results import (
    ReportError,
    Run,
    data_facts,
    eval_result,
    length_ratio,
    load_lm_study,
    load_significance,
    read_runs,
    read_seconds,
    read_selection,
    read_text,
    run_stats,
)

PROG = "study-report.py"
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


# --------------------------------------------------------------------------------------------
# formatting


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
    """The provenance line of the machine the runs were made on (CPU as plugin_tools.machine
    names it)."""
    cpu = cpu_name()
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
        lines += [render("study-smoke", command=STUDY_COMMAND[kind[0]]), ""]
    study = STUDIES.get(kind)
    if study and not smoke:
        lines += [
            render("study-generated-by", study=study[0], archive=study[2], doc=study[3]),
            "",
        ]
    return lines


def scrub_history(text):
    """A config comment quoted in a document, without the issue numbers of its planning."""
    text = re.sub(r"\(issues? [0-9]+(?: and [0-9]+)?: ", "(", text)
    text = re.sub(r" \(issues? [0-9]+(?: and [0-9]+)?\)", "", text)
    text = re.sub(r"\bIssue [0-9]+ \(", "This study (", text)
    return re.sub(r"\bthe issue-[0-9]+ ", "the earlier ", text)


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


def commands_section(runs, kind=None):
    """The study's command (the one that writes the document) and each run's commands as
    executed (RUNS: Run records)."""
    study = STUDIES.get(kind)
    lines = ["## Commands", ""]
    if study:
        lines += ["The study, one command (resumable; it writes this document):", "", "```"]
        lines += [study[0], "```", ""]
    lines += ["Each run, as executed:", ""]
    for r in runs:
        lines += [f"<details><summary>{r.label}</summary>", "", "```"]
        lines.append(read_text(Path(r.dir) / "commands.txt", "(commands.txt missing)"))
        lines += ["```", "", "</details>", ""]
    return lines


def planned_budget(out, name):
    """The '# Budget ...' paragraph of the first system's config (its copy OUT/NAME/config.sh)."""
    return scrub_history(config_comment(Path(out) / name / "config.sh", "# Budget"))


def cost_row(run, st, per):
    if per == "epoch":
        per_unit = (st.cpu / st.epochs) if st.cpu and st.epochs else None
    else:
        per_unit = (1000 * st.cpu / st.updates) if st.cpu and st.updates else None
    return [run.label, fmt(st.updates), fmt(st.wall), fmt(st.cpu), fmt(per_unit)]


def budget_lines(runs, stats, extra_dirs=(), per="epoch", out=None):
    """The Cost section: each run's training time, the total (with the losing selection
    candidates' folders EXTRA_DIRS), and the budget the first system's config plans."""
    total_wall = sum(s.wall or 0 for s in stats.values())
    total_cpu = sum(s.cpu or 0 for s in stats.values())
    for d in extra_dirs:
        w, c = read_seconds(d)
        total_wall += w or 0
        total_cpu += c or 0
    unit = "CPU s / epoch" if per == "epoch" else "CPU s / 1000 updates"
    rows = [cost_row(r, stats[(r.name, r.seed)], per) for r in runs]
    text = render(
        "study-cost",
        table=table(["Run", "Updates", "Train wall (s)", "Train CPU (s)", unit], rows),
        wall_min=f"{total_wall / 60:.1f}",
        cpu_min=f"{total_cpu / 60:.1f}",
        losers_note=", the losing selection candidates included" if extra_dirs else "",
    )
    plan = planned_budget(out, runs[0].name) if out else None
    return [text, ""] + ([f"Planned (from `{runs[0].name}`'s config): {plan}", ""] if plan else [])


def closing_sections(out, doc, runs, curve_metric, kind=None):
    """The end of either document: learning curves (PNG beside the doc), commands."""
    lines = []
    curves = copy_curves(out, doc)
    if curves:
        image = f"![{curve_metric} vs epoch and updates]({curves})"
        lines += [render("study-curves", image=image, out=out), ""]
    return lines + commands_section(runs, kind=kind)


# --------------------------------------------------------------------------------------------
# NMT

LANGUAGE = {"en": "English", "de": "German"}


def nmt_setup(runs, seeds, baseline):
    r0 = runs[0]
    facts = data_facts(r0.dir)
    sizes = ", ".join(f"{k} {facts[k]:,} pairs" for k in ("train", "valid", "test") if k in facts)
    text = render(
        "nmt-setup",
        src=r0["src"],
        tgt=r0["tgt"],
        sizes=sizes,
        deen_note=""
        if r0["src"] == "en"
        else ", which the de→en configs source, swapping the languages",
        beam=r0["beam"],
        lenpen=r0["lenpen"],
        baseline=baseline,
        seeds=", ".join(s or "the config seed" for s in seeds),
    )
    return [text, ""]


def selection_lines(out, names):
    """The Fusion chosen on validation section: each fused system's candidates."""
    sel = []
    for n in names:
        f = Path(out) / n / "selection.txt"
        if not f.is_file():
            continue
        s = read_selection(f)
        candidates = ", ".join(
            f"{c[0]} {float(c[2]):.3f}" + (" (**chosen**)" if c[1] == s.winner else "")
            for c in s.candidates
        )
        sel.append(render("nmt-selection", name=n, epochs=s.epochs, candidates=candidates))
    return ["## Fusion chosen on validation", ""] + sel + [""] if sel else []


def by_system(metric):
    """{system: row} of one metric of a significance JSON."""
    return {r["system"]: r for r in metric["rows"]}


def nmt_header_row(m):
    chrf = "chrF" in m
    head = ["System", "Arch", "Params", "Epochs (best)", "Best valid loss", "BLEU"]
    head += ["chrF"] if chrf else []
    head += ["tok-BLEU", "Hyp/ref length", "ΔBLEU", "p bs", "p ar", "p bs (Holm)"]
    head += ["ΔchrF", "p bs (chrF)", "p ar (chrF)", "p bs (chrF, Holm)"] if chrf else []
    return head + ["Train wall (s)", "Train CPU (s)", "words/s (wall)", "words/CPU-s"]


def nmt_result_row(r, st, by, holm_bs):
    """One run's row of a seed's results table (BY: metric -> system -> significance row)."""
    b = by["BLEU"][r.name]
    arch = f"`{r['arch']}`" + (f" ({r['selected']})" if r.get("selected") else "")
    row = [r.name, arch, fmt(st.params), f"{fmt(st.epochs)} ({fmt(st.best_epoch)})"]
    row += [fmt(st.best_loss, "{:.3f}"), f"{b['score']:.2f}"]
    if "chrF" in by:
        row.append(f"{by['chrF'][r.name]['score']:.2f}")
    row.append(f"{by['tok-BLEU'][r.name]['score']:.2f}")
    row.append(fmt(length_ratio(r.dir), "{:.3f}"))
    row += [fmt(b["delta"], "{:+.2f}"), fmt_p(b["p_bs"]), fmt_p(b["p_ar"])]
    row.append(fmt_p(holm_bs.get(("BLEU", r.name))))
    if "chrF" in by:
        c = by["chrF"][r.name]
        row += [fmt(c["delta"], "{:+.2f}"), fmt_p(c["p_bs"]), fmt_p(c["p_ar"])]
        row.append(fmt_p(holm_bs.get(("chrF", r.name))))
    return row + [fmt(st.wall), fmt(st.cpu), fmt(st.wps), fmt(st.per_cpu)]


def nmt_seed_results(runs, stats, seed, res):
    """The results table of one seed, its test settings and the metrics' signatures."""
    m = res["metrics"]
    by = {k: by_system(v) for k, v in m.items()}
    holm_bs = seed_holm(m)
    rows = [nmt_result_row(r, stats[(r.name, seed)], by, holm_bs) for r in runs if r.seed == seed]
    text = render(
        "nmt-seed-results",
        seed_note=f", seed {seed}" if seed else "",
        table=table(nmt_header_row(m), rows, text_cols=2),
        sentences=res["sentences"],
        resamples=res["settings"]["resamples"],
        trials=res["settings"]["trials"],
    )
    signatures = [f"- {k} ({v['description']}): `{v['signature_bs']}`" for k, v in m.items()]
    return [text, *signatures, ""]


def nmt_across_seeds(sig, seeds, names):
    """The mean ± sd over seeds and the across-seed tests; and the tests' reading sentences."""
    metrics = sig[seeds[0]]["metrics"]
    rows = []
    for n in names:
        vals = [[by_system(sig[s]["metrics"][k])[n]["score"] for s in seeds] for k in metrics]
        rows.append([n] + [f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}" for v in vals])
    entries = nmt_across_seed_entries(sig, seeds, names)
    test_table, reading = across_seed_tests(entries, len(seeds))
    text = render(
        "nmt-across-seeds",
        mean_table=table(["System", *metrics.keys()], rows),
        n=len(entries),
        test_table=test_table,
    )
    return [text], reading


def seed_verdict(p_holm, p_ar, delta):
    # Both tests resample test sentences of one trained model: they say nothing about the
    # variance between training seeds, so the verdict names its scope.
    sig_bs, sig_ar = p_holm < 0.05, p_ar < 0.05
    direction = "better" if delta > 0 else "worse"
    if sig_bs and sig_ar:
        return (
            f"{direction} on the test sentences at this training seed (both "
            "sentence-resampling tests p < 0.05, bootstrap Holm-corrected; not a test "
            "across training seeds)"
        )
    if sig_bs or sig_ar:
        return "p < 0.05 in one sentence-resampling test only: no firm difference"
    return "no difference on the test sentences (p >= 0.05 in both tests)"


def nmt_seed_reading(sig, seed, baseline):
    """The per-seed sentences of the Reading: each system against the baseline on BLEU."""
    m = sig[seed]["metrics"]
    chrf = by_system(m["chrF"]) if "chrF" in m else {}
    lines = []
    for r in m["BLEU"]["rows"][1:]:
        c = chrf.get(r["system"])
        p_holm = seed_holm(m)[("BLEU", r["system"])]
        lines.append(
            render(
                "nmt-seed-verdict",
                system=r["system"],
                seed_note=f" (seed {seed})" if seed else "",
                delta=f"{r['delta']:+.2f}",
                baseline=baseline,
                p_bs=f"{r['p_bs']:.4f}",
                p_holm=f"{p_holm:.4f}",
                p_ar=f"{r['p_ar']:.4f}",
                verdict=seed_verdict(p_holm, r["p_ar"], r["delta"]),
                chrf=f"; chrF {c['delta']:+.2f} (p = {c['p_bs']:.4f})" if c else "",
            )
        )
    return lines


def nmt_reading(sig, seeds, baseline, stats, across_reading):
    lines = ["## Reading", ""]
    if len(seeds) > 1:
        reading = "\n".join(across_reading)
        lines.append(render("nmt-reading-seeds", n=len(seeds), reading=reading))
    else:
        lines.append(render("nmt-reading-one-seed"))
    for s in seeds:
        lines += nmt_seed_reading(sig, s, baseline)
    at_last = [st.best_epoch == st.epochs for st in stats.values() if st.epochs]
    if at_last and all(at_last):
        # then the differences are at a fixed budget, not at convergence: say so
        lines.append(render("nmt-at-budget", n=len(at_last)))
    # The reference point of the NMT baseline: published from-scratch, text-only Multi30k
    # task-1 scores on test 2016 flickr, each read in the source named; none is scored as we
    # score, and the text says how each differs.
    return lines + [render("nmt-reference")]


def nmt_doc(out, smoke):
    runs = read_runs(out)
    seeds = list(dict.fromkeys(r.seed for r in runs))
    names = list(dict.fromkeys(r.name for r in runs))
    baseline = names[0]
    stats = {(r.name, r.seed): run_stats(r.dir) for r in runs}
    sig = {s: load_significance(out, s) for s in seeds}
    r0 = runs[0]
    pair = f"{LANGUAGE.get(r0['src'], r0['src'])}→{LANGUAGE.get(r0['tgt'], r0['tgt'])}"
    kind = ("nmt", f"{r0['src']}-{r0['tgt']}")
    lines = header(f"Multi30k {pair}: stock vs the plugin's systems", smoke, out, kind)
    lines += nmt_setup(runs, seeds, baseline)
    lines += selection_lines(out, names)
    lines += ["## Results", ""]
    for s in seeds:
        lines += nmt_seed_results(runs, stats, s, sig[s])
    across_reading = []
    if len(seeds) > 1:
        across, across_reading = nmt_across_seeds(sig, seeds, names)
        lines += across
    lines += nmt_reading(sig, seeds, baseline, stats, across_reading)
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
    by = {k: by_system(metrics[k]) for k in ("BLEU", "chrF") if k in metrics}
    adjusted = study_stats.holm([by[k][n]["p_bs"] for k, n in keys])
    return dict(zip(keys, adjusted))


def nmt_across_seed_entries(sig, seeds, names):
    """The across-seed family of the NMT study: on BLEU and chrF, every system against the
    baseline (the first system) and every non-stock system against the wide baseline (a system
    whose name ends in -baseline-wide: stock at the parameter count of the largest system)."""
    metrics = [k for k in ("BLEU", "chrF") if k in sig[seeds[0]]["metrics"]]

    def scores(metric, name):
        return [by_system(sig[s]["metrics"][metric])[name]["score"] for s in seeds]

    wide = [n for n in names if n.endswith("-baseline-wide")]
    pairs = [(names[0], n) for n in names[1:]]
    pairs += [(w, n) for w in wide for n in names[1:] if n not in wide]
    return [(b, a, k, scores(k, a), scores(k, b), True) for k in metrics for a, b in pairs]


def write_nmt(out, doc, smoke):
    lines, runs, stats, kind = nmt_doc(out, smoke)
    # the losing selection candidates (the winner's run is part of its system's run)
    cand_dirs = []
    for f in sorted(Path(out).glob("*/selection.txt")):
        cand_dirs += [f.parent / "select" / name for name in read_selection(f).losers()]
    lines += budget_lines(runs, stats, cand_dirs, out=out)
    return lines + closing_sections(out, doc, runs, "validation loss", kind)


# --------------------------------------------------------------------------------------------
# LM

# Mittal et al.'s WikiText-103 result (docs/method.md §7): test perplexity, compositional vs
# multi-head, 6 shared layers of d 512, tokens per sample 512, context window 400.
PAPER_LM = {"compositional": 38.8, "baseline": 39.6}


def paper_lm_change():
    """The paper's relative change of test perplexity, compositional against multi-head (%)."""
    return 100 * (PAPER_LM["compositional"] - PAPER_LM["baseline"]) / PAPER_LM["baseline"]


def lm_reading(runs, stats):
    """The direction of each system's test perplexity against the baseline, next to the paper's."""
    base_run = runs[0]
    base = eval_result(Path(base_run.dir) / "eval-test.txt").get("ppl")
    paper = paper_lm_change()
    lines = ["## Reading", ""]
    for r in runs[1:]:
        ppl = eval_result(Path(r.dir) / "eval-test.txt").get("ppl")
        if base is None or ppl is None:
            continue
        change = 100 * (ppl - base) / base
        tokens = stats[(r.name, r.seed)].tokens
        lines.append(
            render(
                "lm-reading",
                name=r.name,
                ppl=f"{ppl:.2f}",
                base=f"{base:.2f}",
                base_name=base_run.name,
                change=f"{change:+.1f}%",
                paper_comp=PAPER_LM["compositional"],
                paper_base=PAPER_LM["baseline"],
                paper_change=f"{paper:+.1f}%",
                holds="holds" if (change < 0) == (paper < 0) else "does not hold",
                tokens=f"{int(tokens):,} training tokens" if tokens else "the tokens above",
            )
        )
    return lines + [""] if len(lines) > 2 else []


LM_RESULT_HEADER = [
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
]


def lm_result_row(r, s, base):
    v = eval_result(Path(r.dir) / "eval-valid.txt")
    t = eval_result(Path(r.dir) / "eval-test.txt")
    dp = (
        f"{100 * (s.params - base.params) / base.params:+.2f}%" if s.params and base.params else "-"
    )
    return [
        r.name,
        f"`{r['arch']}`",
        fmt(s.params),
        dp,
        fmt(s.updates),
        fmt(s.tokens),
        fmt(v.get("ppl"), "{:.2f}"),
        fmt(t.get("ppl"), "{:.2f}"),
        fmt(s.wps),
        fmt(s.per_cpu),
        fmt(s.wall),
        fmt(s.cpu),
    ]


def write_lm(out, doc, smoke):
    runs = read_runs(out)
    stats = {(r.name, r.seed): run_stats(r.dir) for r in runs}
    lines = header("WikiText-2 language modelling: stock vs compositional", smoke, out, ("lm", ""))
    base = stats[(runs[0].name, runs[0].seed)]
    facts = data_facts(runs[0].dir)
    sizes = ", ".join(f"{k} {facts[k]:,} lines" for k in ("train", "valid") if k in facts)
    sizes += f", dictionary {facts['dict']:,} types" if "dict" in facts else ""
    lines.append(render("lm-setup", sizes=sizes))
    rows = [lm_result_row(r, stats[(r.name, r.seed)], base) for r in runs]
    setting = eval_result(Path(runs[0].dir) / "eval-test.txt").get("setting", "")
    lines += [
        table(LM_RESULT_HEADER, rows, text_cols=2),
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
                cfg = read_selection(sel).winner
                selected = Path(cfg).stem
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
    the study's plan.json and params.json, which the study saves beside them)."""
    archive, out = Path(archive), Path(out)
    for name in ("plan.json", "params.json"):
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
# the LM study (scripts/study-lm.sh: studies/lm_study.py)


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


def params_table(study):
    """The systems' parameter counts against the first (stock) system's."""
    first = study.params[0].parameters
    rows = [
        [
            s,
            f"`{c}`",
            f"`{p.arch}`",
            f"{p.parameters:,}",
            f"{100 * (p.parameters - first) / first:+.1f}%",
        ]
        for s, c, p in zip(study.systems, study.plan["configs"], study.params)
    ]
    return table(["System", "Config", "Arch", "Parameters", "vs stock"], rows, text_cols=3)


def lm_study_setup(study):
    plan = study.plan
    counts = ", ".join(
        f"{k} {v['words']:,} words = {v['pieces']:,} pieces" for k, v in plan["counts"].items()
    )
    lines = [
        render(
            "lm-study-setup",
            vocab=f"{plan['vocab']:,}",
            counts=counts,
            train_args_note=" and the study's --train-args" if plan.get("train_args") else "",
            params_table=params_table(study),
        )
    ]
    lines.append(matched_gap(study))
    lines.append(lm_study_protocol(study))
    budget = scrub_history(config_comment(ROOT / plan["configs"][0], "# Budget"))
    return lines + [f"- Planned ({plan['configs'][0]}): {budget}" if budget else "", ""]


def matched_gap(study):
    """The sentence on the parameter gap of the matched pair (compositional against matched)."""
    n_params, systems = [p.parameters for p in study.params], study.systems
    i_m, i_c = systems.index("matched"), systems.index("compositional")
    gap = 100 * (n_params[i_c] - n_params[i_m]) / n_params[i_m]
    verdict = (
        "within 5%, so no equalising variant is added; the difference is the retrieval "
        "projections of compositional attention."
        if abs(gap) <= 5
        else "MORE than 5%: an equalising variant is needed before a claim."
    )
    return render("lm-study-matched-gap", gap=f"{gap:+.1f}%", verdict=verdict)


def lm_study_protocol(study):
    plan = study.plan
    return render(
        "lm-study-protocol",
        lrs=", ".join(study.lrs),
        sweep_updates=f"{plan['sweep_updates']:,}",
        widened=widened_sweep(plan),
        seeds=", ".join(map(str, study.seeds)),
        min_epochs=plan["min_epochs"],
        min_gain=f"{100 * plan['min_gain']:.0f}",
        max_epochs=plan["max_epochs"],
        context_window=plan["context_window"],
    )


def sweep_table(study):
    rows = []
    for s in study.systems:
        best, edge = study.chosen[s]
        for lr in study.lrs:
            r = study.sweep[s][lr]
            mark = (
                " (**chosen**" + (", at the edge of the grid" if edge else "") + ")"
                if lr == best
                else ""
            )
            rows.append([s, lr + mark, f"{r['valid_ppl']:.2f}"])
    return table(["System", "lr", "Valid ppl per piece"], rows, text_cols=2)


LM_STUDY_RESULT_HEADER = [
    "System",
    "lr",
    "Epochs per seed",
    "Valid ppl/word",
    "Test ppl/word",
    "Test ppl/piece",
    "CPU min (all seeds)",
]


def lm_study_results_table(study):
    rows = []
    for s in study.systems:
        res = study.results[s]
        vw = study_stats.mean_sd([r["eval"]["valid"]["word_ppl"] for r in res])
        tw = study_stats.mean_sd([r["eval"]["test"]["word_ppl"] for r in res])
        tp = study_stats.mean_sd([r["eval"]["test"]["ppl"] for r in res])
        rows.append(
            [s, study.chosen[s][0], ", ".join(str(r["epochs"]) for r in res)]
            + [f"{m:.2f} ± {sd:.2f}" for m, sd in (vw, tw, tp)]
            + [fmt(sum(r["cpu"] for r in res) / 60, "{:.1f}")]
        )
    return table(LM_STUDY_RESULT_HEADER, rows, text_cols=2)


def lm_study_results(study):
    """The sweep, the results, the across-seed tests and their reading."""
    systems, seeds = study.systems, study.seeds
    word = study.test_word_ppl()
    seed_head = ["System", *[f"seed {k}" for k in seeds]]
    pairs = [("matched", "compositional"), ("baseline", "matched"), ("baseline", "compositional")]
    entries = [(b, a, "test ppl/word", word[a], word[b], False) for a, b in pairs]
    test_table, reading = across_seed_tests(entries, len(seeds))
    text = render(
        "lm-study-results",
        sweep_table=sweep_table(study),
        results_table=lm_study_results_table(study),
        n_seeds=len(seeds),
        per_seed_table=table(seed_head, [[s, *[f"{x:.2f}" for x in word[s]]] for s in systems]),
        stopped_table=table(seed_head, [[s, *map(stopped, study.results[s])] for s in systems]),
        test_table=test_table,
        reading="\n".join(reading),
    )
    return [text, paper_direction(word)]


def paper_direction(word):
    """The paper's direction next to this study's (mean test perplexity per word)."""
    comp = statistics.fmean(word["compositional"])
    matched = statistics.fmean(word["matched"])
    paper = paper_lm_change()
    ours = 100 * (comp - matched) / matched
    return render(
        "lm-study-paper",
        paper_comp=PAPER_LM["compositional"],
        paper_base=PAPER_LM["baseline"],
        paper_change=f"{paper:+.1f}%",
        comp=f"{comp:.2f}",
        matched=f"{matched:.2f}",
        ours=f"{ours:+.1f}%",
        same="is the same" if (ours < 0) == (paper < 0) else "is the opposite",
    )


def lm_study_curves(study, doc):
    logs = [study.out / s / f"seed{k}" / "train.log" for s in study.systems for k in study.seeds]
    labels = [s for s in study.systems for _ in study.seeds]
    curves = doc.with_name(f"{doc.stem}-curves.png")
    try:
        plot_curves.plot(logs, labels, "ppl", ["epoch", "updates"], curves, group=True)
    except plot_curves.LogError as e:
        return ["## Learning curves", "", f"(not drawn: {e})", ""]
    return [render("lm-study-curves", image=f"![validation perplexity per piece]({curves.name})")]


def lm_study_cost(study):
    systems, lrs = study.systems, study.lrs
    total_cpu = sum(r["cpu"] for s in systems for r in study.results[s])
    sweep_cpu = sum(study.sweep[s][lr].get("cpu", 0) for s in systems for lr in lrs)
    return render(
        "lm-study-cost",
        sweep_hours=f"{sweep_cpu / 3600:.2f}",
        seed_hours=f"{total_cpu / 3600:.2f}",
        total_hours=f"{(sweep_cpu + total_cpu) / 3600:.2f}",
    )


def lm_study_runs(study):
    """Every run of the study (the sweep's, then the seeds'), for the Commands section."""
    out, systems = study.out, study.systems
    runs = [
        Run(f"{s} lr {lr} (sweep)", str(out / "sweep" / s / f"lr{lr}"))
        for s in systems
        for lr in study.lrs
    ]
    return runs + [Run(s, str(out / s / f"seed{k}"), str(k)) for s in systems for k in study.seeds]


def write_lm_study(out, doc, smoke):
    study = load_lm_study(out)
    title = "WikiText-2 language modelling: stock vs matched baseline vs compositional"
    lines = header(title, smoke, study.out, ("lm-study", ""))
    lines += lm_study_setup(study)
    lines += lm_study_results(study)
    lines += lm_study_curves(study, doc)
    lines.append(lm_study_cost(study))
    return lines + commands_section(lm_study_runs(study), kind=("lm-study", ""))
