"""The Neural Data Router's geometric attention (modules/geometric_attention.py) and copy-gated
layer (modules/neural_data_router.py) against plain re-statements of the paper's equations in
float64 (the tie rule of the official CUDA kernel), gradients, padding."""

import math

import pytest
import torch
from attention_testing import padding_mask, randomize

from fairseq_plugins.modules.geometric_attention import (
    GeometricAttention,
    geometric_attention_weights,
)


def weights_reference(logits, normalize, offset=0):
    """A_ij = P_ij prod_{k in S_ij} (1 - P_ik), P = sigmoid(logits) (0 where -inf), element by
    element; S_ij = keys k != i nearer to i than j, or as near and to the right of j."""
    p = torch.sigmoid(logits)
    out = torch.zeros_like(logits)
    *lead, tgt_len, src_len = logits.shape
    for index in torch.cartesian_prod(*[torch.arange(n) for n in lead]) if lead else [()]:
        index = tuple(index.tolist()) if lead else ()
        for r in range(tgt_len):
            i = r + offset
            for j in range(src_len):
                if j == i:
                    continue
                value = p[index + (r, j)]
                for k in range(src_len):
                    nearer = abs(k - i) < abs(j - i)
                    tie_right = abs(k - i) == abs(j - i) and k > j
                    if k != i and (nearer or tie_right):
                        value = value * (1 - p[index + (r, k)])
                out[index + (r, j)] = value
            if normalize:
                total = out[index + (r,)].sum()
                out[index + (r,)] = out[index + (r,)] / max(total, 1e-12)
    return out


@pytest.mark.parametrize("normalize", [True, False])
def test_weights_match_reference_with_masks_and_offsets(normalize):
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 7, 7, dtype=torch.float64) * 3
    blocked = torch.eye(7, dtype=torch.bool) | (torch.rand(2, 1, 7, 7) < 0.2)
    logits = logits.masked_fill(blocked, float("-inf"))
    ours = geometric_attention_weights(logits, normalize)
    torch.testing.assert_close(ours, weights_reference(logits, normalize))
    # queries that are the last rows of the keys (positions 4..6 of 7)
    rows = torch.randn(1, 2, 3, 7, dtype=torch.float64)
    rows[..., torch.arange(3), torch.arange(4, 7)] = float("-inf")
    torch.testing.assert_close(
        geometric_attention_weights(rows, normalize, offset=4),
        weights_reference(rows, normalize, offset=4),
    )


def test_nearest_match_wins_and_right_wins_a_tie():
    # query 3 matches keys 0, 1 and 6 strongly: key 1 (distance 2) is nearer than 0 and 6 (3)
    logits = torch.full((1, 1, 7), -30.0, dtype=torch.float64)
    logits[..., [0, 1, 6]] = 30.0
    weights = geometric_attention_weights(logits, True, offset=3)[0, 0]
    assert weights.argmax() == 1 and weights[1] > 0.999
    # at equal distance (keys 1 and 5 from query 3) the right one comes first
    tie = torch.full((1, 1, 7), -30.0, dtype=torch.float64)
    tie[..., [1, 5]] = 30.0
    weights = geometric_attention_weights(tie, True, offset=3)[0, 0]
    assert weights[5] > 0.999 and weights[1] < 1e-6


def test_weights_gradcheck_with_masked_entries():
    torch.manual_seed(1)
    logits = torch.randn(1, 2, 5, 5, dtype=torch.float64)
    blocked = torch.eye(5, dtype=torch.bool)
    blocked[3, 1] = True

    def weights(x):
        return geometric_attention_weights(x.masked_fill(blocked, float("-inf")), True)

    assert torch.autograd.gradcheck(weights, (logits.requires_grad_(),))
    out = weights(logits)
    out.sum().backward()
    assert torch.isfinite(logits.grad).all()


def module_reference(m, x, key_padding_mask=None):
    """The paper's layer attention re-stated: logits with the direction term, masks, A, merge."""
    T, B, D = x.shape
    H, dh = m.num_heads, m.head_dim
    q = (x @ m.q_proj.weight.t()).view(T, B, H, dh)
    k = (x @ m.k_proj.weight.t()).view(T, B, H, dh)
    v = (x @ m.v_proj.weight.t()).view(T, B, H, dh)
    d = (x @ m.direction_proj.weight.t() + m.direction_proj.bias).view(T, B, H, 2)
    out = torch.zeros(T, B, H, dh, dtype=x.dtype)
    for b in range(B):
        for h in range(H):
            logits = torch.empty(T, T, dtype=x.dtype)
            for i in range(T):
                for j in range(T):
                    s = m.logit_scale * ((q[i, b, h] + m.content_bias[h]) @ k[j, b, h])
                    if j > i:
                        s = s + m.direction_scale * d[i, b, h, 1]
                    elif j < i:
                        s = s + m.direction_scale * d[i, b, h, 0]
                    blocked = j == i or (
                        key_padding_mask is not None and bool(key_padding_mask[b, j])
                    )
                    logits[i, j] = float("-inf") if blocked else s + m.logit_bias
            out[:, b, h] = weights_reference(logits, m.normalize) @ v[:, b, h]
    return out.reshape(T, B, D) @ m.out_proj.weight.t()


def make_geometric(normalize=True, relative_positions=None):
    m = GeometricAttention(16, 2, normalize=normalize, relative_positions=relative_positions)
    return randomize(m.double(), std=0.4).eval()


@pytest.mark.parametrize("normalize", [True, False])
def test_geometric_attention_matches_reference(normalize):
    torch.manual_seed(2)
    m = make_geometric(normalize)
    x = torch.randn(6, 2, 16, dtype=torch.float64)
    kpm = padding_mask([6, 4], 6)
    out, _ = m(x, x, x, key_padding_mask=kpm, need_weights=False)
    torch.testing.assert_close(out, module_reference(m, x, kpm))


@pytest.mark.parametrize("left", [False, True])
def test_geometric_attention_is_padding_invariant(left):
    torch.manual_seed(3)
    m = make_geometric()
    x = torch.randn(5, 1, 16, dtype=torch.float64)
    alone, _ = m(x, x, x)
    pad = torch.randn(3, 1, 16, dtype=torch.float64)
    padded = torch.cat([pad, x]) if left else torch.cat([x, pad])
    kpm = padding_mask([5], 8, left=left)
    out, _ = m(padded, padded, padded, key_padding_mask=kpm)
    torch.testing.assert_close(out[3:] if left else out[:5], alone)


def test_geometric_attention_refuses_other_roles():
    with pytest.raises(ValueError, match="--encoder-attention-type"):
        GeometricAttention(16, 2, self_attention=False, encoder_decoder_attention=True)
    m = make_geometric()
    x = torch.randn(3, 1, 16, dtype=torch.float64)
    with pytest.raises(ValueError, match="incremental"):
        m(x, x, x, incremental_state={})


def test_geometric_attention_module_gradcheck():
    torch.manual_seed(4)
    m = make_geometric()
    x = torch.randn(4, 1, 16, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda inp: m(inp, inp, inp)[0], (x,))
    assert math.isfinite(float(m.logit_scale))


# -- the copy-gated layer and the NDR encoder in the model --------------------------------------
NDR = ["--encoder-attention-type", "geometric", "--encoder-copy-gate", "--share-encoder-layers"]
NDR_MODEL = ["--arch", "compgen_small_4", *NDR, "--rel-pos", "eb", "--encoder-rel-pos", "nope"]
NDR_MODEL += ["--rel-pos-cross", "--copy-decoder", "--dropout", "0", "--attention-dropout", "0"]


def build_ndr(extra=()):
    from model_testing import build

    model, _ = build(NDR_MODEL + list(extra))
    return model.double().eval()


def test_copy_gate_layer_matches_reference_and_starts_closed():
    torch.manual_seed(5)
    model = build_ndr()
    layer = model.encoder.layers[0]
    assert float(layer.gate_fc2.bias.mean()) == -3.0  # the paper's closed gate at the start
    randomize(layer, std=0.3)
    x = torch.randn(6, 2, 64, dtype=torch.float64)
    kpm = padding_mask([6, 4], 6)
    out = layer(x, kpm)
    attended, _ = layer.self_attn(x, x, x, key_padding_mask=kpm)
    a = layer.self_attn_layer_norm(x + attended)
    u = layer.final_layer_norm(layer.fc2(torch.relu(layer.fc1(a))))
    g = torch.sigmoid(layer.gate_fc2(torch.relu(layer.gate_fc1(a))))
    torch.testing.assert_close(out, g * u + (1 - g) * x)
    with torch.no_grad():  # a closed gate copies its column through the layer
        layer.gate_fc2.bias.fill_(-1e4)
    torch.testing.assert_close(layer(x, kpm), x)


def test_ndr_encoder_shares_one_layer_has_no_absolute_positions_and_ignores_padding():
    model = build_ndr()
    enc = model.encoder
    assert enc.embed_positions is None and model.decoder.embed_positions is None
    assert isinstance(enc.layers[0].self_attn, GeometricAttention)
    assert enc.layers[0].self_attn.relative_positions is None  # --encoder-rel-pos nope
    assert enc.layers[3].gate_fc1.weight is enc.layers[0].gate_fc1.weight
    assert enc.layers[3].self_attn.q_proj.weight is enc.layers[0].self_attn.q_proj.weight
    assert model.decoder.layers[0].encoder_attn.relative_positions is not None  # rel2 kept
    tokens = torch.tensor([[5, 6, 7, 8, 2]])
    alone = enc(tokens, torch.tensor([5]))["encoder_out"][0]
    padded = torch.tensor([[1, 1, 5, 6, 7, 8, 2], [9, 10, 11, 12, 13, 14, 2]])  # left padding
    out = enc(padded, torch.tensor([5, 7]))["encoder_out"][0]
    torch.testing.assert_close(out[2:, :1], alone)


def test_ndr_options_errors_name_their_flag():
    from model_testing import build

    from plugin_tools.errors import PluginConfigError

    cases = [
        (["--decoder-attention-type", "geometric"], "--decoder-attention-type: unknown value"),
        (["--copy-gate-drop", "0.1"], "--copy-gate-drop needs --encoder-copy-gate"),
        (["--geometric-attention-unnormalized"], "needs --encoder-attention-type geometric"),
        ([*NDR, "--realformer"], "not available with --graph-encoder or --realformer"),
        (["--encoder-copy-gate", "--copy-gate-drop", "1.5"], "--copy-gate-drop must be in"),
        (["--encoder-copy-gate", "--encoder-normalize-before"], "drop --encoder-normalize-before"),
    ]
    for extra, message in cases:
        with pytest.raises(PluginConfigError, match=message):
            build(["--arch", "compgen_small_2", *extra])
