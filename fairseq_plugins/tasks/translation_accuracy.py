"""``translation_accuracy``: fairseq's translation task plus sequence-level accuracy in validation.

With ``--eval-accuracy`` every validation pass decodes the valid set with the task's sequence
generator (greedy by default; ``--eval-accuracy-args '{"beam": 4}'`` etc., as fairseq's
``--eval-bleu-args``) and logs ``accuracy``: the fraction (0..1, the scale of the paper's tables)
of examples whose whole output sequence equals the reference. So

    fairseq-train ... --user-dir fairseq_plugins --task translation_accuracy --eval-accuracy \\
        --best-checkpoint-metric accuracy --maximize-best-checkpoint-metric

keeps the checkpoint with the best validation accuracy. As for eval_bleu, each valid_step logs
counts (``_acc_correct``, ``_acc_total``) that fairseq sums across batches and workers;
reduce_metrics derives the accuracy from the sums.

Unless the generation args set ``max_len_a``/``max_len_b``, generation for a batch stops one
step after the longest reference: a longer hypothesis is wrong anyway, so accuracy is unchanged
and an untrained model cannot run on to the default 200 steps.
"""

import json
import logging
from argparse import Namespace
from dataclasses import dataclass, field

import numpy as np
from fairseq import metrics, utils
from fairseq.data import iterators
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

from fairseq_plugins.compat.batching import NotebookBatches
from plugin_tools.errors import PluginConfigError
from plugin_tools.seq_accuracy import is_correct

logger = logging.getLogger(__name__)


@dataclass
class TranslationAccuracyConfig(TranslationConfig):
    eval_accuracy: bool = field(
        default=False,
        metadata={"help": "generate the valid set and log sequence-level accuracy (0..1)"},
    )
    eval_accuracy_args: str = field(
        default='{"beam": 1}',
        metadata={"help": "generation args for --eval-accuracy as JSON, e.g. '{\"beam\": 4}'"},
    )
    eval_accuracy_print_samples: bool = field(
        default=False, metadata={"help": "log one hypothesis/reference pair per valid batch"}
    )
    # The notebook path (docs/compgen.md, "The authors' notebook and our pipeline").
    notebook_batches: bool = field(
        default=False,
        metadata={
            "help": "training batches as the authors' notebook: exactly --batch-size sentences "
            "drawn in order from a fresh shuffle of the training set every epoch, the last "
            "partial batch dropped (fairseq's batches group sentences of similar length)"
        },
    )
    pad_source_to_length: int = field(
        default=0,
        metadata={
            "help": "pad every batch's source to this many tokens (at least; 0: to the batch's "
            "longest, fairseq's). The notebook pads every split to the longest source of all "
            "splits; this matters only with --copy-attend-padding"
        },
    )


@register_task("translation_accuracy", dataclass=TranslationAccuracyConfig)
class TranslationAccuracyTask(TranslationTask):
    """TranslationTask whose validation also reports sequence-level (exact-match) accuracy."""

    cfg: TranslationAccuracyConfig

    def get_batch_iterator(self, dataset, max_tokens=None, max_sentences=None, **kwargs):
        """fairseq's iterator, with --pad-source-to-length on every split and
        --notebook-batches on the training split."""
        if self.cfg.pad_source_to_length < 0:
            raise PluginConfigError(
                f"--pad-source-to-length {self.cfg.pad_source_to_length}: must be >= 0"
            )
        train = self.datasets.get("train")
        if self.cfg.notebook_batches and train is not None and dataset is train:
            itr = self._notebook_iterator(dataset, max_tokens, max_sentences, **kwargs)
        else:
            itr = super().get_batch_iterator(dataset, max_tokens, max_sentences, **kwargs)
        if self.cfg.pad_source_to_length and hasattr(dataset, "collater"):
            length = {"source": self.cfg.pad_source_to_length, "target": None}
            itr.collate_fn = lambda samples: dataset.collater(samples, pad_to_length=length)
        return itr

    def _notebook_iterator(self, dataset, max_tokens, max_sentences, **kwargs):
        if max_tokens is not None or max_sentences is None:
            raise PluginConfigError(
                "--notebook-batches needs --batch-size N and no --max-tokens (batches of N "
                "sentences)"
            )
        epoch, seed = kwargs.get("epoch", 1), kwargs.get("seed", 1)
        reuse = not kwargs.get("disable_iterator_cache", False)
        if reuse and dataset in self.dataset_to_epoch_iter:
            return self.dataset_to_epoch_iter[dataset]
        dataset.set_epoch(epoch)
        indices = np.arange(len(dataset), dtype=np.int64)
        if kwargs.get("max_positions") is not None:
            indices = self.filter_indices_by_size(
                indices,
                dataset,
                kwargs["max_positions"],
                kwargs.get("ignore_invalid_inputs", False),
            )
        itr = iterators.EpochBatchIterator(
            dataset=dataset,
            collate_fn=dataset.collater,
            batch_sampler=NotebookBatches(indices, max_sentences, seed),
            seed=seed,
            num_shards=kwargs.get("num_shards", 1),
            shard_id=kwargs.get("shard_id", 0),
            num_workers=kwargs.get("num_workers", 0),
            epoch=epoch,
            buffer_size=kwargs.get("data_buffer_size", 0),
            disable_shuffling=True,  # the batches are already in a random order
        )
        if reuse:
            self.dataset_to_epoch_iter[dataset] = itr
        return itr

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.eval_accuracy:
            try:
                gen_args = json.loads(self.cfg.eval_accuracy_args or "{}")
            except json.JSONDecodeError as e:
                raise PluginConfigError(f"--eval-accuracy-args is not valid JSON: {e}") from None
            if not isinstance(gen_args, dict):
                raise PluginConfigError("--eval-accuracy-args must be a JSON object")
            self._acc_fixed_len = "max_len_a" in gen_args or "max_len_b" in gen_args
            self.accuracy_generator = self.build_generator([model], Namespace(**gen_args))
        return model

    def valid_step(self, sample, model, criterion):
        if self.cfg.eval_accuracy and getattr(criterion, "report_accuracy", False):
            raise PluginConfigError(
                "--eval-accuracy and the criterion's --report-accuracy both log `accuracy`; "
                "drop --report-accuracy"
            )
        loss, sample_size, logging_output = super().valid_step(sample, model, criterion)
        if self.cfg.eval_accuracy:
            correct, total = self._inference_with_accuracy(sample, model)
            logging_output["_acc_correct"] = correct
            logging_output["_acc_total"] = total
        return loss, sample_size, logging_output

    def _inference_with_accuracy(self, sample, model):
        gen = self.accuracy_generator
        if not self._acc_fixed_len:
            gen.max_len_a, gen.max_len_b = 0, int(sample["target"].size(1)) + 1
        gen_out = self.inference_step(gen, [model], sample, prefix_tokens=None)
        correct = 0
        for i, hypos in enumerate(gen_out):
            hyp = self.tgt_dict.string(hypos[0]["tokens"].int().cpu())
            ref = self.tgt_dict.string(
                utils.strip_pad(sample["target"][i], self.tgt_dict.pad()).int().cpu(),
                escape_unk=True,  # an unknown reference token never matches
            )
            correct += int(is_correct(hyp, ref))
            if i == 0 and self.cfg.eval_accuracy_print_samples:
                logger.info(f"example hypothesis: {hyp}")
                logger.info(f"example reference: {ref}")
        return correct, len(gen_out)

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)
        if not self.cfg.eval_accuracy:
            return

        def sum_logs(key):
            result = sum(log.get(key, 0) for log in logging_outputs)
            return result.item() if hasattr(result, "item") else result

        total = sum_logs("_acc_total")
        if total > 0:
            metrics.log_scalar("_acc_correct", sum_logs("_acc_correct"))
            metrics.log_scalar("_acc_total", total)
            metrics.log_derived(
                "accuracy", lambda m: m["_acc_correct"].sum / max(m["_acc_total"].sum, 1)
            )
