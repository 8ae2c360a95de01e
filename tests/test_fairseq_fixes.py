"""The plugin keeps the last, smaller batch that the ve-fairseq wheel drops."""

import numpy as np
from fairseq.data import data_utils

import fairseq_plugins  # noqa: F401  (applies the fix)


def test_batch_by_size_keeps_every_example():
    indices = np.arange(30)
    batches = data_utils.batch_by_size(
        indices, lambda i: 5, max_sentences=64, required_batch_size_multiple=8
    )
    assert sorted(np.concatenate(batches).tolist()) == list(range(30))
    batches = data_utils.batch_by_size(
        indices, None, num_tokens_vec=np.full(30, 5), max_tokens=40, required_batch_size_multiple=8
    )
    assert [len(b) for b in batches] == [8, 8, 8, 6]
