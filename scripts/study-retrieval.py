#!/usr/bin/env python3
"""The Contextual Retrieval study: multi-head attention at several head counts (S* and
S*R* among them) against compositional attention with S* searches and R* retrievals, at two
widths, on the paper's three settings, i.i.d. and OoD, several seeds; every run is one
fairseq-train process (--task contextual_retrieval) and one row of OUT/runs.csv; its validation
curve goes to OUT/curves.csv.

  run      train the runs not yet in OUT/runs.csv (resumable: a finished run is never redone; an
           interrupted one is started again), JOBS processes at a time, each one thread, nice 10
  report   tables (mean +- std over seeds, parameter counts, CPU time), learning curves and the
           specialisation figure into the document between its <!-- study:begin/end --> marks

Protocols: --protocol budget (default: --updates 1500 at lr 1e-3, validation every 250 updates on
50 batches of 256 fixed per seed) or --protocol paper (the authors': 100,000 updates, lr 1e-4,
validation every 5,000 updates on 100 batches drawn afresh each time, --fresh-valid). Batch 256
and Adam's defaults in both. An interrupted run resumes from its checkpoint_last.pt.

Usage: scripts/study-retrieval.py run [--out DIR] [--protocol budget|paper] [--seeds 3]
           [--settings 2x4,4x8,4x16] [--modes iid,ood] [--widths 32,64] [--ood-widths 64]
           [--jobs 2] [--updates N] [--models mha-h4,comp-s4r8]
           [--only-first N] [--dry-run]
       scripts/study-retrieval.py report [--out DIR] [--doc docs/results-contextual-retrieval.md]
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _this_checkout import ROOT

from plugin_tools.cli import OneLineParser
from studies.retrieval_study import SETTINGS
from studies.runs import read_rows

PROG = "study-retrieval.py"
PROTOCOLS = {
    # updates, lr, validation interval (updates), validation batches
    "budget": dict(updates=1500, lr="1e-3", interval=250, valid_batches=50),
    "paper": dict(updates=100000, lr="1e-4", interval=5000, valid_batches=100, fresh_valid=True),
}
RUN_FIELDS = [
    "run", "setting", "mode", "model", "attention", "heads", "searches", "retrievals", "dim",
    "params", "seed", "updates", "lr", "iid_l1", "ood_l1", "wall_s", "cpu_s",
]  # fmt: skip
CURVE_FIELDS = ["run", "num_updates", "subset", "l1"]


def models_for(setting):
    """(name, attention args) of the study's models for one setting: MHA with S* heads, with S*R*
    heads (one per search-retrieval pairing, the paper's argument), compositional S*, R*."""
    searches, retrievals = SETTINGS[setting]
    pairings = searches * retrievals
    return [
        (f"mha-h{searches}", dict(attention="multihead", heads=searches)),
        (f"mha-h{pairings}", dict(attention="multihead", heads=pairings)),
        (
            f"comp-s{searches}r{retrievals}",
            dict(attention="compositional", searches=searches, retrievals=retrievals),
        ),
    ]


def plan(args):
    """Every run of the study in the order they run: setting by setting (the paper's 2x4 first),
    i.i.d. then OoD, width by width, seed by seed, so that cells fill up one after the other."""
    runs = []
    for setting in args.settings:
        for mode in args.modes:
            for dim in args.widths if mode == "iid" else args.ood_widths:
                for seed in range(1, args.seeds + 1):
                    for name, attn in models_for(setting):
                        if args.models and name not in args.models:
                            continue
                        heads = attn.get("heads") or attn["searches"]
                        if dim % heads or dim % attn.get("retrievals", heads):
                            continue  # a width the heads do not divide (e.g. 64 heads at d 32)
                        run_id = f"{setting}-{mode}-{name}-d{dim}-s{seed}"
                        runs.append(dict(run=run_id, setting=setting, mode=mode, model=name,
                                         dim=dim, seed=seed, **attn))  # fmt: skip
    return runs[: args.only_first] if args.only_first else runs


def train_command(run, protocol, save_dir):
    searches, retrievals = SETTINGS[run["setting"]]
    p = protocol
    cmd = [
        str(Path(sys.executable).parent / "fairseq-train"), "--user-dir", str(ROOT / "fairseq_plugins"),
        "--task", "contextual_retrieval", "--gt-searches", str(searches),
        "--gt-retrievals", str(retrievals), "--arch", "contextual_retrieval_model",
        "--encoder-embed-dim", str(run["dim"]), "--attention-type", run["attention"],
        "--criterion", "l1_loss", "--optimizer", "adam", "--lr", p["lr"],
        "--batch-size", "256", "--epoch-batches", str(p["interval"]),
        "--valid-batches", str(p["valid_batches"]), "--max-update", str(p["updates"]),
        "--seed", str(run["seed"]), "--cpu", "--num-workers", "0", "--save-dir", str(save_dir),
        "--no-epoch-checkpoints", "--log-format", "simple",
        "--log-interval", str(p["interval"]),
    ]  # fmt: skip
    if run["attention"] == "multihead":
        cmd += ["--encoder-attention-heads", str(run["heads"])]
    else:
        cmd += ["--num-searches", str(run["searches"]), "--num-retrievals", str(run["retrievals"])]
    if run["mode"] == "ood":
        # held-out first: its loss picks checkpoint_best (the authors evaluate it alone)
        cmd += ["--ood", "--valid-subset", "ood,valid" if p.get("fresh_valid") else "valid,ood"]
    if p.get("fresh_valid"):
        cmd += ["--fresh-valid"]
    return cmd


VALID_LINE = re.compile(r"valid on '(\w+)' subset \| loss ([0-9.]+) .*num_updates (\d+)")
PARAMS_LINE = re.compile(r"num\. shared model params: ([\d,]+)")


def parse_log(text):
    """(params, [(num_updates, subset, l1)]) from a fairseq-train log."""
    params = PARAMS_LINE.search(text)
    curve = [(int(u), s, float(v)) for s, v, u in VALID_LINE.findall(text)]
    return (int(params.group(1).replace(",", "")) if params else None), curve


def run_one(run, protocol, out, lock):
    run_dir = out / "runs" / run["run"]
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    log_path = run_dir / "train.log"
    # A run cut short (logout, kill) resumes from its checkpoint_last.pt: the log is
    # appended to, and each process's wall and CPU time is kept in its own segment file, updated
    # while it runs, so the row's cost adds up every segment, including interrupted ones.
    segment = run_dir / f"segment-{len(list(run_dir.glob('segment-*.json'))) + 1}.json"
    with open(log_path, "a") as log:
        proc = subprocess.Popen(
            ["nice", "-n", "10", *train_command(run, protocol, run_dir)],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=run_dir,
            # setsid: the kernel's autogroup scheduling then weighs it as one
            # process group, as each background experiment is, not as a share of ours
            start_new_session=True,
        )  # fmt: skip
        status = wait_recording(proc.pid, segment)
    text = log_path.read_text()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"{PROG}: {run['run']} failed, see {log_path}", file=sys.stderr, flush=True)
        return
    params, curve = parse_log(text)
    curve = list({(u, s): (u, s, v) for u, s, v in curve}.values())  # a resumed epoch: last wins
    last = {subset: l1 for _, subset, l1 in curve}  # the last validation of each subset
    costs = [json.loads(p.read_text()) for p in run_dir.glob("segment-*.json")]
    row = dict(
        run=run["run"], setting=run["setting"], mode=run["mode"], model=run["model"],
        attention=run["attention"], heads=run.get("heads", ""), searches=run.get("searches", ""),
        retrievals=run.get("retrievals", ""), dim=run["dim"], params=params, seed=run["seed"],
        updates=protocol["updates"], lr=protocol["lr"], iid_l1=last.get("valid"),
        ood_l1=last.get("ood", ""), wall_s=round(sum(c["wall_s"] for c in costs), 1),
        cpu_s=round(sum(c["cpu_s"] for c in costs), 1),
    )  # fmt: skip
    with lock:
        append_rows(out / "curves.csv", CURVE_FIELDS, [
            dict(run=run["run"], num_updates=u, subset=s, l1=v) for u, s, v in curve
        ])  # fmt: skip
        append_rows(out / "runs.csv", RUN_FIELDS, [row])
    print(f"{run['run']}: iid {row['iid_l1']} ood {row['ood_l1'] or '-'} params {params} "
          f"cpu {row['cpu_s']} s", flush=True)  # fmt: skip


def wait_recording(pid, segment, every=10.0):
    """Wait for process PID; meanwhile (every EVERY s) and at its end write its wall and CPU
    seconds to SEGMENT. The wait status."""
    start, ticks = time.time(), os.sysconf("SC_CLK_TCK")
    written = 0.0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if not done and time.time() - written < every:
            time.sleep(0.5)
            continue
        written = time.time()
        if done:
            cpu = usage.ru_utime + usage.ru_stime
        else:
            try:  # utime and stime of /proc/PID/stat (fields 14, 15), after the command name
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                cpu = (int(fields[11]) + int(fields[12])) / ticks
            except (OSError, IndexError, ValueError):
                cpu = None
        if cpu is not None:
            cost = dict(wall_s=round(time.time() - start, 1), cpu_s=round(cpu, 1))
            segment.write_text(json.dumps(cost) + "\n")
        if done:
            return status


def append_rows(path, fieldnames, rows):
    new = not path.exists()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fieldnames)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def cmd_run(args):
    protocol = dict(PROTOCOLS[args.protocol])
    if args.updates:
        protocol["updates"] = args.updates
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    done = {r["run"] for r in read_rows(out / "runs.csv")}
    todo = [r for r in plan(args) if r["run"] not in done]
    (out / "protocol.json").write_text(json.dumps(protocol, indent=1) + "\n")
    print(f"{len(todo)} runs to do ({len(done)} done) in {out}, protocol {protocol}", flush=True)
    if args.dry_run:
        for r in todo:
            print(" ".join(train_command(r, protocol, out / "runs" / r["run"])))
        return
    lock = threading.Lock()
    with ThreadPoolExecutor(args.jobs) as pool:
        for future in [pool.submit(run_one, r, protocol, out, lock) for r in todo]:
            future.result()


def parse_list(text, choices=None, kind=str, flag=""):
    items = [kind(x) for x in text.split(",") if x]
    bad = [x for x in items if choices is not None and x not in choices]
    if not items or bad:
        raise argparse.ArgumentTypeError(f"{flag}: unknown {bad or text!r}")
    return items


def main(argv=None):
    p = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("command", choices=("run", "report"))
    p.add_argument("--out", type=Path, default=ROOT / "work" / "study-retrieval")
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="budget")
    p.add_argument("--updates", type=int, help="override the protocol's updates")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument(
        "--settings",
        type=lambda t: parse_list(t, SETTINGS, flag="--settings"),
        default=list(SETTINGS),
    )
    p.add_argument(
        "--modes",
        type=lambda t: parse_list(t, ("iid", "ood"), flag="--modes"),
        default=["iid", "ood"],
    )
    p.add_argument(
        "--widths", type=lambda t: parse_list(t, kind=int, flag="--widths"), default=[32, 64]
    )
    p.add_argument(
        "--ood-widths",
        type=lambda t: parse_list(t, kind=int, flag="--ood-widths"),
        default=[64],
        help="widths of the OoD runs (default 64)",
    )
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument(
        "--models",
        type=lambda t: parse_list(t, flag="--models"),
        help="only these models (names as in runs.csv, e.g. mha-h4,comp-s4r8): one queue per core",
    )
    p.add_argument("--only-first", type=int, help="the first N runs of the plan only")
    p.add_argument("--dry-run", action="store_true", help="print the commands, train nothing")
    p.add_argument("--doc", type=Path, default=ROOT / "docs" / "results-contextual-retrieval.md")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1 or (args.updates is not None and args.updates < 1):
        p.error("--seeds, --jobs and --updates must be >= 1")
    known = {name for setting in args.settings for name, _ in models_for(setting)}
    unknown = sorted(set(args.models or ()) - known)
    if unknown:
        p.error(f"--models: unknown {unknown}; known: {sorted(known)}")
    if args.command == "run":
        cmd_run(args)
    else:
        from studies.retrieval_report import write_report

        write_report(args.out, args.doc)


if __name__ == "__main__":
    main()
