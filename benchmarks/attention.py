"""Forward+backward time and peak memory of the plugin's attention modules and graph encoder
layers against stock fairseq (``MultiheadAttention``, ``TransformerEncoderLayer``) of the same
width and heads, plus a port of the official Compositional-Attention forward as a reference point.

Shapes: NMT (T=32, B=64) with a key padding mask (right padding; `nmt-left`: left padding, as
fairseq pads encoder sources), LM (T=512, B=4) with a causal mask; d=512, h=8,
S=R=8, d_s=32. Every variant is timed once per round, rounds interleave the variants (rotating
order), and speed ratios to stock are per-round paired ratios (median, IQR).

Peak memory: on CUDA ``torch.cuda.max_memory_allocated`` above the allocation before the call; on
CPU the peak resident set (VmHWM, reset through /proc/self/clear_refs) above the resident set before
the call, with glibc's mmap threshold fixed at 128 KiB so freed tensors leave the resident set (the
memory is measured in a child process with MALLOC_MMAP_THRESHOLD_ set; timings use the default
allocator). Also reported: the bytes of activations
saved for backward (unique storages, parameters and inputs excluded; saved_tensors_hooks), which
needs no allocator at all.

    python benchmarks/attention.py --quick          # a few minutes on 2 idle cores
    python benchmarks/attention.py                  # more rounds
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    MMAP_ENV,
    add_output_options,
    machine,
    measure_peak_bytes,
    rss_peak_supported,
    summary,
    sync,
    write_results,
)

from plugin_tools.cli import OneLineParser  # noqa: E402

SHAPES = {
    "nmt": dict(T=32, B=64, mask="padding"),
    # fairseq's encoders see sources padded on the left (--left-pad-source, its default)
    "nmt-left": dict(T=32, B=64, mask="left-padding"),
    "lm": dict(T=512, B=4, mask="causal"),
}
D, H, S, R, DS, FFN = 512, 8, 8, 8, 32, 2048


class OfficialCompositionalAttention(nn.Module):
    """A straightforward port of the forward of the official module (github
    sarthmit/Compositional-Attention): every search map is applied to every retrieval with
    broadcast (expanded) matmuls, the retrieval keys are built as a full (B, T, S, R, d_s) tensor,
    softmax over R, weighted sum. Batch-first inside; masks added to the search logits so that it
    does the same work as ours. Same parameter shapes as CompositionalAttention."""

    def __init__(self, dim, nheads, nrules, qk_dim=32, dot=True):
        super().__init__()
        self.dim, self.nheads, self.nrules, self.qk_dim, self.dot = dim, nheads, nrules, qk_dim, dot
        self.head_dim = dim // nheads
        self.query_net = nn.Linear(dim, dim)
        self.key_net = nn.Linear(dim, dim)
        self.value_net = nn.Linear(dim, self.head_dim * nrules)
        self.query_value_net = nn.Linear(dim, qk_dim * nheads)
        if dot:
            self.key_value_net = nn.Linear(self.head_dim, qk_dim)
        else:
            self.score_network = nn.Linear(self.head_dim + qk_dim, 1)
        self.final = nn.Linear(dim, dim)

    def forward(self, x, key_padding_mask=None, attn_mask=None):
        x = x.transpose(0, 1)  # (B, T, d)
        bsz, n, _ = x.shape
        q = self.query_net(x).reshape(bsz, n, self.nheads, self.head_dim).permute(0, 2, 1, 3)
        q = q / self.head_dim**0.5
        k = self.key_net(x).reshape(bsz, n, self.nheads, self.head_dim).permute(0, 2, 3, 1)
        v = self.value_net(x).reshape(bsz, n, self.nrules, self.head_dim).permute(0, 2, 1, 3)
        v = v.unsqueeze(1)  # (B, 1, R, T, d_h)
        score = torch.matmul(q, k)  # (B, S, T, T)
        if attn_mask is not None:
            score = score + attn_mask
        if key_padding_mask is not None:
            score = score.masked_fill(key_padding_mask.view(bsz, 1, 1, n), float("-inf"))
        score = F.softmax(score, dim=-1).unsqueeze(2)  # (B, S, 1, T, T)
        out = torch.matmul(score, v)  # (B, S, R, T, d_h): broadcast = expanded copies
        out = out.permute(0, 3, 1, 2, 4).reshape(bsz, n, self.nheads, self.nrules, self.head_dim)
        q_v = self.query_value_net(x).reshape(bsz, n, self.nheads, 1, self.qk_dim)
        q_v = q_v / self.qk_dim**0.5
        if self.dot:
            k_v = self.key_value_net(out)  # (B, T, S, R, d_s)
            comp_score = (q_v * k_v).sum(dim=-1).unsqueeze(-1)
        else:
            k_v = out
            comp_score = self.score_network(
                torch.cat((k_v, q_v.expand(-1, -1, -1, self.nrules, -1)), dim=-1)
            )
        comp_score = F.softmax(comp_score, dim=3)
        out = (comp_score * out).sum(dim=3).reshape(bsz, n, self.dim)
        return self.final(out).transpose(0, 1)


# -- variants ------------------------------------------------------------------------------------
def attention_call(module):
    def call(inputs, kpm, am):
        (x,) = inputs
        return module(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]

    return call


def build_stock_mha(shape):
    from fairseq.modules import MultiheadAttention

    m = MultiheadAttention(D, H, self_attention=True)
    return m, attention_call(m), 1


def build_comp(scoring):
    from fairseq_plugins.modules.compositional_attention import CompositionalAttention

    def build(shape):
        m = CompositionalAttention(
            D, S, R, retrieval_qk_dim=DS, scoring=scoring, self_attention=True
        )
        return m, attention_call(m), 1

    return build


def build_official(dot):
    def build(shape):
        m = OfficialCompositionalAttention(D, S, R, DS, dot=dot)

        def call(inputs, kpm, am):
            return m(inputs[0], kpm, am)

        return m, call, 1

    return build


def build_rel(mode):
    from fairseq_plugins.modules.relative_positions import build_relative_positions
    from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention

    def build(shape):
        rel = build_relative_positions(mode, 16, D // H, H)
        m = SDPAMultiheadAttention(D, H, self_attention=True, relative_positions=rel)
        return m, attention_call(m), 1

    return build


def build_scheme(scheme):
    """Our attention with a position scheme of modules/position_schemes.py (ALiBi, T5, RoPE,
    FIRE, CoPE), as --rel-pos builds it: bidirectional on the NMT shape (an encoder), causal on
    the LM shape (a decoder)."""
    from fairseq_plugins.modules.position_schemes import build_position_scheme, is_contextual
    from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention
    from fairseq_plugins.variant_config import PositionPlan

    def build(shape):
        plan = PositionPlan(scheme=scheme, causal=shape["mask"] == "causal")
        rel = build_position_scheme(plan, D // H, H)
        where = "contextual_positions" if is_contextual(rel) else "relative_positions"
        m = SDPAMultiheadAttention(D, H, self_attention=True, **{where: rel})
        return m, attention_call(m), 1

    return build


class FirePaperPort(nn.Module):
    """FIRE written out as the paper's appendix code reads, in a plain attention (no installable
    implementation exists): per forward, the (T, T) distances i - j, psi(|c x|) = log(|c x| + 1)
    normalised by psi(max(L, i)), the MLP 1 -> 32 -> H, the bias added to the scaled logits,
    softmax, values, output projection. The same parameters as ours."""

    def __init__(self, dim, heads, hidden=32):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q, self.k, self.v, self.out = (nn.Linear(dim, dim) for _ in range(4))
        self.mlp = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, heads))
        self.c = nn.Parameter(torch.tensor(0.1))
        self.L = nn.Parameter(torch.tensor(512.0))

    def forward(self, x, key_padding_mask=None, attn_mask=None):
        T, B, _ = x.shape

        def heads(t):
            return t.view(T, B, self.heads, self.head_dim).permute(1, 2, 0, 3)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        logits = q @ k.transpose(-1, -2) / self.head_dim**0.5
        pos = torch.arange(T, dtype=x.dtype, device=x.device)
        rel = pos[:, None] - pos[None, :]
        normaliser = torch.log1p((self.c * torch.maximum(pos, self.L.abs())).abs()) + 1e-6
        distance = rel.sign() * torch.log1p((self.c * rel).abs()) / normaliser[:, None]
        logits = logits + self.mlp(distance.unsqueeze(-1)).permute(2, 0, 1)
        if attn_mask is not None:
            logits = logits + attn_mask
        if key_padding_mask is not None:
            logits = logits.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        attended = torch.softmax(logits, -1) @ v
        return self.out(attended.permute(2, 0, 1, 3).reshape(T, B, -1))


def build_fire_port(shape):
    m = FirePaperPort(D, H)

    def call(inputs, kpm, am):
        return m(inputs[0], kpm, am)

    return m, call, 1


def x_transformers_version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("x-transformers")
    except PackageNotFoundError:
        return None


X_VERSION = x_transformers_version()


def x_transformers():
    """x-transformers (a test-only requirement, requirements-test.txt), or None."""
    try:
        from x_transformers import x_transformers as xt
    except ImportError:
        return None
    return xt


def build_x_transformers(scheme):
    """x-transformers' Attention with its own implementation of the scheme, as its
    AttentionLayers would call it (ALiBi and T5 as `rel_pos`, RoPE as `rotary_pos_emb` over the
    whole head, CoPE inside the attention): the reference of our scheme. Batch-first inside."""

    def build(shape):
        xt = x_transformers()
        causal = shape["mask"] == "causal"
        attention = xt.Attention(
            D, heads=H, dim_head=D // H, causal=causal, use_cope=scheme == "cope"
        )
        position = {
            "alibi": lambda: xt.AlibiPositionalBias(heads=H, total_heads=H),
            "t5": lambda: xt.RelativePositionBias(scale=(D // H) ** 0.5, causal=causal, heads=H),
            "rope": lambda: xt.RotaryEmbedding(D // H),
            "cope": lambda: None,
        }[scheme]()
        modules = nn.ModuleList([attention] + ([position] if position is not None else []))

        def call(inputs, kpm, am):
            x = inputs[0].transpose(0, 1)
            kwargs = {"mask": None if kpm is None else ~kpm}
            if scheme in ("alibi", "t5"):
                kwargs["rel_pos"] = position
            elif scheme == "rope":
                kwargs["rotary_pos_emb"] = position(torch.arange(x.size(1), device=x.device))
            return attention(x, **kwargs).transpose(0, 1)

        return modules, call, 1

    return build


def layer_cfg():
    from fairseq.models.transformer import TransformerConfig

    cfg = TransformerConfig()
    cfg.encoder.embed_dim, cfg.encoder.ffn_embed_dim, cfg.encoder.attention_heads = D, FFN, H
    cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0.0
    return cfg


def build_stock_layer(shape):
    from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

    layer = TransformerEncoderLayerBase(layer_cfg())

    def call(inputs, kpm, am):
        return layer(inputs[0], encoder_padding_mask=kpm, attn_mask=am)

    return layer, call, 1


def build_graph(fusion, half):
    from fairseq_plugins.modules.graph_encoder import GraphEncoderLayer
    from fairseq_plugins.variant_config import VariantConfig, build_plan

    def build(shape):
        plan = build_plan(
            VariantConfig(graph_encoder=True, graph_fusion=fusion, graph_half_dim=half)
        )
        layer = GraphEncoderLayer(layer_cfg(), plan.encoder.graph)

        def call(inputs, kpm, am):
            # an encoder layer: no attention mask (in the LM shape it attends to every position)
            prev, incr = inputs
            return layer(prev, incr, kpm)

        return layer, call, 2

    return build


# name -> (group, builder); the first of each group is the stock reference
VARIANTS = {
    "stock MultiheadAttention": ("attention", build_stock_mha),
    "compositional dot": ("attention", build_comp("dot")),
    "compositional mlp": ("attention", build_comp("mlp")),
    "official port dot": ("attention", build_official(True)),
    "official port mlp": ("attention", build_official(False)),
    "rel-e": ("attention", build_rel("e")),
    "rel-b": ("attention", build_rel("b")),
    "rel-eb": ("attention", build_rel("eb")),
    "alibi": ("attention", build_scheme("alibi")),
    "x-transformers alibi": ("attention", build_x_transformers("alibi")),
    "t5": ("attention", build_scheme("t5")),
    "x-transformers t5": ("attention", build_x_transformers("t5")),
    "rope": ("attention", build_scheme("rope")),
    "x-transformers rope": ("attention", build_x_transformers("rope")),
    "fire": ("attention", build_scheme("fire")),
    "fire paper-code port": ("attention", build_fire_port),
    "cope": ("attention", build_scheme("cope")),
    "x-transformers cope": ("attention", build_x_transformers("cope")),
    "stock TransformerEncoderLayer": ("layer", build_stock_layer),
}
for _fusion in ("sum", "weight-gate", "self-gate"):
    for _half in (False, True):
        VARIANTS[f"graph {_fusion}{' half-dim' if _half else ''}"] = (
            "layer",
            build_graph(_fusion, _half),
        )
STOCK = {"attention": "stock MultiheadAttention", "layer": "stock TransformerEncoderLayer"}
# each variant's reference implementation: the official formulation for compositional attention,
# x-transformers for a position scheme it has (skipped where it is not installed)
REFERENCE = {"compositional dot": "official port dot", "compositional mlp": "official port mlp"}
REFERENCE.update({s: f"x-transformers {s}" for s in ("alibi", "t5", "rope", "cope")})
REFERENCE["fire"] = "fire paper-code port"  # no installable FIRE implementation
CAUSAL_ONLY = {"cope", "x-transformers cope"}  # defined for causal attention: the LM shape only


def make_masks(shape, device):
    T, B = shape["T"], shape["B"]
    if shape["mask"] in ("padding", "left-padding"):
        gen = torch.Generator().manual_seed(0)
        lengths = torch.randint(T // 2, T + 1, (B,), generator=gen)
        lengths[0] = T
        kpm = torch.arange(T).unsqueeze(0) >= lengths.unsqueeze(1)  # right padding
        if shape["mask"] == "left-padding":
            kpm = kpm.flip(1)
        return kpm.to(device), None
    am = torch.triu(torch.full((T, T), float("-inf")), 1)
    return None, am.to(device)


class Case:
    def __init__(self, name, shape, device):
        self.name = name
        self.group, builder = VARIANTS[name]
        torch.manual_seed(0)
        module, self.call, n_inputs = builder(shape)
        module.to(device).train()
        self.module_params = list(module.parameters())
        self.inputs = [
            torch.randn(shape["T"], shape["B"], D, device=device, requires_grad=True)
            for _ in range(n_inputs)
        ]
        self.kpm, self.am = make_masks(shape, device)
        self.grad = torch.randn(shape["T"], shape["B"], D, device=device)

    def step(self):
        for t in self.module_params + self.inputs:
            t.grad = None
        out = self.call(self.inputs, self.kpm, self.am)
        out.backward(self.grad)

    def saved_bytes(self):
        excluded = {t.untyped_storage().data_ptr() for t in self.module_params + self.inputs}
        storages = {}

        def pack(t):
            s = t.untyped_storage()
            if s.data_ptr() not in excluded:
                storages[s.data_ptr()] = s.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = self.call(self.inputs, self.kpm, self.am)
        total = sum(storages.values())
        out.backward(self.grad)
        return total


def run_shape(shape_name, names, args, device):
    import time

    shape = SHAPES[shape_name]
    if shape["mask"] != "causal":
        names = [n for n in names if n not in CAUSAL_ONLY]
    cases = [Case(n, shape, device) for n in names]
    for case in cases:
        for _ in range(args.warmup):
            case.step()
    times = {c.name: [] for c in cases}
    for r in range(args.repeats):
        order = cases[r % len(cases) :] + cases[: r % len(cases)]
        for case in order:
            sync(device)
            start = time.perf_counter()
            case.step()
            sync(device)
            times[case.name].append(time.perf_counter() - start)
        print(f"  {shape_name} round {r + 1}/{args.repeats}", file=sys.stderr, flush=True)
    rows = {}
    for case in cases:
        stock = STOCK[case.group]
        row = {
            "group": case.group,
            "stock": stock,
            "time_ms": summary([1e3 * t for t in times[case.name]]),
        }
        if stock in times:
            ratios = [a / b for a, b in zip(times[stock], times[case.name])]
            row["speed_vs_stock"] = summary(ratios)
        ref = REFERENCE.get(case.name)
        if ref in times:
            row["speedup_vs_reference"] = summary(
                [a / b for a, b in zip(times[ref], times[case.name])]
            )
        row["saved_for_backward_bytes"] = case.saved_bytes()
        rows[case.name] = row
    if args.memory:
        for name, peak in peak_memory(shape_name, names, device).items():
            rows[name]["peak_bytes"] = peak
    for name, row in rows.items():
        for key, other in (("stock", row["stock"]), ("reference", REFERENCE.get(name))):
            if other in rows:
                for metric in ("peak_bytes", "saved_for_backward_bytes"):
                    if metric in row and rows[other].get(metric):
                        row[f"{metric.replace('_bytes', '')}_vs_{key}"] = (
                            row[metric] / rows[other][metric]
                        )
    return rows


def peak_memory(shape_name, names, device):
    """Peak memory of one fwd+bwd step per variant (median of 3). On CPU in a child process with
    the fixed glibc mmap threshold, so that the timings above run with the default allocator."""
    if device.type == "cuda":
        return {n: measure_peaks(Case(n, SHAPES[shape_name], device), device) for n in names}
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [sys.executable, __file__, "--memory-only", out.name, "--shapes", shape_name]
        cmd += ["--threads", str(torch.get_num_threads()), "--device", "cpu"]
        cmd += ["--exact-variants", json.dumps(names)]
        subprocess.run(cmd, check=True, env=dict(os.environ, **MMAP_ENV))
        return json.loads(Path(out.name).read_text())


def measure_peaks(case, device):
    case.step()
    return sorted(measure_peak_bytes(case.step, device) for _ in range(3))[1]


def memory_only(args):
    """Child process of peak_memory (CPU)."""
    if not rss_peak_supported():
        raise SystemExit("peak RSS not measurable here (/proc/self/clear_refs); use --no-memory")
    names = json.loads(args.exact_variants)
    device = torch.device("cpu")
    peaks = {}
    for name in names:
        case = Case(name, SHAPES[args.shapes], device)
        peaks[name] = measure_peaks(case, device)
        del case
    Path(args.memory_only).write_text(json.dumps(peaks))


def fmt_ratio(s):
    return f"{s['median']:.2f}x ({s['q1']:.2f}-{s['q3']:.2f})"


def markdown(results, info):
    lines = [
        "# Attention and layer benchmark (forward+backward)",
        "",
        f"{info['machine']['cpu']} / {info['machine']['device']}, torch {info['machine']['torch']}, "
        f"{info['machine']['threads']} threads, {info['repeats']} interleaved rounds after "
        f"{info['warmup']} warm-up steps; git {info['machine']['git']}.",
        f"d={D}, heads={H}, S=R={S}, d_s={DS}, layer ffn={FFN}, dropout 0. Time: median (IQR) ms. "
        "Speed: per-round paired stock_time / variant_time, median (IQR); > 1 is faster than "
        "stock. vs reference: the same ratio against the variant's reference implementation "
        "(compositional: the official formulation; FIRE: the paper's appendix code in a plain "
        "attention, as no implementation is installable; another position scheme: x-transformers' "
        f"{'version ' + X_VERSION if X_VERSION else '(not installed: no such rows)'}), "
        "> 1 is faster than the reference. Memory: peak above the start of the step, and "
        "activations saved for backward.",
        "",
    ]
    for shape_name, rows in results.items():
        shape = SHAPES[shape_name]
        lines += [
            f"## {shape_name.upper()}: T={shape['T']}, B={shape['B']}, {shape['mask']} mask",
            "",
            "| variant | time ms | speed vs stock | vs reference | peak MiB | peak vs stock "
            "| saved MiB | saved vs stock |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, row in rows.items():
            t = row["time_ms"]
            speed = fmt_ratio(row["speed_vs_stock"]) if "speed_vs_stock" in row else ""
            off = ""
            if "speedup_vs_reference" in row:
                off = fmt_ratio(row["speedup_vs_reference"])
                if "peak_vs_reference" in row:
                    off += f", mem {row['peak_vs_reference']:.2f}x"
            peak = f"{row['peak_bytes'] / 2**20:.1f}" if "peak_bytes" in row else ""
            peak_r = f"{row['peak_vs_stock']:.2f}x" if "peak_vs_stock" in row else ""
            saved = f"{row['saved_for_backward_bytes'] / 2**20:.1f}"
            saved_r = (
                f"{row['saved_for_backward_vs_stock']:.2f}x"
                if "saved_for_backward_vs_stock" in row
                else ""
            )
            lines.append(
                f"| {name} | {t['median']:.1f} ({t['q1']:.1f}-{t['q3']:.1f}) | {speed} | {off} "
                f"| {peak} | {peak_r} | {saved} | {saved_r} |"
            )
        lines.append("")
    return "\n".join(lines)


def main():
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 rounds (a few minutes on 2 idle cores)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed rounds (default 20, quick 3)"
    )
    parser.add_argument(
        "--warmup", type=int, default=None, help="warm-up steps (default 3, quick 1)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1 on CPU: on a shared machine 2+ threads spin in OpenMP barriers)",
    )
    parser.add_argument("--shapes", default="nmt,lm", help="comma list of: nmt, nmt-left, lm")
    parser.add_argument(
        "--variants", default=None, help="comma list of substrings to keep (stock always kept)"
    )
    parser.add_argument("--no-memory", dest="memory", action="store_false", help="skip peak memory")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    add_output_options(parser, "attention")
    parser.add_argument("--memory-only", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--exact-variants", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_only:
        return memory_only(args)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cpu" and args.memory and not rss_peak_supported():
        print("peak RSS not measurable (/proc/self/clear_refs): no peak memory", file=sys.stderr)
        args.memory = False
    args.repeats = args.repeats or (3 if args.quick else 20)
    args.warmup = args.warmup or (1 if args.quick else 3)
    names = [n for n in VARIANTS if x_transformers() or not n.startswith("x-transformers")]
    if args.variants:
        keep = args.variants.split(",")
        names = [n for n in names if n in STOCK.values() or any(k in n for k in keep)]
        names += [REFERENCE[n] for n in names if n in REFERENCE and REFERENCE[n] not in names]
    info = {"machine": machine(device), "repeats": args.repeats, "warmup": args.warmup}
    info["config"] = dict(d=D, heads=H, searches=S, retrievals=R, retrieval_qk_dim=DS, ffn=FFN)
    info["shapes"] = {s: SHAPES[s] for s in args.shapes.split(",")}
    info["memory_method"] = (
        "cuda max_memory_allocated"
        if device.type == "cuda"
        else "peak RSS (VmHWM) delta, mmap threshold 128 KiB"
    )
    results = {}
    for shape_name in args.shapes.split(","):
        results[shape_name] = run_shape(shape_name, names, args, device)
    payload = dict(info, results=results)
    write_results(args.name, payload, markdown(results, info), folder=args.results)


if __name__ == "__main__":
    main()
