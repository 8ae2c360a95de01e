"""Helpers shared by the attention tests: random inputs, masks, step-by-step decoding; one small
module of every attention kind, Graph-Transformer layer and copy-decoder case with their forward
and backward passes (numerical safety, dtype and CUDA tests); the comparison of a module in
another dtype or on another device against float32 on CPU."""

import copy

import torch
from fairseq.models.transformer import TransformerConfig
from fairseq.modules import MultiheadAttention

from fairseq_plugins.modules.compositional_attention import CompositionalAttention
from fairseq_plugins.modules.graph_encoder import GraphEncoderLayer
from fairseq_plugins.modules.relative_positions import build_relative_positions
from fairseq_plugins.modules.sdpa_multihead_attention import SDPAMultiheadAttention
from fairseq_plugins.variant_config import VariantConfig, build_plan


def randomize(module, std=0.3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    return module


def causal_mask(length):
    return torch.triu(torch.full((length, length), float("-inf")), 1)


def padding_mask(lengths, max_len, left=False):
    """(B, T) bool, True at padding; right padding by default, left like fairseq's sources."""
    positions = torch.arange(max_len).unsqueeze(0)
    lengths = torch.tensor(lengths).unsqueeze(1)
    if left:
        return positions < (max_len - lengths)
    return positions >= lengths


def decode_step_by_step(attn, x, encoder_out=None, encoder_padding_mask=None, reorder=None):
    """Feed x (T, B, C) one step at a time through attn with an incremental state.

    Self-attention when encoder_out is None, else cross-attention over encoder_out (static_kv).
    reorder=(step, new_order): after that many steps, reorder the state like beam search does and
    continue with the reordered inputs. Returns the outputs (T, B, C) in the final order.
    """
    state = {}
    outputs = []
    for t in range(x.size(0)):
        if reorder is not None and t == reorder[0]:
            attn.reorder_incremental_state(state, reorder[1])
            x = x.index_select(1, reorder[1])
            if encoder_out is not None:
                encoder_out = encoder_out.index_select(1, reorder[1])
                if encoder_padding_mask is not None:
                    encoder_padding_mask = encoder_padding_mask.index_select(0, reorder[1])
            outputs = [o.index_select(1, reorder[1]) for o in outputs]
        step = x[t : t + 1]
        if encoder_out is None:
            out, _ = attn(step, step, step, incremental_state=state, need_weights=False)
        else:
            out, _ = attn(
                step,
                encoder_out,
                encoder_out,
                key_padding_mask=encoder_padding_mask,
                incremental_state=state,
                static_kv=True,
                need_weights=False,
            )
        outputs.append(out)
    return torch.cat(outputs, dim=0)


def assert_padding_invariant(self_attn, cross_attn, dim, short=4, long=7):
    """A left-padded source sentence of SHORT tokens in a batch padded to LONG gives the same
    encoder self-attention output, and the same decoder-to-encoder attention output for a
    query, as the sentence alone (fairseq left-pads sources)."""
    s = torch.randn(short, 1, dim)
    alone, _ = self_attn(s, s, s, need_weights=False)
    batch = torch.randn(long, 2, dim)
    batch[long - short :, 1:2] = s
    mask = padding_mask([long, short], long, left=True)
    out, _ = self_attn(batch, batch, batch, key_padding_mask=mask, need_weights=False)
    torch.testing.assert_close(out[long - short :, 1:2], alone, atol=1e-5, rtol=1e-5)
    y = torch.randn(3, 1, dim)
    cross_alone, _ = cross_attn(y, s, s, need_weights=False)
    y2 = torch.cat([y, torch.randn(3, 1, dim)], dim=1)
    batch2 = torch.randn(long, 2, dim)
    batch2[long - short :, 0:1] = s
    mask2 = padding_mask([short, long], long, left=True)
    cross, _ = cross_attn(y2, batch2, batch2, key_padding_mask=mask2, need_weights=False)
    torch.testing.assert_close(cross[:, 0:1], cross_alone, atol=1e-5, rtol=1e-5)


# -- one small module of every kind ----------------------------------------------------------------
D, H, KDIM = 16, 4, 12  # KDIM: encoder width seen by cross-attention
KINDS = ["multihead", "rel-e", "rel-b", "rel-eb", "comp-dot", "comp-mlp", "comp-rel-eb"]
FUSIONS = ["sum", "weight-gate", "self-gate"]


def make_attention(kind, cross=False, radius=2, searches=H, retrievals=H, seed=0):
    role = dict(encoder_decoder_attention=True, kdim=KDIM) if cross else {"self_attention": True}
    mode = kind.rsplit("-", 1)[1] if kind.startswith("rel-") or kind == "comp-rel-eb" else "none"
    heads = H if kind.startswith("rel-") else searches
    rel = {"relative_positions": build_relative_positions(mode, radius, D // heads, heads)}
    if kind == "multihead":
        m = MultiheadAttention(D, H, vdim=role.get("kdim"), **role)
    elif kind.startswith("rel-"):
        m = SDPAMultiheadAttention(D, H, vdim=role.get("kdim"), **role, **rel)
    else:
        scoring = "mlp" if kind == "comp-mlp" else "dot"
        m = CompositionalAttention(
            D,
            searches,
            retrievals,
            retrieval_qk_dim=8,
            scoring=scoring,
            mlp_hidden=8 if scoring == "mlp" else 0,
            vdim=role.get("kdim"),
            **role,
            **rel,
        )
    return randomize(m, std=0.3, seed=seed).eval()


def inputs(tq, tk, bsz, cross, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tq, bsz, D, generator=gen)
    kv = torch.randn(tk, bsz, KDIM, generator=gen) if cross else x
    return x, kv


def forward_backward(m, x, kv, kpm=None, attn_mask=None, need_weights=False):
    x = x.detach().clone().requires_grad_(True)
    kv_leaf = x if kv is None else kv.detach().clone().requires_grad_(True)
    kv = kv_leaf if kv is not None else x
    m.zero_grad()
    out, weights = m(
        x, kv, kv, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=need_weights
    )
    out.float().square().mean().backward()
    grads = [x.grad, kv_leaf.grad] + [p.grad for p in m.parameters()]
    return out, weights, grads


def graph_layer(
    fusion,
    half=False,
    shared=False,
    pre_norm=False,
    attention_type="multihead",
    dim=D,
    ffn=32,
    **more,
):
    """A Graph-Transformer layer (H heads), randomized, in evaluation mode; ``more``: further
    variant options (default: 2 searches and 2 retrievals)."""
    cfg = TransformerConfig()
    cfg.encoder.embed_dim, cfg.encoder.ffn_embed_dim, cfg.encoder.attention_heads = dim, ffn, H
    cfg.encoder.normalize_before = pre_norm
    cfg.dropout = cfg.attention_dropout = 0.0
    graph = dict(graph_fusion=fusion, graph_half_dim=half, graph_shared_qkv=shared)
    options = dict(num_searches=2, num_retrievals=2) | more
    options = VariantConfig(graph_encoder=True, attention_type=attention_type, **graph, **options)
    return randomize(GraphEncoderLayer(cfg, build_plan(options).encoder.graph), std=0.2).eval()


def graph_forward_backward(layer, prev, incr, kpm):
    prev = prev.detach().clone().requires_grad_(True)
    incr = incr.detach().clone().requires_grad_(True)
    layer.zero_grad()
    out = layer(prev, incr, kpm)
    out.float().square().mean().backward()
    return out, [prev.grad, incr.grad] + [p.grad for p in layer.parameters()]


def copy_case(src, vocab=11, tgt_len=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    bsz, slen = src.shape
    logits = torch.randn(bsz, tgt_len, vocab, generator=gen)
    features = torch.randn(bsz, tgt_len, D, generator=gen)
    encoder_out = torch.randn(slen, bsz, KDIM, generator=gen)
    return logits, features, encoder_out


# -- another dtype or device against float32 on CPU ------------------------------------------------
def tolerance(dtype):
    """8 machine epsilons; float32 (CUDA against CPU: other kernels, other summation orders):
    1e-4."""
    return 1e-4 if dtype == torch.float32 else 8 * torch.finfo(dtype).eps


def assert_close_to_float32(out, reference, dtype, what=""):
    assert out.dtype in (dtype, torch.float32), (what, out.dtype)  # float32: mixes, log-probs
    assert bool(torch.isfinite(out).all()), f"{what}: non-finite values in {dtype}"
    tol = tolerance(dtype)
    out, reference = out.detach().cpu().float(), reference.detach().cpu().float()
    torch.testing.assert_close(out, reference, atol=tol, rtol=tol, msg=what)


def assert_grads_close(grads, reference, dtype, factor=1):
    """Each gradient within ``factor * tolerance`` times the largest reference gradient
    (factor 4 for a whole model's training step: bf16 on CPU reached 0.14 of the largest
    gradient, 2.2 tolerances, through 3+2 layers and tied embeddings)."""
    scale = max(r.abs().max().item() for r in reference if r is not None)
    for index, (g, r) in enumerate(zip(grads, reference, strict=True)):
        if r is None:
            continue
        assert g.dtype == dtype and bool(torch.isfinite(g).all()), (index, g.dtype)
        error = (g.cpu().float() - r.cpu()).abs().max().item()
        assert error <= factor * tolerance(dtype) * scale, (index, error, scale)


def in_dtype(module, dtype, device="cpu"):
    return copy.deepcopy(module).to(device, dtype)


def attention_matches_float32(
    m, dtype, x, kv, kpm, attn_mask=None, need_weights=False, device="cpu"
):
    """m's forward and backward in ``dtype`` on ``device`` against float32 on CPU (kv None:
    self-attention)."""
    ref, ref_weights, ref_grads = forward_backward(m, x, kv, kpm, attn_mask, need_weights)

    def moved(t, dtype=dtype):
        return t.to(device, dtype) if t is not None else None

    out, weights, grads = forward_backward(
        in_dtype(m, dtype, device),
        moved(x),
        moved(kv),
        moved(kpm, torch.bool),
        moved(attn_mask),
        need_weights,
    )
    assert_close_to_float32(out, ref, dtype, "output")
    if need_weights:
        assert_close_to_float32(weights, ref_weights, dtype, "attention weights")
    assert_grads_close(grads, ref_grads, dtype)


def multihead_reference(m, query, key, logit, key_padding_mask=None, attn_mask=None, sentence=None):
    """Plain-loop multi-head attention through the projections of ``m`` (q/k/v/out_proj,
    ``m.num_heads`` heads of ``m.head_dim``): per sentence b and head h, softmax over j of
    ``logit(q_i, k_j, b, h, i, j)`` plus the masks, times v. ``sentence(q_b, k_b, b)``: the
    queries and keys (T, H, d_h) of sentence b transformed first (e.g. rotated), or None."""
    B, Tq, Tk = query.size(1), query.size(0), key.size(0)
    H, dh = m.num_heads, m.head_dim
    q = m.q_proj(query).view(Tq, B, H, dh)
    k = m.k_proj(key).view(Tk, B, H, dh)
    v = m.v_proj(key).view(Tk, B, H, dh)
    out = torch.zeros(Tq, B, H, dh, dtype=query.dtype)
    for b in range(B):
        qb, kb = (q[:, b], k[:, b]) if sentence is None else sentence(q[:, b], k[:, b], b)
        for h in range(H):
            logits = torch.zeros(Tq, Tk, dtype=query.dtype)
            for i in range(Tq):
                for j in range(Tk):
                    logits[i, j] = logit(qb[i, h], kb[j, h], b, h, i, j)
            if attn_mask is not None:
                logits = logits + attn_mask
            if key_padding_mask is not None:
                logits = logits.masked_fill(key_padding_mask[b].unsqueeze(0), float("-inf"))
            out[:, b, h] = torch.softmax(logits, -1) @ v[:, b, h]
    return m.out_proj(out.reshape(Tq, B, H * dh))
