"""``contextual_retrieval``: the Contextual Retrieval Task of Mittal et al. (Compositional
Attention, ICLR 2022; docs/contextual-retrieval-task.md), data generated on the fly.

No data folder: every batch is drawn by ``fairseq_plugins/data/contextual_retrieval.py`` from a
NumPy RandomState seeded with (--seed, split, epoch, batch number), so a seed gives the same batches
every time (also after a resume), and every epoch of training sees fresh data (the official stream
never repeats an example). A training epoch is ``--epoch-batches`` batches (default 5000, the
official evaluation interval), so fairseq validates on the official schedule.

Splits:
  train   --epoch-batches batches per epoch: i.i.d. preferences, or with --ood the training tuples
  valid   --valid-batches batches (default 100 = the official 25,600 examples), fixed per seed:
          the training distribution (i.i.d., or with --ood the training tuples)
  ood     with --ood only: the same number of batches, fixed per seed, every object's preference
          tuple from the held-out combinations (section 1.6)
Validate both with ``--valid-subset valid,ood``. Batches have exactly ``--batch-size`` examples
(the official 256).

--fresh-valid: the authors' evaluation instead: ``valid`` and ``ood`` drawn afresh at every
validation (batch b at training epoch e from (seed, split, e, b)), as the official loop draws 100
new batches at each evaluation. With --ood the authors evaluate the held-out combinations only:
``--valid-subset ood`` (or ``ood,valid``, so that the held-out loss picks checkpoint_best).
"""

import logging
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from fairseq.data import FairseqDataset
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from fairseq_plugins.data import contextual_retrieval as cr
from plugin_tools.errors import PluginConfigError

logger = logging.getLogger(__name__)

SPLIT_STREAMS = {"train": 0, "valid": 1, "ood": 2}  # the split's part of the RandomState seed


@dataclass
class ContextualRetrievalConfig(FairseqDataclass):
    gt_searches: int = field(
        default=2, metadata={"help": "ground-truth searches S* of the data (paper: 2 or 4)"}
    )
    gt_retrievals: int = field(
        default=4, metadata={"help": "ground-truth retrievals R* of the data (paper: 4, 8, 16)"}
    )
    num_objects: int = field(default=10, metadata={"help": "objects n per example (official 10)"})
    ood: bool = field(
        default=False,
        metadata={
            "help": "train on 80%% of the preference combinations; the 'ood' split holds the rest"
        },
    )
    no_coeff: bool = field(
        default=False,
        metadata={"help": "targets sum the reads with alpha = 1 (official --no-coeff)"},
    )
    epoch_batches: int = field(
        default=5000, metadata={"help": "training batches per epoch (fresh data every epoch)"}
    )
    valid_batches: int = field(
        default=100, metadata={"help": "batches of the fixed 'valid' and 'ood' sets (official 100)"}
    )
    fresh_valid: bool = field(
        default=False,
        metadata={
            "help": "draw the valid/ood batches afresh at every validation (the authors' "
            "evaluation); default: the same batches every time, fixed per seed"
        },
    )
    seed: int = II("common.seed")
    batch_size: Optional[int] = II("dataset.batch_size")


class ContextualRetrievalDataset(FairseqDataset):
    """``num_batches`` generated batches of ``batch_size`` examples; example k lives in batch
    k // batch_size, drawn (and cached) as a whole, so fairseq's in-order batches are exactly the
    generator's batches. ``stream``: the ints seeding batch b of epoch e, (*stream, e, b)."""

    def __init__(self, setting, stream, num_batches, batch_size, ood, held_out, epoch_fixed):
        self.setting, self.stream = setting, tuple(stream)
        self.num_batches, self.batch_size = num_batches, batch_size
        self.ood, self.held_out = ood, held_out
        self.epoch_fixed = epoch_fixed  # evaluation sets are the same at every epoch
        self.epoch = 1
        self._cached = (None, None)  # (key, tensors of one batch)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def batch_seed(self, batch_number):
        return [*self.stream, 0 if self.epoch_fixed else self.epoch, batch_number]

    def _batch(self, batch_number):
        key = (self.epoch, batch_number)
        if self._cached[0] != key:
            rng = np.random.RandomState(self.batch_seed(batch_number))
            b = cr.generate(rng, self.setting, self.batch_size, self.ood, self.held_out)
            tensors = (
                torch.from_numpy(b.tokens).float(),  # the official casts float64 -> float32
                torch.from_numpy(b.targets).float(),
                torch.from_numpy(b.preferences),
            )
            self._cached = (key, tensors)
        return self._cached[1]

    def __getitem__(self, index):
        tokens, targets, preferences = self._batch(index // self.batch_size)
        row = index % self.batch_size
        return {
            "id": index,
            "tokens": tokens[row],
            "target": targets[row],
            "pref": preferences[row],
        }

    def __len__(self):
        return self.num_batches * self.batch_size

    def collater(self, samples):
        if not samples:
            return {}

        def stack(key):
            return torch.stack([s[key] for s in samples])

        return {
            "id": torch.tensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": len(samples) * self.setting.objects,
            "net_input": {"tokens": stack("tokens")},
            "target": stack("target"),
            "preferences": stack("pref"),
        }

    def num_tokens(self, index):
        return self.setting.objects

    def size(self, index):
        return self.setting.objects

    @property
    def sizes(self):
        return np.full(len(self), self.setting.objects, dtype=np.int64)

    def ordered_indices(self):
        return np.arange(len(self), dtype=np.int64)  # in order: one generated batch per batch


@register_task("contextual_retrieval", dataclass=ContextualRetrievalConfig)
class ContextualRetrievalTask(FairseqTask):
    def __init__(self, cfg, setting):
        super().__init__(cfg)
        self.setting = setting

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        if cfg.batch_size is None or cfg.batch_size < 1:
            raise PluginConfigError(
                "--batch-size is required by --task contextual_retrieval (each batch is one "
                "generated batch of that many examples; the paper: 256)"
            )
        for name in ("epoch_batches", "valid_batches"):
            if getattr(cfg, name) < 1:
                flag = "--" + name.replace("_", "-")
                raise PluginConfigError(f"{flag} must be >= 1 (got {getattr(cfg, name)})")
        try:
            setting = cr.RetrievalSetting(
                cfg.gt_searches, cfg.gt_retrievals, cfg.num_objects, cfg.no_coeff
            )
            if cfg.ood:
                cr.ood_split(setting)
        except cr.RetrievalSettingError as error:
            raise PluginConfigError(str(error)) from None
        return cls(cfg, setting)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if split not in SPLIT_STREAMS:
            raise PluginConfigError(
                f"--task contextual_retrieval has the splits train, valid, ood (got {split!r})"
            )
        if split == "ood" and not self.cfg.ood:
            raise PluginConfigError("the 'ood' split (--valid-subset) needs --ood")
        train = split == "train"
        self.datasets[split] = ContextualRetrievalDataset(
            self.setting,
            stream=(self.cfg.seed, SPLIT_STREAMS[split]),
            num_batches=self.cfg.epoch_batches if train else self.cfg.valid_batches,
            batch_size=self.cfg.batch_size,
            ood=self.cfg.ood,
            held_out=split == "ood",
            epoch_fixed=not (train or self.cfg.fresh_valid),
        )
        self.datasets[split].set_epoch(epoch)

    def begin_valid_epoch(self, epoch, model):
        """Evaluation sets follow the training epoch, so that with --fresh-valid each validation
        (fairseq validates at the end of each epoch of --epoch-batches) draws new batches;
        without it the epoch is ignored (epoch_fixed)."""
        for split in ("valid", "ood"):
            if split in self.datasets:
                self.datasets[split].set_epoch(epoch)

    def max_positions(self):
        return None

    @property
    def source_dictionary(self):
        return None

    @property
    def target_dictionary(self):
        return None
