"""The checks of tests/test_cuda.py, with the device as an argument: a model or attention path on
DEVICE in DTYPE against float32 on CPU (tolerances of attention_testing), and incremental
decoding on DEVICE against the full pass there. test_cuda runs them on CUDA; test_gpu_check runs
one of each on CPU, so that they keep working on machines without a GPU."""

import itertools

import torch
from attention_testing import (
    assert_close_to_float32,
    assert_grads_close,
    attention_matches_float32,
    causal_mask,
    in_dtype,
    inputs,
    make_attention,
    padding_mask,
    randomize,
)
from model_testing import TAGGING_TINY, batch, build_tagging, tiny_model

ATTENTION = {"multihead": [], "compositional": ["--attention-type", "compositional"]}
REL_POS = {
    "abs": [],
    "rel-e": ["--rel-pos", "e"],
    "rel-b": ["--rel-pos", "b", "--rel-pos-bias-per-head"],
    "rel-eb": ["--rel-pos", "eb"],
    "rel2-eb": ["--rel-pos", "eb", "--rel-pos-cross"],
}
COPY = {"no-copy": [], "copy": ["--copy-decoder"]}
GRAPH = {
    "no-graph": [],
    "sum": ["--graph-encoder", "--graph-fusion", "sum"],
    "weight-gate": ["--graph-encoder", "--graph-fusion", "weight-gate", "--graph-half-dim"],
    "self-gate": ["--graph-encoder", "--graph-fusion", "self-gate", "--graph-shared-qkv"],
}
CONFIGS = {
    "-".join(names): ["--arch", "variant_transformer", "--rel-pos-radius", "2"]
    + ATTENTION[names[0]]
    + REL_POS[names[1]]
    + COPY[names[2]]
    + GRAPH[names[3]]
    for names in itertools.product(ATTENTION, REL_POS, COPY, GRAPH)
}


def nll(model, src, lengths, tgt):
    out = model(src, lengths, tgt)
    log_p = model.get_normalized_probs(out, log_probs=True).float()
    target = torch.roll(tgt, -1, dims=1)  # the next token of each position (a fixed target)
    return -log_p.gather(-1, target.unsqueeze(-1)).mean()


def check_model_matches_cpu(args, device, dtype):
    """Evaluation probabilities and one training step's gradients of the model of ARGS on
    DEVICE in DTYPE against float32 on CPU. The feed-forward layers use GELU, not ReLU: the
    random tiny models have ReLU pre-activations within 2e-5 of zero, which fp16's rounding of the
    weights (2^-11) flips, and a flipped unit moves a gradient by up to 6% of the largest one even
    in float64 arithmetic (measured; see benchmarks/results/gpu-check-notes.md): a kink of the
    function, not an error of the device."""
    model = tiny_model(args + ["--activation-fn", "gelu"])
    src, lengths, tgt = batch()
    with torch.no_grad():
        ref = model.eval().get_normalized_probs(model(src, lengths, tgt), log_probs=False)
    model.train().zero_grad()
    nll(model, src, lengths, tgt).backward()
    ref_grads = [p.grad for p in model.parameters()]

    moved = in_dtype(model, dtype, device)
    inputs_on = [t.to(device) for t in (src, lengths, tgt)]
    with torch.no_grad():
        probs = moved.eval().get_normalized_probs(moved(*inputs_on), log_probs=False)
    assert_close_to_float32(probs, ref, dtype, "probabilities")
    moved.train().zero_grad()
    loss = nll(moved, *inputs_on)
    assert bool(torch.isfinite(loss))
    loss.backward()
    assert_grads_close([p.grad for p in moved.parameters()], ref_grads, dtype, factor=4)


def check_incremental_decoding(args, device, dtype):
    """Incremental decoding on DEVICE in DTYPE equals the full pass there, also after a beam
    reordering (2 hypotheses of one sentence, reordered after 2 steps)."""
    model = in_dtype(tiny_model(args), dtype, device).eval()
    src, lengths, tgt = (t.to(device) for t in batch())
    with torch.no_grad():
        full = model.get_normalized_probs(model(src, lengths, tgt), log_probs=False)
        enc, state, steps = model.encoder(src, lengths), {}, []
        for t in range(tgt.size(1)):
            out = model.decoder(tgt[:, : t + 1], enc, incremental_state=state)
            steps.append(model.get_normalized_probs(out, log_probs=False)[:, -1:])
        assert_close_to_float32(torch.cat(steps, 1), full, dtype, "incremental")

        src2, len2 = src[1:2].expand(2, -1), lengths[1:2].expand(2)
        tgt2 = tgt[:2].clone()
        enc, state = model.encoder(src2, len2), {}
        for t in range(2):
            model.decoder(tgt2[:, : t + 1], enc, incremental_state=state)
        order = torch.tensor([1, 1], device=device)
        model.decoder.reorder_incremental_state_scripting(state, order)
        enc = model.encoder.reorder_encoder_out(enc, order)
        tgt2 = tgt2.index_select(0, order)
        out = model.decoder(tgt2[:, :3], enc, incremental_state=state)
        step = model.get_normalized_probs(out, log_probs=False)
        expected = model.get_normalized_probs(model(src2, len2, tgt2[:, :3]), log_probs=False)
    assert_close_to_float32(step, expected[:, -1:], dtype, "after reordering")


def check_attention_paths(kind, need_weights, device, dtype):
    """Self-attention (causal, 12 positions: rows of >= 4 radii, the in-place band bias on the
    explicit path) and padded cross-attention of KIND, forward and backward."""
    m = make_attention(kind, False, radius=2).train()
    x, _ = inputs(12, 12, 2, False)
    attention_matches_float32(m, dtype, x, None, None, causal_mask(12), need_weights, device)
    m = make_attention(kind, True, radius=2)
    x, kv = inputs(6, 5, 3, True)
    kpm = padding_mask([5, 3, 4], 5, left=True)
    attention_matches_float32(m, dtype, x, kv, kpm, None, need_weights, device)


LM = ["--arch", "compositional_transformer_lm", "--rel-pos", "eb", "--rel-pos-radius", "2"]
LM += ["--decoder-layers", "2", "--decoder-embed-dim", "32", "--decoder-ffn-embed-dim", "64"]
LM += ["--decoder-attention-heads", "4", "--retrieval-qk-dim", "8", "--dropout", "0"]


def check_language_model(device, dtype):
    model = tiny_model(LM, lm=True).eval()
    tokens = torch.randint(4, 20, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = model.get_normalized_probs(model(tokens), log_probs=False)
        moved = in_dtype(model, dtype, device)
        tokens = tokens.to(device)
        full = moved.get_normalized_probs(moved(tokens), log_probs=False)
        state, steps = {}, []
        for t in range(tokens.size(1)):
            out = moved.decoder(tokens[:, : t + 1], incremental_state=state)
            steps.append(moved.get_normalized_probs(out, log_probs=False)[:, -1:])
    assert_close_to_float32(full, ref, dtype, "LM probabilities")
    assert_close_to_float32(torch.cat(steps, 1), full, dtype, "LM incremental")


def check_tagging_model(device, dtype):
    model, _, task = build_tagging(["--arch", "cogs_tagging_tuned"] + TAGGING_TINY)
    model = randomize(model, std=0.2).eval()
    tokens = torch.randint(4, len(task.source_dictionary), (2, 7))
    lengths = torch.tensor([7, 7])
    with torch.no_grad():
        ref = model(tokens, lengths)
        moved = in_dtype(model, dtype, device)
        out = moved(tokens.to(device), lengths.to(device))
    for row in ref:
        if torch.is_tensor(ref[row]) and ref[row].is_floating_point():
            got = torch.softmax(out[row].float(), -1)
            assert_close_to_float32(got, torch.softmax(ref[row], -1), dtype, row)
