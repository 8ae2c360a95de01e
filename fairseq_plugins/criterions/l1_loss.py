"""``l1_loss`` criterion: mean absolute error of one scalar prediction per target (the official
Contextual Retrieval Task's ``nn.L1Loss``, mean over every object of the batch).

The loss is summed over the targets and ``sample_size`` is their number, so fairseq's gradient
normalisation makes the update that of the mean; ``loss`` is logged as the mean L1 (no log-2
scaling: it is not a cross-entropy).
"""

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion


@register_criterion("l1_loss")
class L1LossCriterion(FairseqCriterion):
    def forward(self, model, sample, reduce=True):
        prediction = model(**sample["net_input"]).float()
        target = sample["target"].float()
        loss = F.l1_loss(prediction, target, reduction="sum" if reduce else "none")
        sample_size = target.numel()
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs):
        loss = sum(log.get("loss", 0) for log in logging_outputs)
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        metrics.log_scalar("loss", loss / max(sample_size, 1), sample_size, round=4)

    @staticmethod
    def logging_outputs_can_be_summed():
        return True
