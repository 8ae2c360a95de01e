"""The ``ve-fairseq==0.12.3`` wheel's ``data_utils.batch_by_size`` drops the last batch whenever
that batch's size is not a multiple of ``--required-batch-size-multiple`` (default 8): training
silently skips examples, and fairseq-generate / validation score only part of a test set
(30 sentences -> 24 decoded). Official fairseq 0.12.2 keeps that batch; so do we.
"""

import numpy as np


def keep_last_batch(batch_by_size):
    def fixed_batch_by_size(
        indices,
        num_tokens_fn,
        num_tokens_vec=None,
        max_tokens=None,
        max_sentences=None,
        required_batch_size_multiple=1,
        fixed_shapes=None,
    ):
        if not isinstance(indices, np.ndarray):
            indices = np.fromiter(indices, dtype=np.int64, count=-1)
        batches = batch_by_size(
            indices,
            num_tokens_fn,
            num_tokens_vec=num_tokens_vec,
            max_tokens=max_tokens,
            max_sentences=max_sentences,
            required_batch_size_multiple=required_batch_size_multiple,
            fixed_shapes=fixed_shapes,
        )
        covered = sum(len(b) for b in batches)
        if fixed_shapes is None and covered < len(indices):
            # batches are consecutive runs of indices: what was dropped is the tail
            batches = list(batches) + [indices[covered:]]
        return batches

    fixed_batch_by_size.fairseq_plugins_fixed = True
    return fixed_batch_by_size


def keep_last_batches():
    from fairseq.data import data_utils

    if not getattr(data_utils.batch_by_size, "fairseq_plugins_fixed", False):
        data_utils.batch_by_size = keep_last_batch(data_utils.batch_by_size)


class NotebookBatches:
    """The authors' notebook's training batches (docs/compgen.md, "The authors' notebook and our
    pipeline"): every epoch a fresh shuffle of all the examples, cut into batches of exactly
    BATCH_SIZE sentences in that order, the last partial batch dropped; sentences of any lengths
    share a batch. fairseq's own batching instead groups sentences of similar length.

    Called as fairseq's per-epoch batch sampler: ``(dataset, epoch) -> [indices]``. The shuffle
    depends on (SEED, epoch) only, so a resumed run sees the same batches."""

    def __init__(self, indices, batch_size, seed):
        if batch_size is None or batch_size < 1:
            raise ValueError("--notebook-batches needs --batch-size N (sentences per batch)")
        self.indices = np.asarray(indices, dtype=np.int64)
        self.batch_size = int(batch_size)
        self.seed = int(seed)

    def __call__(self, dataset=None, epoch=1):
        rng = np.random.default_rng([self.seed, int(epoch)])
        order = self.indices[rng.permutation(len(self.indices))]
        full = len(order) // self.batch_size
        return [order[i * self.batch_size : (i + 1) * self.batch_size] for i in range(full)]
