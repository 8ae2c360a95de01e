"""Whole models: every variant combination decodes incrementally exactly like the full forward
pass (also after beam reordering), is invariant to padding, and layer sharing really shares."""

import pytest
import torch
from attention_testing import randomize
from model_testing import (
    REALFORMER_VARIANTS,
    TINY,
    assert_decodes_incrementally_with_beam_reordering,
    assert_keras_defaults,
    assert_lm_decodes_incrementally,
    assert_padding_invariant,
    batch,
    build,
    embedding_std,
    full_log_probs,
    tiny_model,
    toy_dictionary,
)

VARIANTS = {
    "stock": "--arch variant_transformer".split(),
    "compositional": (
        "--arch variant_transformer --attention-type compositional --num-searches 4 "
        "--num-retrievals 2 --retrieval-qk-dim 8"
    ).split(),
    "compositional-mlp-shared": (
        "--arch variant_transformer --attention-type compositional --retrieval-scoring mlp "
        "--retrieval-mlp-hidden 8 --share-encoder-layers --share-decoder-layers"
    ).split(),
    # The official options in every role, with relative positions and layer sharing.
    "compositional-learned-key-qcompose-gumbel-rel2-shared": (
        "--arch variant_transformer --attention-type compositional --num-retrievals 2 "
        "--retrieval-qk-dim 8 --retrieval-scoring learned-key --retrieval-query-from-search "
        "--retrieval-gumbel --rel-pos eb --rel-pos-cross --rel-pos-radius 2 "
        "--share-encoder-layers --share-decoder-layers"
    ).split(),
    "compositional-mlp-qcompose-gumbel-rel-b": (
        "--arch variant_transformer --attention-type compositional --retrieval-scoring mlp "
        "--retrieval-query-from-search --retrieval-gumbel --retrieval-gumbel-temperature 0.5 "
        "--rel-pos b --share-decoder-layers"
    ).split(),
    "rel2-eb-copy": (
        "--arch variant_transformer --rel-pos eb --rel-pos-cross --copy-decoder --rel-pos-radius 2"
    ).split(),
    "rel-e-cross-compositional": (
        "--arch variant_transformer --rel-pos e --cross-attention-type compositional"
    ).split(),
    "graph-weight-gate-half": (
        "--arch graph_transformer --graph-fusion weight-gate --graph-half-dim"
    ).split(),
    "graph-self-gate-everything": (
        "--arch graph_transformer --graph-fusion self-gate --graph-shared-qkv --attention-type "
        "compositional --rel-pos b --rel-pos-cross --share-encoder-layers --share-decoder-layers "
        "--copy-decoder --encoder-normalize-before --decoder-normalize-before"
    ).split(),
}


def model_for(name):
    return tiny_model({**VARIANTS, **REALFORMER_VARIANTS}[name])


@pytest.mark.parametrize("name", list(VARIANTS) + list(REALFORMER_VARIANTS))
def test_incremental_decoding_equals_full_forward_with_beam_reordering(name):
    assert_decodes_incrementally_with_beam_reordering(model_for(name))


@pytest.mark.parametrize("name", list(VARIANTS) + list(REALFORMER_VARIANTS))
def test_padding_invariance(name):
    assert_padding_invariant(model_for(name))


def test_layer_sharing_ties_parameters_but_keeps_separate_decoding_states():
    shared = model_for("compositional-mlp-shared")
    layers = shared.decoder.layers
    assert layers[0] is not layers[1]
    assert layers[0].self_attn.q_proj.weight is layers[1].self_attn.q_proj.weight
    assert layers[0].self_attn._incremental_state_id != layers[1].self_attn._incremental_state_id
    one_layer = sum(p.numel() for p in layers[0].parameters())
    assert sum(p.numel() for p in layers.parameters()) == one_layer
    enc_layers = shared.encoder.layers
    assert sum(p.numel() for p in enc_layers.parameters()) == sum(
        p.numel() for p in enc_layers[0].parameters()
    )
    # gradient of a shared weight collects every layer's contribution, in one tensor
    src, lengths, tgt = batch()
    shared.train()
    full_log_probs(shared, src, lengths, tgt).sum().backward()
    assert layers[1].fc1.weight.grad is layers[0].fc1.weight.grad


def test_graph_layer_sharing_shares_common_parts_with_the_first_layer():
    model = model_for("graph-self-gate-everything")
    first, second, third = model.encoder.layers
    assert second.self_attn.q_proj.weight is first.self_attn.q_proj.weight
    assert third.mid_attn_incr_prev.k_proj.weight is second.mid_attn_incr_prev.k_proj.weight
    assert third.fusion.q_proj.weight is second.fusion.q_proj.weight


def test_copy_decoder_needs_a_joined_dictionary():
    other = toy_dictionary(25)
    with pytest.raises(ValueError, match="--joined-dictionary"):
        build(VARIANTS["rel2-eb-copy"] + TINY, toy_dictionary(), other)


def test_language_model_presets_build_and_decode_incrementally():
    torch.manual_seed(0)
    small = [
        "--decoder-layers",
        "2",
        "--decoder-embed-dim",
        "32",
        "--decoder-ffn-embed-dim",
        "64",
        "--decoder-attention-heads",
        "4",
        "--retrieval-qk-dim",
        "8",
    ]
    for arch in ("compositional_transformer_lm", "compositional_transformer_lm_baseline"):
        model, args = build(["--arch", arch] + small, lm=True)
        assert args.share_decoder_layers and args.decoder_normalize_before
        assert args.attention_type == ("compositional" if arch.endswith("_lm") else "multihead")
        assert_lm_decodes_incrementally(randomize(model, std=0.2).eval(), 6)


@pytest.mark.parametrize(
    "name",
    [
        "compositional-learned-key-qcompose-gumbel-rel2-shared",
        "compositional-mlp-qcompose-gumbel-rel-b",
    ],
)
def test_official_options_reach_every_attention_and_gumbel_noise_is_on_in_training_only(name):
    model = model_for(name)
    _, args = build(VARIANTS[name] + TINY)
    attentions = [layer.self_attn for layer in model.encoder.layers]
    attentions += [layer.self_attn for layer in model.decoder.layers]
    attentions += [layer.encoder_attn for layer in model.decoder.layers]
    for attn in attentions:
        assert attn.scoring == args.retrieval_scoring and attn.query_from_search and attn.gumbel
        assert attn.gumbel_temperature == float(args.retrieval_gumbel_temperature)
        assert attn.relative_positions is not None or attn.encoder_decoder_attention
    src, lengths, tgt = batch()
    with torch.no_grad():  # evaluation: plain softmax, deterministic
        torch.testing.assert_close(
            full_log_probs(model, src, lengths, tgt), full_log_probs(model, src, lengths, tgt)
        )
    model.train()  # --dropout 0: only the Gumbel noise differs between two passes
    first = full_log_probs(model, src, lengths, tgt)
    assert not torch.allclose(first, full_log_probs(model, src, lengths, tgt))
    first.sum().backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname


@pytest.mark.parametrize("copy_projection", ["none", "low-rank"])
def test_official_seq2seq_init_is_the_notebooks_keras_defaults(copy_projection):
    """--seq2seq-init official: the token embeddings, the output projection and the copy
    decoder's Dense layers as Keras's defaults; every other parameter as fairseq's (same seed)."""
    arch = ["--arch", "compgen_rel2_eb_c", "--copy-projection", copy_projection]
    torch.manual_seed(0)
    fairseq_model, _ = build(arch)
    torch.manual_seed(0)
    official, args = build(arch + ["--seq2seq-init", "official"])
    assert args.seq2seq_init == "official"
    decoder = official.decoder
    copy_linears = [m for m in decoder.copy_generator.modules() if isinstance(m, torch.nn.Linear)]
    assert len(copy_linears) == (2 if copy_projection == "none" else 4)
    heads = [decoder.output_projection, *copy_linears]
    for embedding in (official.encoder.embed_tokens, decoder.embed_tokens):
        assert_keras_defaults(embedding, heads)
    d = official.encoder.embed_tokens.embedding_dim
    assert embedding_std(fairseq_model.encoder.embed_tokens) == pytest.approx(d**-0.5, rel=0.5)
    redrawn = {
        id(p)
        for m in [official.encoder.embed_tokens, decoder.embed_tokens, *heads]
        for p in m.parameters()
    }
    kept = [(n, p) for n, p in official.named_parameters() if id(p) not in redrawn]
    assert len(kept) > 20
    same = dict(fairseq_model.named_parameters())
    assert all(torch.equal(p, same[n]) for n, p in kept)
    assert not torch.equal(
        decoder.output_projection.weight, same["decoder.output_projection.weight"]
    )
