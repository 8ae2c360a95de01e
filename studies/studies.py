"""`study-nmt` and `study-lm`: the real-data studies, one command each
(scripts/study-nmt.sh and scripts/study-lm.sh are wrappers of them). study-nmt prepares the data
once (under a lock), then runs the comparison pipeline nmt_compare.py in this process, as
scripts/compare-nmt.sh would (it trains, decodes, tests and writes the results document with
`report nmt`; two processes started alike share its runs). study-lm is lm_study.py (sweep,
seeds, stopping rule, `report lm-study`)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from . import nmt_compare, runs
from .runs import ROOT, ExperimentError

NMT_USAGE = """\
Usage: {usage} [--direction en-de|de-en] [--out DIR] [--seeds LIST] [--doc FILE]
                            [--archive DIR | --no-archive] [--smoke] [--threads N]
                            [-- compare-nmt.sh options]

The Multi30k study, resumable (run the same command again after an interruption: finished
systems/seeds are skipped, unfinished training resumes from checkpoint_last.pt) and shared: the
same command started twice (one process per core) splits the runs (compare-nmt.sh locks each).
  1. data: scripts/prepare-multi30k.sh data-bin/multi30k.SRC-TGT --src SRC --tgt TGT (once);
  2. scripts/compare-nmt.sh, per seed, with
     en-de: configs/nmt/multi30k-ende-{{baseline,baseline-wide,compositional,
            graph-halfdim-weightgate,graph-best}}.sh (graph-best picks sum or self-gate on
            validation; baseline-wide: stock at the parameter count of the largest system);
     de-en: configs/nmt/multi30k-deen-{{baseline,baseline-wide,graph-halfdim-weightgate,
            graph-selfgate}}.sh (the Graph-Transformer at the paper's direction, both gates);
     --tensorboard; paired bootstrap/approximate randomization on BLEU, chrF, tok-BLEU per seed;
  3. scripts/study-report.py nmt: the results document: tables, the across-seed paired t-tests
     with Holm's correction, curves, commands, machine.

  --direction D en-de (default) or de-en
  --out DIR     study folder (default outputs/study-nmt, de-en: outputs/study-nmt-deen; with
                --smoke the same with -smoke)
  --seeds LIST  training seeds, comma-separated (default 1,2,3)
  --doc FILE    results document (default docs/results-nmt.md, de-en: docs/results-nmt-deen.md;
                with --smoke OUT/results-nmt.md, so a smoke run never replaces the results)
  --smoke       pipeline check at a tiny budget: 1000 training / 100 evaluation sentences
                (data-bin/multi30k.en-de-smoke), 2 epochs (selection: 1), 200 bootstrap
                resamples, 500 randomization trials; the document is labelled
                "smoke run, not results"
  --archive DIR keep every finished run (logs, hypotheses, times; not checkpoints) in DIR and
                restore from there the runs OUT lacks (compare-nmt.sh --archive): the study
                resumes on another machine or a fresh clone. Default docs/study-runs/nmt-ende
                (de-en: nmt-deen), committed; with --smoke none
  --no-archive  neither keep nor restore runs
  --threads N   OMP_NUM_THREADS for training and decoding (default: the environment's, else 1)
Options after `--` go to scripts/compare-nmt.sh (e.g. -- --train-args "--max-epoch 20").
"""

NMT_SYSTEMS = {
    "en-de": (
        "baseline",
        "baseline-wide",
        "compositional",
        "graph-halfdim-weightgate",
        "graph-best",
    ),
    "de-en": ("baseline", "baseline-wide", "graph-halfdim-weightgate", "graph-selfgate"),
}


def parse(kind, argv, usage):
    if kind != "nmt":  # the LM study has its own driver, lm_study.py
        raise ExperimentError(f"no {kind} study here (study-lm: lm_study.py)")
    p = runs.Parser(NMT_USAGE.format(usage=usage))
    p.add_argument("--out")
    p.add_argument("--doc")
    p.add_argument("--smoke", action="store_true")
    runs.add_archive_options(p)
    p.add_argument("--threads", default=os.environ.get("OMP_NUM_THREADS", "1"))
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--direction", default="en-de")
    args = p.parse_with_extra(argv)
    args.threads = runs.check_positive(args.threads, "--threads")
    if not re.fullmatch(r"[1-9][0-9]*(,[1-9][0-9]*)*", args.seeds):
        raise ExperimentError("--seeds needs comma-separated positive integers (e.g. 1,2)")
    runs.check_choice(args.direction, "--direction", tuple(NMT_SYSTEMS))
    args.archive = runs.archive_folder(
        args, None if args.smoke else f"docs/study-runs/nmt-{args.direction.replace('-', '')}"
    )
    return args


COMPARE = "scripts/compare-nmt.sh"  # the comparison, as its command line is recorded


def plan(kind, args):
    """(data folder, its preparation command, the comparison's arguments) of the NMT study."""
    smoke = "-smoke" if args.smoke else ""
    src, tgt = args.direction.split("-")
    deen = "-deen" if args.direction == "de-en" else ""
    args.out = args.out or f"outputs/study-{kind}{deen}{smoke}"
    if args.doc is None:  # a smoke run's document goes into OUT: it never replaces the results
        args.doc = (
            f"{args.out}/results-{kind}.md" if args.smoke else f"docs/results-{kind}{deen}.md"
        )
    data = f"data-bin/multi30k.{src}-{tgt}{smoke}"
    prepare = ["bash", "scripts/prepare-multi30k.sh", data, "--src", src, "--tgt", tgt]
    prepare += ["--max-train-lines", "1000", "--max-eval-lines", "100"] if args.smoke else []
    cfgs = [f"configs/nmt/multi30k-{src}{tgt}-{s}.sh" for s in NMT_SYSTEMS[args.direction]]
    compare = [*cfgs, "--data", f"{data}/bin"]
    compare += ["--out", args.out, "--seeds", args.seeds, "--tensorboard", "--doc", args.doc]
    if args.archive:  # the checkout's own folder stays relative in the recorded command
        inside = args.archive.is_relative_to(ROOT)
        compare += ["--archive", str(args.archive.relative_to(ROOT) if inside else args.archive)]
    if args.smoke:
        compare += ["--train-args", "--max-epoch 2", "--select-epochs", "1"]
        compare += ["--resamples", "200", "--trials", "500", "--smoke"]
    return data, f"{data}/bin/dict.{tgt}.txt", prepare, compare


def run_study(kind, argv, prog, usage):
    args = parse(kind, argv, usage)
    runs.tool_environment(args.threads)
    os.chdir(ROOT)  # the defaults and the configs are relative to the checkout
    data, marker, prepare, compare = plan(kind, args)
    with runs.FileLock(f"{data}.lock"):  # a second process started at once waits for it
        if not Path(marker).is_file():
            runs.say(prog, f"preparing {data}")
            if subprocess.run(prepare, stdout=sys.stderr).returncode != 0:
                raise ExperimentError(f"data preparation failed ({' '.join(prepare[1:])})")
    # The exact command, for the results document.
    invocation = ["bash", usage] if usage.endswith(".sh") else usage.split()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    line = " ".join(shlex.quote(a) for a in [*invocation, *argv])
    Path(args.out, "study-invocation.txt").write_text(line + " \n")
    name = Path(COMPARE).name  # its messages and errors read as the pipeline's own

    def comparison(argv):
        return nmt_compare.main(argv, prog=name, usage=COMPARE, argv0=COMPARE)

    return runs.main_of(name, comparison, compare + args.extra)


def main_nmt(argv, prog="study-nmt", usage="scripts/experiment.py study-nmt"):
    return run_study("nmt", argv, prog, usage)


def main_lm(argv, prog="study-lm", usage="scripts/experiment.py study-lm"):
    from . import lm_study  # the LM study is its own driver (sweep, seeds, stopping)

    return lm_study.main(argv, prog=prog, usage=usage)
