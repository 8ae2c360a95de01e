"""Digit-aware position ids for the arithmetic compgen tasks (add, addneg, reverse, dup): what
``--abacus`` and ``--position-coupling`` add to the encoder-decoder model's embeddings
(models/variant_transformer.py; docs/method.md §5.9).

**Abacus** (McLeish et al., NeurIPS 2024; mcleish7/arithmetic ``abacus.py``): every token gets
its 1-based index within its maximal run of digit tokens, 0 if it is not a digit; during
training one offset k, uniform in 0 .. max_offset (the official code's ``max_k``, default 99),
is drawn per batch and added to the non-zero ids; a learned table maps the ids to vectors that
are added to the token embeddings. The paper writes numbers least significant digit first and
counts from the run's start, so id 1 is the units digit. Our numbers are written most
significant digit first, so the encoder (the whole source visible) counts from the run's end
(``count_from_end``: id 1 = units, the paper's meaning: operands of different lengths align,
e.g. addneg's ``# # - 3 6 7`` and ``# # 1 4 9 1``). The decoder cannot: at step t the end of
the digit run it is writing is not known, and counting from it in teacher forcing would leak
the target's length. The decoder counts from the run's start (the official code's rule applied
to the tokens in their order, causal); for add, where every number is a run of 12 digits, its
id c is the column that the encoder calls 13 - c. Unlike the official table, whose row 0 is a
learned vector added to every non-digit token, row 0 here is zero (a padding row): a constant
added to every non-digit token is absorbed by their own token embeddings.

**Position coupling** (Cho et al., NeurIPS 2024; HanseulJo/position-coupling
``src/data/addition.py``, ``copy.py``): a learned absolute position table indexed by ids that
give corresponding source and target tokens the same id. Their rules, for a start s (1 at
evaluation; at training uniform per sequence so that the largest id stays <= max_position), in
our formats (a source ``x1 .. xm </s>``, a decoder input ``</s> y1 .. yL`` whose step 0 plays
their ``=``, the token that predicts the first answer token):

- add / addneg: every field (operand) is right-aligned: its token at distance d from the field's
  right end gets ``end - d`` with ``end = s + W + 1``, W the widest operand (12 in our data);
  ``[SEP]`` (their ``+``), the source ``</s>`` and decoder step 0 (their ``=``) get ``end``.
  The sum, written in the operands' width W, gets ``s + t`` at step t = 1 .. W: the same id as
  the operand tokens of its column. Padding (``0``, ``#``) and ``-`` get their columns' ids
  (Cho et al. zero-pad and give the padding digits their columns too).
- reverse (their copy with reversed output): source token i = 1 .. n gets ``s + i - 1``,
  ``</s>`` and step 0 ``s + n``, step t = 1 .. n ``s + n - t`` (source token n + 1 - t).
- dup: their copy (``s + i`` for source token i, ``s`` for ``=``), extended to two copies (Cho
  et al. define no duplication): step t = 1 .. 2n gets ``s + ((t - 1) mod n) + 1``; ``</s>``
  and step 0 get ``s``.

Steps past the target's length (only a model that failed to stop reaches them) get 0, as padding.
The target ids depend on the source and the step alone (``coupled_target_ids_at_step``).
"""

import contextlib
from typing import NamedTuple

import torch
import torch.nn as nn

from fairseq_plugins.option_choices import COUPLING_TASKS

ABACUS_FLAG = "--abacus"
ABACUS_MAX_ID_FLAG = "--abacus-max-id"
ABACUS_MAX_OFFSET_FLAG = "--abacus-max-offset"
COUPLING_FLAG = "--position-coupling"
COUPLING_MAX_ID_FLAG = "--position-coupling-max-id"
DIGIT_SYMBOLS = tuple(str(d) for d in range(10))
SEP_SYMBOL = "[SEP]"


# -- Abacus ---------------------------------------------------------------------------------------
def digit_indices(dictionary, side=""):
    """(k,) long: the indices of the symbols '0' .. '9' that ``dictionary`` (``side``: its
    name in the error, e.g. "source") holds."""
    found = [dictionary.index(s) for s in DIGIT_SYMBOLS if s in dictionary]
    if not found:
        which = f"the {side} dictionary" if side else "the dictionary"
        raise ValueError(f"{ABACUS_FLAG}: {which} has none of the digits 0-9")
    return torch.tensor(found, dtype=torch.long)


def run_index(is_digit, count_from_end=False):
    """(B, T) long: each True of ``is_digit`` (B, T) numbered 1, 2, ... within its maximal run
    of Trues along T, from the run's start (or, with ``count_from_end``, from its end); 0
    elsewhere."""
    if count_from_end:
        return run_index(is_digit.flip(1)).flip(1)
    is_digit = is_digit.bool()
    pos = torch.arange(is_digit.size(1), device=is_digit.device).expand_as(is_digit)
    previous = torch.zeros_like(is_digit)
    previous[:, 1:] = is_digit[:, :-1]
    starts = torch.where(is_digit & ~previous, pos, torch.full_like(pos, -1))
    run_start = starts.cummax(dim=1).values  # the latest run start at or before each token
    return torch.where(is_digit, pos - run_start + 1, torch.zeros_like(pos))


def abacus_ids(tokens, digits, count_from_end=False, offset=0):
    """(B, T) long Abacus ids of ``tokens``: ``run_index`` of the digit tokens (``digits``: their
    indices, ``digit_indices``) plus ``offset`` on the digits; 0 on every other token."""
    ids = run_index(torch.isin(tokens, digits.to(tokens.device)), count_from_end)
    return torch.where(ids > 0, ids + offset, ids)


class PositionIdEmbedding(nn.Embedding):
    """A learned table of ids 0 .. max_id; id 0 (padding, non-digits, no position) is a zero
    row without gradient. Initialised as fairseq's token and learned position tables (normal,
    std dim^-0.5). ``flag``: the option whose value max_id is, named in the error."""

    def __init__(self, max_id, embed_dim, flag):
        if max_id < 1:
            raise ValueError(f"{flag} must be >= 1 (got {max_id})")
        super().__init__(max_id + 1, embed_dim, padding_idx=0)
        self.flag = flag
        nn.init.normal_(self.weight, mean=0.0, std=embed_dim**-0.5)
        with torch.no_grad():
            self.weight[0].zero_()

    @property
    def max_id(self):
        return self.num_embeddings - 1

    def forward(self, ids):
        largest = int(ids.max()) if ids.numel() else 0
        if largest > self.max_id:
            raise ValueError(
                f"{self.flag} {self.max_id} is below id {largest} of this batch (raise it)"
            )
        return super().forward(ids)


class AbacusEmbedding(nn.Module):
    """Abacus vectors (B, T, D) of a token batch, to add to its token embeddings. One side
    (encoder: ``count_from_end=True``; decoder: False, the only causal choice)."""

    def __init__(self, digits, embed_dim, max_id, max_offset, count_from_end):
        super().__init__()
        if max_offset < 0:
            raise ValueError(f"{ABACUS_MAX_OFFSET_FLAG} must be >= 0 (got {max_offset})")
        self.register_buffer("digits", torch.as_tensor(digits, dtype=torch.long), persistent=False)
        self.table = PositionIdEmbedding(max_id, embed_dim, ABACUS_MAX_ID_FLAG)
        self.max_offset = max_offset
        self.count_from_end = count_from_end

    def sample_offset(self, generator=None):
        """The offset of one batch: uniform in 0 .. max_offset when training, else 0. The model
        draws it once per batch and gives it to both sides (the paper: one k per sequence
        batch)."""
        if not self.training or self.max_offset == 0:
            return 0
        return int(torch.randint(0, self.max_offset + 1, (), generator=generator))

    def ids(self, tokens, offset=0):
        return abacus_ids(tokens, self.digits, self.count_from_end, offset)

    def forward(self, tokens, offset=0):
        return self.table(self.ids(tokens, offset))


# -- position coupling ----------------------------------------------------------------------------
class CouplingSymbols(NamedTuple):
    pad: int
    eos: int
    sep: int  # -1 when the dictionary has no [SEP] (reverse, dup)

    @classmethod
    def from_dictionary(cls, dictionary):
        sep = dictionary.index(SEP_SYMBOL) if SEP_SYMBOL in dictionary else -1
        return cls(dictionary.pad(), dictionary.eos(), sep)

    @classmethod
    def for_task(cls, task, dictionary):
        """The symbols of a source dictionary checked for ``task`` when the model is built:
        add/addneg need [SEP] and refuse compgen-data's --alignment-tokens markers (P1, P2,
        ...: they would double the operands' width W against a sum of W tokens)."""
        check_task(task)
        symbols = cls.from_dictionary(dictionary)
        if task in ("add", "addneg"):
            if symbols.sep < 0:
                raise ValueError(
                    f"{COUPLING_FLAG} {task}: the source dictionary has no {SEP_SYMBOL}"
                )
            if "P1" in dictionary:
                raise ValueError(
                    f"{COUPLING_FLAG} {task}: the source dictionary has --alignment-tokens "
                    "markers (P1, ...), whose sources coupling does not lay out"
                )
        return symbols


def check_task(task):
    if task not in COUPLING_TASKS:
        raise ValueError(
            f"{COUPLING_FLAG}: unknown task {task!r} (choose from {', '.join(COUPLING_TASKS)})"
        )


def source_length(task, src_tokens, symbols):
    """(B,) long: the length each sentence's target ids are laid out for: W, the widest operand
    (add, addneg), or n, the number of source tokens before </s> (reverse, dup). Checks that
    the sources have the task's format (one [SEP] for add/addneg, none for reverse/dup)."""
    check_task(task)
    real = src_tokens.ne(symbols.pad) & src_tokens.ne(symbols.eos)
    is_sep = src_tokens.eq(symbols.sep)
    seps = is_sep.sum(1)
    if task in ("add", "addneg"):
        if symbols.sep < 0:
            raise ValueError(f"{COUPLING_FLAG} {task}: the source dictionary has no {SEP_SYMBOL}")
        if bool(seps.ne(1).any()):
            raise ValueError(
                f"{COUPLING_FLAG} {task}: a source has {int(seps[seps.ne(1)][0])} {SEP_SYMBOL} "
                f"tokens (expected 1: `d1 {SEP_SYMBOL} d2`)"
            )
        first = real & is_sep.long().cumsum(1).eq(0)
        second = real & ~is_sep & ~first
        return torch.maximum(first.sum(1), second.sum(1))
    if bool(seps.any()):
        raise ValueError(
            f"{COUPLING_FLAG} {task}: a source has {SEP_SYMBOL} (a --dup-variant source?); "
            f"expected a plain digit string"
        )
    return real.sum(1)


def coupling_span(task, length):
    """(B,) long: the largest coupled id of each sentence when its start is 1."""
    return length + 2 if task in ("add", "addneg") else length + 1


def draw_coupling_start(task, src_tokens, symbols, max_id, training, generator=None):
    """(B,) long start s of each sentence: 1 at evaluation; at training uniform per sentence in
    1 .. max_id - span + 1 (Cho et al.'s random start, largest id <= max_position)."""
    span = coupling_span(task, source_length(task, src_tokens, symbols))
    widest = int(span.max()) if span.numel() else 0
    if widest > max_id:
        raise ValueError(
            f"{COUPLING_MAX_ID_FLAG} {max_id} is below the {widest} ids a sentence of this "
            f"batch needs (raise it)"
        )
    if not training:
        return torch.ones_like(span)
    choices = (max_id - span + 1).to(torch.float64)
    u = torch.rand(span.shape, generator=generator, dtype=torch.float64).to(span.device)
    return 1 + (u * choices).floor().long()


def coupled_source_ids(task, src_tokens, symbols, start):
    """(B, S) long coupled ids of the source tokens (left or right padded; padding 0)."""
    length = source_length(task, src_tokens, symbols)
    pad, eos = src_tokens.eq(symbols.pad), src_tokens.eq(symbols.eos)
    s = start.view(-1, 1)
    if task in ("add", "addneg"):
        # Each token's distance d to the next [SEP] or </s> (its field's right end) on the right.
        pos = torch.arange(src_tokens.size(1), device=src_tokens.device).expand_as(src_tokens)
        boundary = eos | src_tokens.eq(symbols.sep)
        marked = torch.where(boundary, pos, torch.full_like(pos, src_tokens.size(1)))
        next_boundary = marked.flip(1).cummin(dim=1).values.flip(1)
        ids = s + length.view(-1, 1) + 1 - (next_boundary - pos)  # end - d; a boundary: end
    else:
        rank = (~pad).long().cumsum(1)  # 1-based index among the sentence's tokens
        if task == "reverse":
            ids = torch.where(eos, s + length.view(-1, 1), s + rank - 1)
        else:  # dup
            ids = torch.where(eos, s, s + rank)
    return ids.masked_fill(pad, 0)


def target_ids_at_steps(task, length, start, steps):
    """Coupled ids (B, T) of decoder steps ``steps`` (B, T) long (step 0: the leading </s>),
    from each sentence's ``length`` and ``start`` (B,): the rules of the module docstring."""
    check_task(task)
    n, s = length.view(-1, 1), start.view(-1, 1)
    zero = torch.zeros_like(steps)
    if task in ("add", "addneg"):
        first, inside, last = s + n + 1, s + steps, n
    elif task == "reverse":
        first, inside, last = s + n, s + n - steps, n
    else:  # dup: ``steps - 1`` is -1 at step 0, which takes ``first`` anyway
        first, inside, last = s, s + (steps - 1).remainder(n.clamp(min=1)) + 1, 2 * n
    ids = torch.where(steps.eq(0), first.expand_as(steps), inside)
    return torch.where(steps.gt(last), zero, ids)


def coupled_target_ids_at_step(task, src_tokens, symbols, start, step):
    """(B,) long coupled ids of decoder step ``step`` (an int) of every sentence: what
    incremental decoding needs, from the source and the step alone."""
    length = source_length(task, src_tokens, symbols)
    steps = torch.full((length.numel(), 1), step, dtype=torch.long, device=length.device)
    return target_ids_at_steps(task, length, start, steps)[:, 0]


def coupled_target_ids(task, src_tokens, prev_output_tokens, symbols, start):
    """(B, T) long coupled ids of the decoder inputs ``prev_output_tokens`` (``</s> y1 ..``,
    padded on either side; padding 0): step k is the k-th non-padding token."""
    length = source_length(task, src_tokens, symbols)
    pad = prev_output_tokens.eq(symbols.pad)
    steps = (~pad).long().cumsum(1) - 1
    return target_ids_at_steps(task, length, start, steps.clamp(min=0)).masked_fill(pad, 0)


class PositionCoupling(nn.Module):
    """Coupled position vectors of one model (a table shared by encoder and decoder, as Cho et
    al.'s one table serves input and output): replaces the absolute position embeddings."""

    def __init__(self, task, symbols, embed_dim, max_id):
        super().__init__()
        check_task(task)
        self.task, self.symbols = task, symbols
        self.table = PositionIdEmbedding(max_id, embed_dim, COUPLING_MAX_ID_FLAG)

    def draw_start(self, src_tokens, generator=None):
        """(B,) starts, drawn once per batch in the encoder and kept for the decoder."""
        return draw_coupling_start(
            self.task, src_tokens, self.symbols, self.table.max_id, self.training, generator
        )

    def source(self, src_tokens, start):
        return self.table(coupled_source_ids(self.task, src_tokens, self.symbols, start))

    def target(self, src_tokens, prev_output_tokens, start):
        """(B, T, D) vectors of every decoder input so far (incremental decoding passes the
        whole prefix and keeps the last column, as fairseq does with its position tables)."""
        ids = coupled_target_ids(self.task, src_tokens, prev_output_tokens, self.symbols, start)
        return self.table(ids)


# -- in a model: the vectors one stack adds where fairseq adds its absolute positions -------------
class DigitDraws:
    """The draws of the current forward of one stack, set around it (``drawn``), None outside:
    the source tokens (what the decoder's coupled ids are laid out from), the Abacus offset
    (an int) and the coupling starts ((B,) long or None). The encoder draws them; the decoder
    reads them from ``encoder_out``, so that both sides of a batch, and its beams, share them."""

    def __init__(self):
        self.src_tokens = self.offset = self.start = None

    @contextlib.contextmanager
    def drawn(self, src_tokens, offset, start):
        self.src_tokens, self.offset, self.start = src_tokens, offset, start
        try:
            yield
        finally:
            self.src_tokens = self.offset = self.start = None


class DigitPositionVectors(nn.Module):
    """(B, T, D): what one stack (encoder or ``decoder``) adds to its scaled token embeddings
    where fairseq adds ``embed_positions``: its Abacus vectors (``abacus``, the side's
    AbacusEmbedding) plus the coupled position vectors (``coupling``, the model's shared
    PositionCoupling), either None when off, for the draws of the current forward (``draws``).
    Called as fairseq calls its position embeddings; in incremental decoding on the whole prefix
    (fairseq keeps the last column). The tables are the stack's modules (their state-dict keys
    ``encoder.abacus.table.weight`` ...); this module only refers to them (no parameters)."""

    def __init__(self, abacus, coupling, draws, decoder, max_positions):
        super().__init__()
        self.parts = (abacus, coupling)  # a tuple: not registered as submodules
        self.draws, self.decoder = draws, decoder
        self.max_positions = max_positions  # read by fairseq's max_positions()

    def forward(self, tokens, incremental_state=None):
        abacus, coupling = self.parts
        draws = self.draws
        if draws.offset is None:
            raise RuntimeError("Abacus / coupled positions: no draws outside the stack's forward")
        vectors = []
        if abacus is not None:
            vectors.append(abacus(tokens, draws.offset))
        if coupling is not None:
            if self.decoder:
                vectors.append(coupling.target(draws.src_tokens, tokens, draws.start))
            else:
                vectors.append(coupling.source(tokens, draws.start))
        return vectors[0] if len(vectors) == 1 else vectors[0] + vectors[1]

    def add_to(self, embed_positions):
        """Add the vectors to the output of the stack's own position embedding (a forward
        hook: its parameters and state-dict keys stay); in incremental decoding fairseq's
        embeddings return the last step only, which gets the prefix's last column."""

        def add(module, args, output):
            vectors = self(args[0])
            return output + vectors[:, vectors.size(1) - output.size(1) :]

        return embed_positions.register_forward_hook(add)
