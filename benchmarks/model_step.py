"""Whole-model training step (forward + loss + backward, output layer included) of the plugin's
presets against the stock model of the same shape (or, for the compositional-generalisation
rows, against their baseline rel2-eb-c), built through fairseq's own parser with --user-dir, as a
user would get them.

Pairs: the compositional and graph (half-dim, weight-gate) IWSLT presets against
``transformer_iwslt_de_en`` (B=32 sentences, 30 tokens on both sides, one joined dictionary of
8,000 words), and the compositional WikiText-103 LM against its baseline twin (tokens per sample
512). The ``compgen`` group (``--pairs compgen``) times each position-method row of
docs/compgen-results.md against ``compgen_rel2_eb_c``, the row the grid pairs it with, at the shape
the flags give (e.g. Reverse's: ``--batch 64 --src-len 16 --tgt-len 17 --vocab 40``): the grid's
CPU-time ratios compare runs made on different machines, this one runs both in one process. All
models are built in one process; each round times one step of every model in a rotating
order, and the speed ratio is the per-round paired stock_time / preset_time, median (IQR).

Next to each ratio the arithmetic bound: stock FLOPs / preset FLOPs of one step, counted by
``torch.utils.flop_counter.FlopCounterMode`` (matrix products and attention), i.e. the ratio the
preset would reach if both models ran their products at the same rate and everything else were
free. ``of bound`` = measured ratio / bound.

    python benchmarks/model_step.py --quick     # a few minutes on 2 cores
    python benchmarks/model_step.py --threads 2 --rounds 12
    python benchmarks/model_step.py --pairs compgen --batch 64 --src-len 16 --tgt-len 17 \
        --vocab 40 --name compgen-step
"""

import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common  # noqa: E402  (benchmarks/common.py)

from plugin_tools.cli import OneLineParser  # noqa: E402
from studies.grid_plan import POSITION_ROWS  # noqa: E402

# (name, task, preset with its options, stock reference)
PAIRS = [
    (
        "compositional",
        "translation",
        "compositional_transformer_iwslt_de_en",
        "transformer_iwslt_de_en",
    ),
    (
        "graph",
        "translation",
        "graph_transformer_iwslt_de_en --graph-half-dim --graph-fusion weight-gate",
        "transformer_iwslt_de_en",
    ),
    (
        "lm",
        "language_modeling",
        "compositional_transformer_lm_wiki103",
        "compositional_transformer_lm_wiki103_baseline",
    ),
]
# The position-method rows of the compositional-generalisation grid against their baseline (the
# copy decoder needs a joined dictionary, which Case builds). The digit-position rows (Abacus,
# coupling) are left out: their ids are read from digit tokens, which the synthetic dictionary lacks.
PAIRS += [
    (f"compgen-{row.removeprefix('compgen_')[:-2]}", "translation", row, "compgen_rel2_eb_c")
    for row in POSITION_ROWS
    if "abacus" not in row and "coupled" not in row
]


class Case:
    def __init__(self, task, spec, dictionary, args, device):
        self.spec = spec
        extra = ["--tokens-per-sample", str(args.lm_tokens)] if task == "language_modeling" else []
        self.model = common.build_model(task, spec, dictionary, extra).to(device).train()
        gen = torch.Generator().manual_seed(0)
        low, high = dictionary.nspecial, len(dictionary)
        if task == "translation":
            bsz, src_len, tgt_len = args.batch, args.src_len, args.tgt_len
            src = torch.randint(low, high, (bsz, src_len), generator=gen)
            src[:, -1] = dictionary.eos()
            tgt = torch.randint(low, high, (bsz, tgt_len), generator=gen)
            tgt[:, -1] = dictionary.eos()
            prev = torch.cat([tgt[:, -1:], tgt[:, :-1]], dim=1)
            lengths = torch.full((bsz,), src_len, dtype=torch.long)
            self.inputs = (src.to(device), lengths.to(device), prev.to(device))
            self.target = tgt.to(device)
            self.shape = dict(batch=bsz, src_len=src_len, tgt_len=tgt_len)
        else:
            tokens = torch.randint(low, high, (args.lm_batch, args.lm_tokens + 1), generator=gen)
            self.inputs = (tokens[:, :-1].to(device),)
            self.target = tokens[:, 1:].to(device)
            self.shape = dict(batch=args.lm_batch, tokens_per_sample=args.lm_tokens)

    def step(self):
        for p in self.model.parameters():
            p.grad = None
        logits = self.model(*self.inputs)[0]
        loss = F.cross_entropy(
            logits.float().view(-1, logits.size(-1)), self.target.reshape(-1), reduction="sum"
        )
        loss.backward()

    def flops(self):
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with counter:
            self.step()
        return counter.get_total_flops()


def main():
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 rounds, LM batch 1")
    parser.add_argument(
        "--pairs",
        default="compositional,graph,lm",
        help="comma list of pairs (compositional, graph, lm, or compgen: every compgen-* pair)",
    )
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 10)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32, help="translation sentences")
    parser.add_argument("--src-len", type=int, default=30)
    parser.add_argument("--tgt-len", type=int, default=30)
    parser.add_argument("--vocab", type=int, default=8000, help="joined dictionary size")
    parser.add_argument("--lm-tokens", type=int, default=512, help="LM tokens per sample")
    parser.add_argument("--lm-batch", type=int, default=None, help="LM samples (default 2)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1; recorded)"
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    common.add_output_options(parser, "model-step")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    args.rounds = args.rounds or (4 if args.quick else 10)
    args.lm_batch = args.lm_batch or (1 if args.quick else 2)
    wanted = args.pairs.split(",")
    known = {p[0] for p in PAIRS} | {"compgen"}
    if set(wanted) - known:
        parser.error(f"--pairs: unknown {sorted(set(wanted) - known)}; known: {sorted(known)}")
    group = "compgen" in wanted  # every compgen-* pair
    pairs = [p for p in PAIRS if p[0] in wanted or (group and p[0].startswith("compgen-"))]
    dictionary = common.dictionary_of(args.vocab)

    cases = {}
    for _, task, preset, stock in pairs:
        for spec in (preset, stock):
            if (task, spec) not in cases:
                cases[(task, spec)] = Case(task, spec, dictionary, args, device)
    flops = {key: case.flops() for key, case in cases.items()}

    def timed(case):
        common.sync(device)
        start, cpu_start = time.perf_counter(), time.process_time()
        case.step()
        common.sync(device)
        return time.perf_counter() - start, time.process_time() - cpu_start

    order = list(cases)
    for key in order:
        for _ in range(args.warmup):
            cases[key].step()
    times = {key: [] for key in order}  # wall-clock seconds per step
    cpu = {key: [] for key in order}  # CPU seconds of this process per step
    for r in range(args.rounds):
        for key in order[r % len(order) :] + order[: r % len(order)]:
            wall, used = timed(cases[key])
            times[key].append(wall)
            cpu[key].append(used)
        print(f"  round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)

    rows = {}
    for name, task, preset, stock in pairs:
        p, s = (task, preset), (task, stock)
        ratio = common.summary([b / a for a, b in zip(times[p], times[s])])
        cpu_ratio = common.summary([b / a for a, b in zip(cpu[p], cpu[s])])
        bound = flops[s] / flops[p]
        rows[name] = {
            "task": task,
            "preset": preset,
            "stock": stock,
            "shape": cases[p].shape,
            "preset_ms": common.summary([1e3 * t for t in times[p]]),
            "stock_ms": common.summary([1e3 * t for t in times[s]]),
            "preset_gflop": flops[p] / 1e9,
            "stock_gflop": flops[s] / 1e9,
            "preset_cpu_ms": common.summary([1e3 * t for t in cpu[p]]),
            "stock_cpu_ms": common.summary([1e3 * t for t in cpu[s]]),
            "speed_vs_stock": ratio,
            "cpu_speed_vs_stock": cpu_ratio,
            "flop_bound": bound,
            "of_bound": ratio["median"] / bound,
            "cpu_of_bound": cpu_ratio["median"] / bound,
            "parameters": sum(x.numel() for x in cases[p].model.parameters()),
        }
    info = common.run_info(device, args, "rounds", "warmup", "vocab", "threads")
    m = info["machine"]
    lines = [
        "# Whole-model training step (forward + loss + backward)",
        "",
        f"{m['cpu']} / {m['device']}, torch {m['torch']}, fairseq {m.get('fairseq', '?')}, "
        f"{args.threads} thread(s); git {m['git']}. Models built by fairseq's parser "
        f"(--user-dir), train mode (preset dropout), joined dictionary of {args.vocab}, output "
        f"layer and cross-entropy included; {args.rounds} interleaved rounds after {args.warmup} "
        "warm-up steps. Speed: per-round paired reference_time / preset_time, median (IQR), from "
        "wall-clock time and from this process's CPU time (time.process_time: robust to other "
        "processes taking the cores; with 1 thread it is the time the step computed). FLOP bound: "
        "reference FLOPs / preset FLOPs of one step (FlopCounterMode); of bound = speed / bound.",
        "",
        "Reference: stock fairseq's model of the same shape, or the row's baseline for the "
        "compgen-* pairs.",
        "",
        "| preset | reference | shape | preset ms wall (CPU) | reference ms wall (CPU) | speed, wall "
        "| speed, CPU time | FLOP bound | of bound (wall, CPU) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows.values():
        a, b = row["preset_ms"], row["stock_ms"]
        q, c = row["speed_vs_stock"], row["cpu_speed_vs_stock"]
        shape = ", ".join(f"{k}={v}" for k, v in row["shape"].items())
        lines.append(
            f"| `{row['preset']}` | `{row['stock']}` | {shape} | {a['median']:.0f} "
            f"({row['preset_cpu_ms']['median']:.0f}) | {b['median']:.0f} "
            f"({row['stock_cpu_ms']['median']:.0f}) | {q['median']:.2f}x ({q['q1']:.2f}-"
            f"{q['q3']:.2f}) | {c['median']:.2f}x ({c['q1']:.2f}-{c['q3']:.2f}) "
            f"| {row['flop_bound']:.2f}x | {row['of_bound']:.2f}, {row['cpu_of_bound']:.2f} |"
        )
    markdown = "\n".join(lines) + "\n"
    common.write_results(args.name, dict(info, results=rows), markdown, folder=args.results)


if __name__ == "__main__":
    main()
