"""Randomized positions (Ruoss et al., ACL 2023): a sequence of n tokens gets, instead of the
positions 0 .. n-1, an ordered random subset of n of the positions 0 .. L-1, with L (the
hyperparameter --random-positions-max-length; the official code's example: 2048) longer than any
test sequence. Every position a test sequence can have was then seen in training.

Sampling: a uniform subset without replacement, sorted (the official code's
``noisy_fixed_positional_encodings``). The official code also samples at evaluation (its
evaluation loop hands the model a fresh random key, and nothing switches the sampling off), and
draws one subset per batch (all its sequences have one length); here each sentence draws its own
subset of its own length, so that padding and the other sentences of the batch change nothing.

The positions replace the integer positions that the position schemes see (the query and key
positions of ``position_schemes.py``, RoPE's angles, an absolute embedding's index). The official
code's relative-encoding and ALiBi variants sample *distances* instead (a sorted subset of
1 .. L-1 for |i - j|); that variant is not this module.

Autoregressive decoding does not know the target's length. ``decoding_positions`` draws one subset
of ``budget`` positions per sentence at the first step (budget: the longest target the search may
produce), keeps it in fairseq's incremental state (reordered with the beams by
``reorder_incremental_state``) and hands out one more of its columns at each step. A causal decoder's
view at step t is then distributed as at step t of a training target of ``budget`` tokens.
"""

import contextlib

import torch
import torch.nn as nn
from fairseq.incremental_decoding_utils import with_incremental_state
from fairseq.modules import LearnedPositionalEmbedding, SinusoidalPositionalEmbedding


def sorted_random_subsets(lengths, max_length, generator=None):
    """(B, max(lengths)) long: row b starts with a uniform random subset of ``lengths[b]`` of
    0 .. max_length-1 in increasing order; columns past ``lengths[b]`` hold ``max_length``."""
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    longest = int(lengths.max()) if lengths.numel() else 0
    if longest > max_length:
        raise ValueError(
            f"--random-positions-max-length {max_length} is shorter than a sequence of "
            f"{longest} tokens"
        )
    # The first n keys in the order of i.i.d. uniform scores are a uniform n-subset.
    scores = torch.rand(lengths.numel(), max_length, generator=generator)
    chosen = scores.topk(longest, dim=1, largest=False).indices
    unused = torch.arange(longest).unsqueeze(0) >= lengths.unsqueeze(1)
    return chosen.masked_fill(unused, max_length).sort(dim=1).values


@with_incremental_state
class RandomizedPositions(nn.Module):
    """The sampled positions of one side (encoder or decoder); no parameters."""

    def __init__(self, max_length, fill=0):
        super().__init__()
        if max_length < 1:
            raise ValueError(f"--random-positions-max-length must be >= 1 (got {max_length})")
        self.max_length = max_length
        self.fill = fill  # the position given to padding (masked keys: any value does)

    def forward(self, padding_mask, generator=None):
        """Positions (B, T) of a full sequence: the k-th real token of sentence b gets the k-th
        position of a subset drawn for that sentence's length, wherever its padding is (left or
        right); padding gets ``fill``. ``padding_mask`` (B, T) bool, True at padding."""
        real = ~padding_mask.bool()
        subsets = sorted_random_subsets(real.sum(1).cpu(), self.max_length, generator)
        subsets = subsets.to(padding_mask.device)
        rank = real.long().cumsum(1) - 1  # index of each real token among its sentence's
        if subsets.size(1) == 0:
            return torch.full_like(rank, self.fill)
        positions = subsets.gather(1, rank.clamp(0, subsets.size(1) - 1))
        return positions.masked_fill(~real, self.fill)

    # -- autoregressive decoding ----------------------------------------------------------------
    def decoding_positions(self, incremental_state, bsz, tgt_len, budget, device, generator=None):
        """Positions (B, Tk) of every decoder step so far, the ``tgt_len`` new ones last: the
        self-attention's key positions, its query positions the last ``tgt_len`` of them (as
        ``BiasedAttention._relative_positions`` forms 0 .. Tk-1). They are the first columns of
        one subset of ``budget`` per sentence, drawn at the first step and kept in
        ``incremental_state``; a full pass of T steps drawn with the same generator state gets
        the same positions as T single steps."""
        if not 1 <= budget <= self.max_length:
            raise ValueError(
                f"the decoding budget of random positions must be in 1 .. "
                f"--random-positions-max-length {self.max_length} (got {budget})"
            )
        saved = self.get_incremental_state(incremental_state, "random_positions")
        if saved is None:
            lengths = torch.full((bsz,), budget, dtype=torch.long)
            drawn = sorted_random_subsets(lengths, self.max_length, generator).to(device)
            saved = {"positions": drawn, "steps": torch.zeros((), dtype=torch.long)}
        steps = int(saved["steps"]) + tgt_len
        if steps > budget:
            raise ValueError(
                f"decoder step {steps} is past the {budget} sampled random positions "
                f"(raise the budget, at most --random-positions-max-length {self.max_length})"
            )
        saved["steps"] = torch.tensor(steps)
        self.set_incremental_state(incremental_state, "random_positions", saved)
        return saved["positions"][:, :steps]

    def decoded_steps(self, incremental_state):
        """How many decoder steps ``decoding_positions`` has handed out in this state."""
        saved = self.get_incremental_state(incremental_state, "random_positions")
        return 0 if saved is None else int(saved["steps"])

    def reorder_incremental_state(self, incremental_state, new_order):
        """Beam search: the sentences' subsets follow their hypotheses."""
        saved = self.get_incremental_state(incremental_state, "random_positions")
        if saved is not None:
            saved["positions"] = saved["positions"].index_select(0, new_order)
            self.set_incremental_state(incremental_state, "random_positions", saved)
        return incremental_state


class SampledPositions:
    """The positions one forward of a stack drew (``RandomizedPositions``), shared by every
    attention of the stack, as RealFormer's carry: set around the forward (``drawn``), None
    outside it. ``positions`` (B, T): the stack's own tokens (in incremental decoding, every step
    so far), ``encoder_positions`` (B, Ts): the encoder's, the keys of rel2 cross-attention."""

    def __init__(self):
        self.positions = self.encoder_positions = None

    @contextlib.contextmanager
    def drawn(self, positions, encoder_positions=None):
        self.positions, self.encoder_positions = positions, encoder_positions
        try:
            yield
        finally:
            self.positions = self.encoder_positions = None

    def query_key_positions(self, cross, tgt_len, src_len):
        """(query positions (B, Tq), key positions (B, Tk)) of one attention: self-attention's
        queries are the last ``tgt_len`` of its keys (as ``BiasedAttention._relative_positions``),
        cross-attention's keys the encoder's."""
        queries = self.positions[:, self.positions.size(1) - tgt_len :]
        keys = self.encoder_positions if cross else self.positions
        if keys is None or keys.size(1) != src_len:
            what = "encoder tokens" if cross else "keys"
            raise RuntimeError(
                f"--random-positions-max-length: no sampled positions for the {src_len} {what} "
                "of this attention"
            )
        return queries, keys


def embed_at_sampled_positions(embed_positions, sampled, max_length):
    """Make fairseq's absolute position embedding (learned or sinusoidal) of a stack read
    ``sampled.positions`` instead of 0 .. T-1, through a forward hook that replaces its output
    (its parameters and state-dict keys stay). Position p is fairseq's row ``padding_idx + 1 + p``;
    padding keeps the padding row. A learned table needs ``max_length`` rows."""
    pad = embed_positions.padding_idx
    rows = max_length + pad + 1
    if isinstance(embed_positions, LearnedPositionalEmbedding):
        if embed_positions.num_embeddings < rows:
            raise ValueError(
                f"--random-positions-max-length {max_length} exceeds the learned position "
                f"table's {embed_positions.num_embeddings - pad - 1} positions "
                "(--max-source-positions / --max-target-positions)"
            )

        def table():
            return embed_positions.weight

    elif isinstance(embed_positions, SinusoidalPositionalEmbedding):
        sinusoids = SinusoidalPositionalEmbedding.get_embedding(
            rows, embed_positions.embedding_dim, pad
        )

        def table():
            return sinusoids

    else:
        raise ValueError(
            f"--random-positions-max-length: unknown position embedding "
            f"{type(embed_positions).__name__}"
        )

    def replace_output(module, args, output):
        positions = sampled.positions
        if positions is None:
            return output
        tokens = args[0]
        if positions.shape != tokens.shape:
            raise RuntimeError(
                f"--random-positions-max-length: {tuple(positions.shape)} sampled positions for "
                f"{tuple(tokens.shape)} tokens"
            )
        index = (positions + pad + 1).masked_fill(tokens.eq(pad), pad)
        weights = table().to(device=output.device, dtype=output.dtype)
        return nn.functional.embedding(index, weights, pad)

    return embed_positions.register_forward_hook(replace_output)
