"""Randomized positions as an option (--random-positions-max-length L): parsing and errors, the
sampled positions reaching the attentions (schemes, RoPE) and the absolute embeddings of both
sides, incremental decoding with a beam reorder against a full pass on the same draws, padding
invariance, state-dict keys, and one run through fairseq-train and fairseq-generate."""

import math

import pytest
import torch
import torch.nn.functional as F
from attention_testing import multihead_reference, padding_mask
from fairseq import utils
from fairseq.modules import SinusoidalPositionalEmbedding
from model_testing import (
    TINY,
    assert_padding_invariant,
    batch,
    build,
    decode_incrementally,
    full_log_probs,
    tiny_model,
)

import fairseq_plugins.modules.randomized_positions as randomized
from fairseq_plugins.modules.position_schemes import alibi_slopes
from plugin_tools.errors import PluginConfigError

L = 40
RANDOM = ["--arch", "variant_transformer", "--random-positions-max-length", str(L)]
VARIANTS = {
    "alibi-rel2": ["--rel-pos", "alibi", "--rel-pos-cross"],
    "rope-rel2-sinusoidal": ["--rel-pos", "rope", "--rel-pos-cross", "--rel-pos-keep-absolute"],
    "learned-absolute-compositional": ["--encoder-learned-pos", "--decoder-learned-pos"]
    + ["--attention-type", "compositional", "--num-retrievals", "2", "--retrieval-qk-dim", "8"],
    "fire-rel2-t5-decoder": ["--rel-pos", "fire", "--rel-pos-cross", "--decoder-rel-pos", "t5"],
}
ORIGINAL_DRAW = randomized.sorted_random_subsets


def test_random_positions_parse_and_bad_values_name_their_flag():
    model, _ = build(RANDOM + TINY + ["--rel-pos", "alibi"])
    assert model.encoder.random_positions.max_length == L
    assert model.decoder.random_positions_budget == min(L, model.decoder.max_target_positions)
    sampled = model.decoder.sampled_positions
    assert all(layer.self_attn.sampled_positions is sampled for layer in model.decoder.layers)
    off, _ = build(["--arch", "variant_transformer"] + TINY + ["--rel-pos", "alibi"])
    assert off.encoder.random_positions is None and off.decoder.random_positions is None
    assert off.encoder.layers[0].self_attn.sampled_positions is None
    with pytest.raises(PluginConfigError, match=r"^--random-positions-max-length must be >= 0"):
        build(["--arch", "variant_transformer", "--random-positions-max-length", "-1"])
    with pytest.raises(PluginConfigError, match="^--random-positions-max-length is not availab"):
        build(RANDOM + ["--encoder-attention-type", "geometric"])
    too_long = ["--encoder-learned-pos", "--max-source-positions", "16"]
    with pytest.raises(PluginConfigError, match="^--random-positions-max-length 40 exceeds the"):
        build(RANDOM + TINY + too_long)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_random_positions_add_no_state_dict_keys(variant):
    with_random, _ = build(RANDOM + TINY + VARIANTS[variant])
    without, _ = build(["--arch", "variant_transformer"] + TINY + VARIANTS[variant])
    assert list(with_random.state_dict()) == list(without.state_dict())


def alibi_reference(m, query, key, q_pos, k_pos, key_padding_mask=None):
    slopes = alibi_slopes(m.num_heads)

    def logit(q, k, b, h, i, j):
        return q @ k / math.sqrt(m.head_dim) - slopes[h] * abs(q_pos[b][i] - k_pos[b][j])

    return multihead_reference(m, query, key, logit, key_padding_mask)


def test_attentions_and_embeddings_read_the_sampled_positions():
    """Inside a drawn context, encoder self-attention and rel2 cross-attention of the built model
    use the sampled positions (ALiBi on them, from the paper's equation), and the absolute
    embedding is the sinusoid of row padding_idx + 1 + p."""
    model = tiny_model(RANDOM + VARIANTS["alibi-rel2"]).double()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 2, 32, dtype=torch.float64, generator=g)
    y = torch.randn(3, 2, 32, dtype=torch.float64, generator=g)
    kpm = padding_mask([6, 4], 6, left=True)
    enc_positions = torch.tensor([[1, 5, 9, 20, 21, 39], [0, 0, 3, 4, 17, 30]])
    dec_positions = torch.tensor([[2, 11, 12], [0, 7, 38]])
    encoder_attn = model.encoder.layers[0].self_attn
    with model.encoder.sampled_positions.drawn(enc_positions):
        out, _ = encoder_attn(x, x, x, key_padding_mask=kpm, need_weights=False)
    pos = enc_positions.tolist()
    torch.testing.assert_close(out, alibi_reference(encoder_attn, x, x, pos, pos, kpm))
    cross = model.decoder.layers[1].encoder_attn
    with model.decoder.sampled_positions.drawn(dec_positions, enc_positions):
        out, _ = cross(y, x, x, key_padding_mask=kpm, static_kv=True, need_weights=False)
    expected = alibi_reference(cross, y, x, dec_positions.tolist(), pos, kpm)
    torch.testing.assert_close(out, expected)

    absolute = tiny_model(RANDOM + ["--decoder-rel-pos", "alibi"])
    embed = absolute.encoder.embed_positions
    tokens = torch.tensor([[1, 1, 7, 8, 2], [5, 6, 7, 8, 2]])
    positions = torch.tensor([[0, 0, 3, 9, 39], [0, 1, 2, 30, 31]])
    with absolute.encoder.sampled_positions.drawn(positions):
        got = embed(tokens)
    table = SinusoidalPositionalEmbedding.get_embedding(L + 2, 32, 1)
    expected = F.embedding((positions + 2).masked_fill(tokens.eq(1), 1), table, 1)
    torch.testing.assert_close(got, expected)
    assert got[0, 0].abs().sum() == 0  # padding keeps fairseq's zero row
    outside = F.embedding(utils.make_positions(tokens, 1), table, 1)  # fairseq's own 0..T-1
    torch.testing.assert_close(embed(tokens), outside)


class Draws:
    """sorted_random_subsets recorded (``record``) or handed out again (``replay``)."""

    def __init__(self, monkeypatch):
        self.monkeypatch, self.drawn = monkeypatch, []

    def record(self):
        def draw(*args, **kwargs):
            self.drawn.append(ORIGINAL_DRAW(*args, **kwargs))
            return self.drawn[-1]

        self.monkeypatch.setattr(randomized, "sorted_random_subsets", draw)

    def replay(self, *draws):
        queue = iter(draws)
        self.monkeypatch.setattr(randomized, "sorted_random_subsets", lambda *a, **k: next(queue))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_decoding_equals_the_full_pass_on_the_same_draws_and_follows_the_beams(
    variant, monkeypatch
):
    """Step-by-step decoding (one draw of the budget at the first step) equals a full pass whose
    target positions are the first T of that draw; after a beam reorder mid-way, the next step
    equals a full pass of the reordered prefixes on the reordered draws (encoder's too)."""
    model = tiny_model(RANDOM + VARIANTS[variant]).double()
    draws = Draws(monkeypatch)
    src, lengths, tgt = batch()
    with torch.no_grad():
        draws.record()
        steps = decode_incrementally(model, src, lengths, tgt)
        encoder_draw, decoder_draw = draws.drawn
        assert decoder_draw.shape == (3, model.decoder.random_positions_budget)
        draws.replay(encoder_draw, decoder_draw[:, : tgt.size(1)])
        full = full_log_probs(model, src, lengths, tgt)
        torch.testing.assert_close(steps, full, atol=2e-5, rtol=1e-5)

        # beam search: the encoder once per sentence, its output repeated for the beams
        src2, len2, tgt2 = src[1:2], lengths[1:2], tgt[:2].clone()
        draws.drawn.clear()
        draws.record()
        beams = torch.tensor([0, 0])
        encoder_out = model.encoder.reorder_encoder_out(model.encoder(src2, len2), beams)
        src2, len2 = src2.index_select(0, beams), len2.index_select(0, beams)
        state = {}
        for t in range(2):
            model.decoder(tgt2[:, : t + 1], encoder_out, incremental_state=state)
        encoder_draw, decoder_draw = draws.drawn
        order = torch.tensor([1, 1])
        model.decoder.reorder_incremental_state_scripting(state, order)
        encoder_out = model.encoder.reorder_encoder_out(encoder_out, order)
        src2, len2, tgt2 = (t.index_select(0, order) for t in (src2, len2, tgt2))
        out = model.decoder(tgt2[:, :3], encoder_out, incremental_state=state)
        got = model.get_normalized_probs(out, log_probs=True)
        draws.replay(encoder_draw[beams], decoder_draw[order][:, :3])
        expected = full_log_probs(model, src2, len2, tgt2[:, :3])[:, -1:]
        torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-5)


def subsets_of_each_length(lengths, max_length, generator=None):
    """A draw that depends on a sentence's length only (the same for it alone or in a batch)."""
    lengths = [int(n) for n in lengths]
    rows = [ORIGINAL_DRAW([n], max_length, torch.Generator().manual_seed(n))[0] for n in lengths]
    width = max(lengths)
    return torch.stack([F.pad(r, (0, width - r.numel()), value=max_length) for r in rows])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_left_padding_changes_nothing(variant, monkeypatch):
    """The k-th real token gets the k-th sampled position wherever the padding is."""
    monkeypatch.setattr(randomized, "sorted_random_subsets", subsets_of_each_length)
    assert_padding_invariant(tiny_model(RANDOM + VARIANTS[variant]).double())


def test_positions_are_drawn_again_at_every_forward_and_at_evaluation():
    model = tiny_model(RANDOM + VARIANTS["rope-rel2-sinusoidal"])  # in eval(), as the official
    src, lengths, tgt = batch()
    with torch.no_grad():
        first, second = (full_log_probs(model, src, lengths, tgt) for _ in range(2))
    assert not torch.allclose(first, second)
    lm = tiny_model(
        ["--arch", "variant_transformer_lm", "--random-positions-max-length", "30"], lm=True
    )
    assert lm.decoder.random_positions_budget == 30


@pytest.mark.slow
def test_random_positions_train_and_generate_through_fairseqs_clis(demo_bin, tmp_path):
    from position_options_testing import train_and_generate

    options = ["--rel-pos", "rope", "--rel-pos-cross", "--rel-pos-keep-absolute"]
    options += ["--random-positions-max-length", "64"]
    checkpoint = train_and_generate(demo_bin, tmp_path / "ckpt", options)
    assert checkpoint["cfg"]["model"].random_positions_max_length == 64
