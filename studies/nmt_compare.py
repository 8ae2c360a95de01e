"""`compare-nmt` (scripts/compare-nmt.sh is its wrapper): train, decode and compare NMT systems
given as configs (shell-variables files), per seed, with selection configs; resumable (done
markers, checkpoint_last.pt), shared by two processes through runs.FileLock, kept in a run
archive (run_archive); one markdown report with paired significance tests, and the results
document of study_report (`scripts/study-report.py nmt`). The study (studies.py, study-nmt)
drives it. fairseq-train, fairseq-generate and the scoring scripts run as subprocesses."""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import compare, run_archive, runs
from .runs import ROOT, ExperimentError

USAGE = """\
Usage: {usage} [options] CONFIG...

Each CONFIG is a small shell-variables file (see configs/nmt/multi30k-ende-*.sh):
  NAME        system name (unique; also its folder under --out)
  ARCH        fairseq arch (transformer, compositional_transformer, graph_transformer, ...)
  DATA        fairseq-preprocess'd folder (e.g. from scripts/prepare-multi30k.sh OUTDIR: OUTDIR/bin)
  SRC, TGT    language pair (default: the single pair found in DATA)
  TRAIN_ARGS  bash array (or string) of fairseq-train arguments
  BEAM LENPEN beam settings; default the paper's: beam 5 for De-En, beam 4 + lenpen 0.6 otherwise
  GEN_ARGS    bash array (or string) of extra fairseq-generate arguments (e.g. --remove-bpe)
A selection config instead sets NAME, SELECT_FROM (bash array of candidate CONFIGs, paths
relative to the selection config's folder) and SELECT_EPOCHS (K): every candidate trains K
epochs (OUT/NAME/select/CANDIDATE, first seed), the one with the lowest validation loss wins
(OUT/NAME/selection.txt) and the system continues its run (same checkpoint) to the full recipe;
further seeds train the winner from scratch.

For every config (and seed) in turn: fairseq-train --user-dir fairseq_plugins, fairseq-generate
with checkpoint_best.pt on the test subset; then scripts/significance.sh (BLEU, chrF, tok-BLEU;
paired bootstrap and approximate randomization) of every system against the first one, per seed,
scripts/plot-curves.py of the validation loss, and OUT/REPORT.md.

Two processes started with the same command (one per core) share the work: each run folder
is locked while it trains or decodes, a process skips the runs another holds, and both wait for
every run before the significance tests and the report.

Resumable: a run whose training finished (RUN/train.done) is not trained again; an unfinished
one resumes from RUN/checkpoints/checkpoint_last.pt (the log is appended to RUN/train.log); a
decoding that finished after the last training (RUN/generate.done) is reused. Delete a run's
folder (and its --archive folder) to redo it.

Options:
  --out DIR          output folder (default outputs/compare-nmt)
  --data DIR         use DIR as DATA for every config (overrides the configs)
  --seeds LIST       comma-separated training seeds (e.g. 1,2): runs go to OUT/NAME/seedS, the
                     seed is appended to TRAIN_ARGS (--seed S), significance is per seed.
                     Default: the configs' own seed, runs in OUT/NAME.
  --train-args STR   extra fairseq-train arguments for every system (after the config's; later
                     flags win), e.g. "--max-update 50" for a smoke run
  --tensorboard      also log training to TensorBoard: --tensorboard-logdir OUT/tensorboard/RUN
  --select-epochs K  override the selection configs' SELECT_EPOCHS (e.g. 1 for a smoke run)
  --subset NAME      subset to decode and score (default test)
  --batch-size N     fairseq-generate batch size (default 128)
  --skip-train       do not train; use the checkpoints already in OUT/NAME/checkpoints
  --archive DIR      keep finished runs in DIR (e.g. a committed folder): every run, once decoded,
                     is saved to DIR/NAME/[seedS/] (its logs, hypotheses, times and done markers,
                     not its checkpoints; scripts/experiment.py run-archive), and a run OUT lacks
                     is restored from there first, so it is neither trained nor decoded again
  --detokenized      the hypotheses/references are detokenized text (default: fairseq's H-/T-
                     lines are tokenized text, scored with significance.sh --tokenized)
  --doc FILE         also write a results document (scripts/study-report.py nmt) to FILE
  --smoke            label that document "smoke run, not results"
  --resamples N, --trials N, --seed N, --moses, --no-chrf   passed to scripts/significance.sh
"""

POSITIVE = r"[1-9][0-9]*"


def parse(argv, usage):
    p = runs.Parser(USAGE.format(usage=usage))
    compare.add_compare_options(p, "outputs/compare-nmt")
    p.add_argument("--subset", default="test")
    p.add_argument("--batch-size", default="128")
    p.add_argument("--seeds", default="")
    p.add_argument("--select-epochs", default="")
    p.add_argument("--detokenized", action="store_true")
    p.add_argument("--archive", default="")
    for flag in ("--resamples", "--trials", "--seed"):
        p.add_argument(flag)
    for flag in ("--moses", "--no-chrf"):
        p.add_argument(flag, action="store_true")
    args = compare.parse_compare_options(p, argv)
    checks = (
        ("--batch-size", args.batch_size, POSITIVE, "a positive integer"),
        ("--seeds", args.seeds, rf"({POSITIVE}(,{POSITIVE})*)?", None),
        ("--select-epochs", args.select_epochs, f"({POSITIVE})?", "a positive integer"),
    )
    for flag, value, pattern, what in checks:
        if not re.fullmatch(pattern, value):
            what = what or "comma-separated positive integers (e.g. 1,2)"
            raise ExperimentError(f"{flag} needs {what}")
    for flag, value in (("--subset", args.subset), ("--archive", args.archive)):
        if value == "" and flag in argv:
            raise ExperimentError(f"{flag} needs a {'folder' if flag == '--archive' else 'value'}")
    args.sig_args = []
    for flag in ("--resamples", "--trials", "--seed"):
        value = getattr(args, flag[2:])
        if value is not None:
            if not re.fullmatch(POSITIVE, value):
                raise ExperimentError(f"{flag} needs a positive integer")
            args.sig_args += [flag, value]
    args.sig_args += [f for f in ("--moses", "--no-chrf") if getattr(args, f[2:].replace("-", "_"))]
    for tool in ("fairseq-train", "fairseq-generate"):
        if shutil.which(tool) is None:
            raise ExperimentError(f"{tool} not on PATH (run scripts/setup.sh)")
    args.seeds = args.seeds.split(",") if args.seeds else [""]
    for i, seed in enumerate(args.seeds):
        if seed in args.seeds[i + 1 :]:
            raise ExperimentError(f"--seeds: seed {seed} given twice")
    return args


class Comparison:
    """One compare-nmt command: its options (ARGS) and what its passes collect."""

    def __init__(self, args, prog, usage):
        self.args, self.prog, self.usage = args, prog, usage
        self.out = args.out
        self.user_dir = os.environ.get("FAIRSEQ_USER_DIR") or f"{ROOT}/fairseq_plugins"

    def say(self, message):
        runs.say(self.prog, message)

    # ---------------------------------------------------------------------------- configs

    def load(self, path):
        """The config PATH, validated: NAME ARCH DATA SRC TGT BEAM LENPEN TRAIN_ARGS GEN_ARGS
        and, for a selection config, SELECT_FROM (absolute paths) and SELECT_EPOCHS."""
        c = compare.source_config(path)
        if c["SELECT_FROM"] and self.args.select_epochs:
            c["SELECT_EPOCHS"] = self.args.select_epochs
        compare.check_name(path, c["NAME"])
        if c["SELECT_FROM"]:
            if not re.fullmatch(POSITIVE, c["SELECT_EPOCHS"]):
                raise ExperimentError(
                    f"{path}: SELECT_FROM needs SELECT_EPOCHS (a positive integer)"
                )
            folder = os.path.normpath(os.path.join(compare.logical_cwd(), os.path.dirname(path)))
            c["SELECT_FROM"] = [
                x if x.startswith("/") else f"{folder}/{x}" for x in c["SELECT_FROM"]
            ]
            for cand in c["SELECT_FROM"]:
                if self.load(cand)["SELECT_FROM"]:
                    raise ExperimentError(f"{path}: candidate {cand} is itself a selection config")
            return c
        if not c["ARCH"]:
            raise ExperimentError(f"{path}: does not set ARCH")
        data = c["DATA"] = self.args.data or c["DATA"]
        if not data:
            raise ExperimentError(f"{path}: does not set DATA (or pass --data)")
        if not os.path.isdir(data):
            raise ExperimentError(
                f"{path}: DATA {data}: no such directory (prepare it, e.g. "
                "scripts/prepare-multi30k.sh, or pass --data)"
            )
        if not c["SRC"] or not c["TGT"]:
            pairs = sorted(
                {
                    m.groups()
                    for f in os.listdir(data)
                    if (m := re.fullmatch(r"train\.([^.]+)-([^.]+)\..*\.idx", f))
                }
            )
            if len(pairs) != 1:
                raise ExperimentError(
                    f"{path}: set SRC and TGT (DATA {data} has no single language pair)"
                )
            c["SRC"], c["TGT"] = pairs[0]
        src, tgt = c["SRC"], c["TGT"]
        if not (
            os.path.isfile(f"{data}/dict.{src}.txt") and os.path.isfile(f"{data}/dict.{tgt}.txt")
        ):
            raise ExperimentError(f"{path}: {data} has no dict.{src}.txt/dict.{tgt}.txt")
        if not c["BEAM"]:
            deen = (src, tgt) == ("de", "en")
            c["BEAM"], c["LENPEN"] = (
                ("5", c["LENPEN"] or "1.0") if deen else ("4", c["LENPEN"] or "0.6")
            )
        c["LENPEN"] = c["LENPEN"] or "1.0"
        return c

    # ------------------------------------------------------------------------- one run

    def train(self, c, run_dir, tag, train_args):
        """fairseq-train into RUN_DIR (skipped when RUN_DIR/train.done exists; resumes from
        RUN_DIR/checkpoints/checkpoint_last.pt), its log appended to RUN_DIR/train.log."""
        ckpt = f"{run_dir}/checkpoints"
        cmd = ["fairseq-train", c["DATA"], "--user-dir", self.user_dir, "--task", "translation"]
        cmd += ["--source-lang", c["SRC"], "--target-lang", c["TGT"], "--arch", c["ARCH"]]
        cmd += ["--save-dir", ckpt, "--log-format", "simple", *train_args]
        if self.args.tensorboard:
            cmd += ["--tensorboard-logdir", f"{self.out}/tensorboard/{tag}"]
        os.makedirs(ckpt, exist_ok=True)
        Path(run_dir, "train-command.txt").write_text(compare.shell_line(cmd))
        if os.path.isfile(f"{run_dir}/train.done"):
            self.say(f"[{tag}] already trained ({run_dir}/train.done)")
            return
        compare.training_starts(self.prog, tag, run_dir, ckpt, c["ARCH"])
        with open(f"{run_dir}/train.log", "a") as log:
            status = compare.timed(run_dir, cmd, stdout=log, stderr=subprocess.STDOUT)
        if status != 0:
            compare.tail(f"{run_dir}/train.log", 20)
            raise ExperimentError(f"[{tag}] fairseq-train failed (see {run_dir}/train.log)")
        compare.training_done(tag, run_dir, ckpt)
        Path(run_dir, "generate.done").unlink(missing_ok=True)

    def select(self, c, sysdir):
        """A selection config's candidates, trained SELECT_EPOCHS epochs each (first seed), the
        winner by validation loss into SYSDIR/selection.txt (one process selects, the others
        wait for it)."""
        name, epochs = c["NAME"], c["SELECT_EPOCHS"]
        with runs.FileLock(f"{sysdir}/select.lock"):
            if os.path.isfile(f"{sysdir}/selection.txt"):
                return
            if self.args.skip_train:
                raise ExperimentError(f"[{name}] --skip-train but no {sysdir}/selection.txt")
            best_cfg, best_loss, lines = "", "", []
            for cand in c["SELECT_FROM"]:
                k = self.load(cand)
                cdir = f"{sysdir}/select/{k['NAME']}"
                seed = self.args.seeds[0]
                args = [*k["TRAIN_ARGS"], *(["--seed", seed] if seed else [])]
                args += [*self.args.extra, "--max-epoch", epochs]
                self.train(k, cdir, f"{name}-select-{k['NAME']}", args)
                loss = compare.best_valid_loss(Path(cdir, "train.log").read_text(errors="replace"))
                if not loss:
                    raise ExperimentError(
                        f"[{name}] candidate {k['NAME']}: no validation loss in {cdir}/train.log"
                    )
                lines.append(f"{k['NAME']}\t{cand}\t{loss}\n")
                if not best_loss or float(loss) < float(best_loss):
                    best_loss, best_cfg = loss, cand
            text = f"winner\t{best_cfg}\nepochs\t{epochs}\n" + "".join(lines)
            Path(sysdir, "selection.txt").write_text(text)
            self.say(
                f"[{name}] selected {best_cfg} (best valid loss {best_loss} after {epochs} epochs)"
            )

    def winner(self, c, sysdir, seed, run_dir):
        """(the winner's config, its path) of a selection config; the first seed's run starts
        from the winner's selection run (its checkpoints, log and time)."""
        self.select(c, sysdir)
        text = Path(sysdir, "selection.txt").read_text()
        path = "\n".join(
            ln.split("\t")[1] for ln in text.splitlines() if ln.split("\t")[0] == "winner"
        )
        # an archived selection names its configs relative to the checkout
        if not path.startswith("/") and not os.path.isfile(path):
            path = f"{ROOT}/{path}"
        w = self.load(path)
        ckpt = f"{run_dir}/checkpoints"
        if (
            seed == self.args.seeds[0]
            and not os.path.isfile(f"{ckpt}/checkpoint_last.pt")
            and not os.path.isfile(f"{run_dir}/train.done")
        ):
            src = f"{sysdir}/select/{w['NAME']}"
            os.makedirs(ckpt, exist_ok=True)
            for name in ("checkpoint_last.pt", "checkpoint_best.pt"):
                shutil.copyfile(f"{src}/checkpoints/{name}", f"{ckpt}/{name}")
            for name in ("train.log", "wall.pieces", "cpu.pieces"):  # its time counts too
                shutil.copyfile(f"{src}/{name}", f"{run_dir}/{name}")
        return w, path

    def decode(self, c, run_dir, tag, gen):
        """fairseq-generate GEN into RUN_DIR/generate-SUBSET.txt unless a decoding newer than
        checkpoint_best.pt is there; returns whether it decoded."""
        subset = self.args.subset
        hyps = f"{run_dir}/generate-{subset}.txt"
        if compare.newer(f"{run_dir}/generate.done", f"{run_dir}/checkpoints/checkpoint_best.pt"):
            self.say(f"[{tag}] already decoded ({hyps})")
            return False
        self.say(f"[{tag}] decoding {subset} (beam {c['BEAM']}, lenpen {c['LENPEN']}) -> {hyps}")
        start = int(time.time())
        log = f"{run_dir}/generate.log"
        with open(hyps, "w") as out, open(log, "w") as err:
            status = subprocess.run(gen, stdout=out, stderr=err, close_fds=False).returncode
        if status != 0:
            compare.tail(log, 20)
            raise ExperimentError(f"[{tag}] fairseq-generate failed (see {log})")
        # every sentence must be scored (with the default --required-batch-size-multiple 8 this
        # fairseq build silently drops the remainder batch)
        pair = re.escape(f" {subset} {c['SRC']}-{c['TGT']} ")
        n_data = re.findall(pair + r"([0-9]+) examples", Path(log).read_text(errors="replace"))
        with open(hyps, "rb") as f:
            n_hyp = sum(1 for line in f if line.startswith(b"H-"))
        if n_data and int(n_data[-1]) != n_hyp:
            raise ExperimentError(
                f"[{tag}] fairseq-generate wrote {n_hyp} hypotheses for {n_data[-1]} {subset} "
                f"sentences (see {log})"
            )
        Path(run_dir, "generate.seconds").write_text(f"{int(time.time()) - start}\n")
        Path(run_dir, "generate.done").touch()
        return True

    def run(self, cfg, seed, collect):
        """One config at one seed: restored from the archive, trained, decoded and archived
        (under its run lock); in the collect pass also its row. The claim pass skips a finished
        run and one another process holds."""
        args = self.args
        c = self.load(cfg)
        name = c["NAME"]
        sysdir = run_dir = f"{self.out}/{name}"
        tag = name
        if seed:
            run_dir, tag = f"{sysdir}/seed{seed}", f"{name}-seed{seed}"
        os.makedirs(run_dir, exist_ok=True)
        kept = f"{args.archive}/{run_dir[len(self.out) + 1 :]}" if args.archive else ""
        done = f"{run_dir}/generate.done"
        if kept and not collect:
            self.restore_from_archive(name, sysdir, run_dir, tag, kept)
        best = f"{run_dir}/checkpoints/checkpoint_best.pt"
        if not collect and os.path.isfile(f"{run_dir}/train.done") and compare.newer(done, best):
            return  # finished: the collect pass reports it
        lock = runs.FileLock(f"{run_dir}/run.lock")
        if not lock.acquire(blocking=collect):
            self.say(f"[{tag}] busy in another process, skipped for now")
            return
        try:
            shutil.copyfile(cfg, f"{sysdir}/config.sh")
            selected, arch_cfg = "", cfg
            if c["SELECT_FROM"]:
                c, arch_cfg = self.winner(c, sysdir, seed, run_dir)
                selected, c["NAME"] = c["NAME"], name
            train_args = [*c["TRAIN_ARGS"], *(["--seed", seed] if seed else []), *args.extra]
            gen = self.generate_command(c, best)
            if not args.skip_train:
                self.train(c, run_dir, tag, train_args)
            trained = Path(run_dir, "train-command.txt")
            commands = trained.read_text() if trained.is_file() else ""
            Path(run_dir, "commands.txt").write_text(commands + compare.shell_line(gen))
            # (a run restored from --archive has its hypotheses but no checkpoint)
            if not os.path.isfile(best) and not os.path.isfile(done):
                raise ExperimentError(f"[{tag}] no {best}")
            decoded = self.decode(c, run_dir, tag, gen)
            if kept and (decoded or not os.path.isfile(f"{kept}/generate.done")):
                self.save_to_archive(name, sysdir, run_dir, seed, tag, kept)
        finally:
            lock.release()
        if collect:
            self.collect(c, cfg, seed, run_dir, selected, arch_cfg)

    def restore_from_archive(self, name, sysdir, run_dir, tag, kept):
        """A run decoded in the archive (KEPT) but not here is restored, so it is not redone."""
        decoded_here = os.path.isfile(f"{run_dir}/generate.done")
        if decoded_here or not os.path.isfile(f"{kept}/generate.done"):
            return
        run_archive.restore(kept, run_dir)
        if os.path.isfile(f"{self.args.archive}/{name}/selection.txt"):
            shutil.copyfile(f"{self.args.archive}/{name}/selection.txt", f"{sysdir}/selection.txt")
        self.say(f"[{tag}] restored from {kept} (finished earlier)")

    def generate_command(self, c, best):
        """fairseq-generate of checkpoint BEST on --subset with config C's beam settings."""
        gen = ["fairseq-generate", c["DATA"], "--user-dir", self.user_dir]
        gen += ["--task", "translation", "--source-lang", c["SRC"], "--target-lang", c["TGT"]]
        gen += ["--path", best, "--gen-subset", self.args.subset, "--beam", c["BEAM"]]
        gen += ["--lenpen", c["LENPEN"], "--batch-size", self.args.batch_size]
        gen += ["--required-batch-size-multiple", "1", *c["GEN_ARGS"]]
        return gen

    def save_to_archive(self, name, sysdir, run_dir, seed, tag, kept):
        """The run saved to the archive (KEPT), with the system's selection at the first seed."""
        run_archive.save(run_dir, kept)
        # (the archive holds paths relative to the checkout only)
        selection = Path(sysdir, "selection.txt")
        if selection.is_file() and seed == self.args.seeds[0]:
            text = selection.read_text().replace(f"{ROOT}/", "")
            Path(self.args.archive, name, "selection.txt").write_text(text)
        self.say(f"[{tag}] archived in {kept}")

    def collect(self, c, cfg, seed, run_dir, selected, arch_cfg):
        """The run's row of the report and of OUT/runs.tsv."""
        name = c["NAME"]
        self.hyps.setdefault(seed, []).append(f"{run_dir}/generate-{self.args.subset}.txt")
        figures = compare.RunFigures(run_dir)
        updates = best = epochs = "-"
        if figures.log:
            self.logs.append(figures.log)
            self.labels.append(name)
            updates = figures.updates(r"\| valid \|")
            train_lines = [
                ln for ln in figures.text.splitlines() if re.search(r"\| train \| epoch", ln)
            ]
            epochs = compare.last_number(train_lines, r"epoch ([0-9]+)", strip_zeros=True)
            best = compare.best_valid_loss(figures.text) or "-"
        arch = c["ARCH"] + (f" ({selected})" if selected else "")
        self.rows.append(
            f"| {name} | `{arch}` | {seed or 'config'} | `{cfg}` | {c['SRC']}→{c['TGT']} | "
            f"{c['BEAM']} | {c['LENPEN']} | {figures.params} | {epochs} | {updates} | {best} | "
            f"{figures.seconds} | {figures.cpu or '-'} | {figures.wps} |"
        )
        cells = [name, seed, c["ARCH"], arch_cfg, run_dir, c["SRC"], c["TGT"], c["BEAM"]]
        with open(f"{self.out}/runs.tsv", "a") as tsv:
            tsv.write("\t".join([*cells, c["LENPEN"], selected]) + "\n")
        self.commands.append(
            (name + (f" (seed {seed})" if seed else ""), f"{run_dir}/commands.txt")
        )
        self.tgt = c["TGT"]

    # ------------------------------------------------------------------------- the report

    def significance(self, names):
        """scripts/bleu-significance.py of every system against the first, per seed; the stems
        of the files written (OUT/STEM.md, OUT/STEM.json)."""
        stems = []
        tokenized = [] if self.args.detokenized else ["--tokenized"]
        for seed in self.args.seeds:
            stem = f"significance-seed{seed}" if seed else "significance"
            against = f" (seed {seed})" if seed else ""
            self.say(f"significance of {' '.join(names[1:])} against {names[0]}{against}")
            cmd = [*self.hyps.get(seed, []), "--names", *names, *tokenized, "--lang", self.tgt]
            cmd += [
                "--format",
                "markdown",
                "--json",
                f"{self.out}/{stem}.json",
                *self.args.sig_args,
            ]
            sys.stderr.flush()
            with open(f"{self.out}/{stem}.md", "w") as md:
                if compare.run_python("bleu-significance.py", *cmd, stdout=md).returncode != 0:
                    raise ExperimentError("significance test failed")
            stems.append(stem)
        return stems

    def curves(self):
        """scripts/plot-curves.py of the validation loss, one line per system (the mean over its
        seeds with a band); "curves.png" when it was written."""
        if not self.logs:
            return ""
        cmd = [*self.logs, "--labels", *self.labels, "--group", "--metric", "loss"]
        cmd += ["--out", f"{self.out}/curves.png"]
        ok = compare.run_python("plot-curves.py", *cmd, stdout=sys.stderr).returncode == 0
        return "curves.png" if ok else ""

    def report(self, names):
        stems = self.significance(names)
        curves = self.curves()
        subset = self.args.subset
        text = compare.report_heading(
            self.usage, f"NMT comparison: {' '.join(names)}", f"Decoded subset: `{subset}`;"
        )
        text += f"baseline: **{names[0]}**; references: the T- lines of fairseq-generate.\n\n"
        text += "## Systems\n\n"
        text += (
            "| System | Arch | Seed | Config | Pair | Beam | Lenpen | Params | Epochs | Updates "
            "| Best valid loss | Train wall (s) | Train CPU (s) | Train words/s |\n"
        )
        text += "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        text += "".join(row + "\n" for row in self.rows) + "\n"
        for stem in stems:
            text += (
                f"## Paired significance against {names[0]}{stem.removeprefix('significance')}\n\n"
            )
            text += Path(self.out, f"{stem}.md").read_text() + "\n"
            text += f"Machine-readable: `{stem}.json`. Hypotheses: `NAME/[seedS/]generate-{subset}.txt`.\n\n"
        if curves:
            text += f"## Validation loss\n\n![validation loss vs epoch and updates]({curves})\n\n"
        text += compare.report_commands(self.out, self.commands)
        Path(self.out, "REPORT.md").write_text(text)
        compare.report_done(self.prog, "nmt", self.out, self.args.doc, self.args.smoke)

    def main(self, argv0, argv):
        names = compare.unique_names(self.args.configs, self.load)
        compare.write_invocation(self.out, argv0, argv)
        # Two passes, so that several processes started with the same command share the runs
        # (one process per core; each run folder is locked, RUN/run.lock, while it trains or
        # decodes): the claim pass takes the runs no other process holds and skips the others;
        # the collect pass, under OUT/report.lock, waits for every run (doing what is left),
        # then collects the rows, the significance tests and the report (the last process to
        # get there writes them last).
        for seed in self.args.seeds:
            for cfg in self.args.configs:
                self.run(cfg, seed, collect=False)
        with runs.FileLock(f"{self.out}/report.lock"):
            header = ["name", "seed", "arch", "config", "dir", "src", "tgt", "beam", "lenpen"]
            Path(self.out, "runs.tsv").write_text("\t".join([*header, "selected"]) + "\n")
            self.rows, self.logs, self.labels, self.hyps, self.commands = [], [], [], {}, []
            for seed in self.args.seeds:
                for cfg in self.args.configs:
                    self.run(cfg, seed, collect=True)
            self.report(names)
        return 0


def main(argv, prog="compare-nmt", usage="scripts/experiment.py compare-nmt", argv0=None):
    """ARGV0: the command as invoked, recorded in OUT/invocation.txt (the wrapper's path)."""
    args = parse(argv, usage)
    runs.use_venv()
    argv0 = argv0 or usage
    return Comparison(args, prog, usage).main(argv0, argv)
