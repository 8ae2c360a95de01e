"""``cogs_tagging`` criterion: the sum of the five heads' cross-entropies (parent, role, category,
noun determiner, verb name), summed over the real tokens of the batch; fairseq divides by the
number of tokens (``sample_size``). The official loss is the mean of the five per-token means,
1/5 of ours per token: the same minimiser, and Adam's updates do not depend on the scale.

Padding positions are excluded (target -100). In evaluation mode (validation) it also counts the
sentences whose five rows are all exact (``accuracy``, the official metric) and whose rebuilt
logical form is exact (``lf_accuracy``); both are logged as fractions 0..1.
"""

import math

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion

from plugin_tools.cogs_tags import ROWS


def tagging_losses(model, net_output, sample):
    """{row: summed cross-entropy} of the five heads (float32)."""
    targets = model.targets(sample)
    losses = {}
    for row in ROWS:
        logits = net_output[row].float()
        losses[row] = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)),
            targets[row].reshape(-1),
            ignore_index=-100,
            reduction="sum",
        )
    return losses


@register_criterion("cogs_tagging")
class CogsTaggingCriterion(FairseqCriterion):
    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        losses = tagging_losses(model, net_output, sample)
        loss = sum(losses.values())
        ntokens = sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "ntokens": ntokens,
            "nsentences": sample["nsentences"],
            "sample_size": ntokens,
        }
        for row, value in losses.items():
            logging_output[f"loss_{row}"] = value.data
        if not model.training:
            scored = self.task.score(sample, model.predict(net_output))
            logging_output["_tags_correct"] = sum(int(t) for _, t, _ in scored)
            logging_output["_lf_correct"] = sum(int(lf) for _, _, lf in scored)
            logging_output["_scored"] = len(scored)
        return loss, ntokens, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs):
        def total(key):
            value = sum(log.get(key, 0) for log in logging_outputs)
            return value.item() if hasattr(value, "item") else value

        ntokens = total("ntokens")
        denom = max(ntokens, 1) * math.log(2)
        metrics.log_scalar("loss", total("loss") / denom, ntokens, round=3)
        for row in ROWS:
            metrics.log_scalar(f"loss_{row}", total(f"loss_{row}") / denom, ntokens, round=3)
        scored = total("_scored")
        if scored > 0:
            metrics.log_scalar("_tags_correct", total("_tags_correct"))
            metrics.log_scalar("_lf_correct", total("_lf_correct"))
            metrics.log_scalar("_scored", scored)
            metrics.log_derived(
                "accuracy", lambda m: m["_tags_correct"].sum / max(m["_scored"].sum, 1)
            )
            metrics.log_derived(
                "lf_accuracy", lambda m: m["_lf_correct"].sum / max(m["_scored"].sum, 1)
            )

    @staticmethod
    def logging_outputs_can_be_summed():
        return True
