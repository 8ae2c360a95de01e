"""Beam-search decoding speed (sentences/second) of the plugin's presets against the stock
transformer of the same shape, with fairseq's SequenceGenerator and incremental decoding.

Random-init models decode a fixed synthetic source batch; EOS is forbidden until the fixed maximum
length (min_len = max_len), so every model runs exactly the same number of beam steps on the same
number of hypotheses: equal work. Models are timed in interleaved rounds (rotating order); the
speed ratio is the per-round paired stock_time / preset_time, median and IQR.

    python benchmarks/decode.py --quick    # 3 pairs, 3 rounds: about a minute on 2 idle cores
    python benchmarks/decode.py            # more rounds; on CUDA bigger batches
"""

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common  # noqa: E402  (benchmarks/common.py)

from plugin_tools.cli import OneLineParser  # noqa: E402

# (preset with its options, stock reference of the same shape)
PAIRS = [
    ("compositional_transformer_iwslt_de_en", "transformer_iwslt_de_en"),
    (
        "graph_transformer_iwslt_de_en --graph-half-dim --graph-fusion weight-gate",
        "transformer_iwslt_de_en",
    ),
    ("graph_transformer_iwslt_de_en", "transformer_iwslt_de_en"),
    ("compgen_rel2_eb_c", "compgen_abs"),
    ("compgen_rel2_eb", "compgen_abs"),
    ("compgen_small_2 --attention-type compositional", "compgen_abs"),
]
QUICK_PAIRS = PAIRS[:2] + PAIRS[3:4]


def translation_model(spec, vocab, device):
    dictionary = common.dictionary_of(vocab)
    model = common.build_model("translation", spec, dictionary).to(device).eval()
    return model, dictionary


def source_batch(dictionary, sentences, length, device):
    gen = torch.Generator().manual_seed(0)
    low = dictionary.nspecial
    tokens = torch.randint(low, len(dictionary), (sentences, length), generator=gen)
    tokens[:, -1] = dictionary.eos()
    return {
        "id": torch.arange(sentences),
        "net_input": {
            "src_tokens": tokens.to(device),
            "src_lengths": torch.full((sentences,), length, dtype=torch.long, device=device),
        },
    }


def main():
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 pairs, 3 rounds, 4 sentences (about a minute)"
    )
    parser.add_argument("--pairs", default=None, help="comma list of substrings of preset names")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=None, help="CPU 8, CUDA 128")
    parser.add_argument("--src-len", type=int, default=20, help="source tokens (incl. EOS)")
    parser.add_argument("--max-len", type=int, default=None, help="output tokens (default 20)")
    parser.add_argument("--vocab", type=int, default=8000, help="joined dictionary size")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (default 10, quick 3)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1 on CPU: on a shared machine 2+ threads spin in OpenMP barriers)",
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    common.add_output_options(parser, "decode")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    args.sentences = args.sentences or (128 if cuda else (4 if args.quick else 8))
    args.max_len = args.max_len or 20
    args.repeats = args.repeats or (3 if args.quick else 10)
    pairs = QUICK_PAIRS if args.quick else PAIRS
    if args.pairs:
        pairs = [p for p in PAIRS if any(k in p[0] for k in args.pairs.split(","))]

    from fairseq.sequence_generator import SequenceGenerator

    specs = list(dict.fromkeys([s for pair in pairs for s in pair]))
    generators, dictionary = {}, None
    for spec in specs:
        model, dictionary = translation_model(spec, args.vocab, device)
        generators[spec] = (
            model,
            SequenceGenerator(
                [model],
                dictionary,
                beam_size=args.beam,
                max_len_a=0,
                max_len_b=args.max_len,
                min_len=args.max_len,  # no EOS before max_len: equal work for every model
            ),
        )
    sample = source_batch(dictionary, args.sentences, args.src_len, device)

    def run(spec):
        model, generator = generators[spec]
        common.sync(device)
        start = time.perf_counter()
        hyps = generator.generate([model], sample)
        common.sync(device)
        assert all(len(h[0]["tokens"]) == args.max_len + 1 for h in hyps)  # + EOS
        return time.perf_counter() - start

    from torch.utils.flop_counter import FlopCounterMode

    flops = {}
    for spec in specs:
        for _ in range(args.warmup):
            run(spec)
        counter = FlopCounterMode(display=False)
        with counter:  # one more generation, counted (matrix products and attention)
            run(spec)
        flops[spec] = counter.get_total_flops()
    times = {s: [] for s in specs}
    for r in range(args.repeats):
        for spec in specs[r % len(specs) :] + specs[: r % len(specs)]:
            times[spec].append(run(spec))
        print(f"  round {r + 1}/{args.repeats}", file=sys.stderr, flush=True)

    rows = {}
    for spec in specs:
        row = {
            "time_s": common.summary(times[spec]),
            "sentences_per_s": common.summary([args.sentences / t for t in times[spec]]),
            "parameters": sum(p.numel() for p in generators[spec][0].parameters()),
            "gflop": flops[spec] / 1e9,
        }
        stock = next((b for a, b in pairs if a == spec), None)
        if stock:
            row["stock"] = stock
            row["speed_vs_stock"] = common.summary(
                [a / b for a, b in zip(times[stock], times[spec])]
            )
            row["flop_bound"] = flops[stock] / flops[spec]
        rows[spec] = row
    info = common.run_info(
        device, args, "beam", "sentences", "src_len", "max_len", "vocab", "repeats", "warmup"
    )
    common.write_results(
        args.name, dict(info, results=rows), markdown(info, args, rows), args.results
    )


def markdown(info, args, rows):
    """The results table with its header."""
    m = info["machine"]
    lines = [
        "# Beam-search decoding (fairseq SequenceGenerator, incremental decoding)",
        "",
        f"{m['cpu']} / {m['device']}, torch {m['torch']}, {m['threads']} threads; git {m['git']}. "
        f"Beam {args.beam}, {args.sentences} random source sentences of {args.src_len} tokens, "
        f"exactly {args.max_len} output tokens (min_len = max_len), joined vocabulary "
        f"{args.vocab}, random init, {args.repeats} interleaved rounds. Speed: per-round paired "
        "stock_time / preset_time, median (IQR). FLOP bound: stock GFLOP / preset GFLOP of one "
        "generation (FlopCounterMode), the ratio the preset would reach if its extra arithmetic "
        "were all it cost.",
        "",
        "| preset | params | GFLOP | sentences/s | speed vs stock | FLOP bound | stock |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec, row in rows.items():
        s = row["sentences_per_s"]
        ratio = row.get("speed_vs_stock")
        ratio = f"{ratio['median']:.2f}x ({ratio['q1']:.2f}-{ratio['q3']:.2f})" if ratio else ""
        bound = f"{row['flop_bound']:.2f}x" if "flop_bound" in row else ""
        lines.append(
            f"| `{spec}` | {row['parameters'] / 1e6:.1f}M | {row['gflop']:.1f} | {s['median']:.2f} "
            f"({s['q1']:.2f}-{s['q3']:.2f}) | {ratio} | {bound} | {row.get('stock', '')} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
