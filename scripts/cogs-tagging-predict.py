#!/usr/bin/env python3
"""Tag COGS sentences with a trained ``tagging_transformer`` checkpoint, write the predictions and
print both metrics (Ontañón et al. 2022, section 4.5.1), overall and per COGS category:

  accuracy     the official metric: all five tag rows exact (sequence level)
  lf_accuracy  the logical form rebuilt from the predicted rows equals the COGS target

DATA is the folder of scripts/cogs-tags.py the model was trained on (its vocabularies are read
from all of its splits, as in training). For each --split S, OUTDIR/S.pred.tsv gets one line per
sentence, in file order: id, category, tags exact (0/1), LF exact (0/1), the rebuilt LF (or
`!` + why it cannot be rebuilt), then the five predicted rows (parent as absolute indices, -1 for
none, -2 for a class outside the sentence; `_` for the empty tag), tab-separated;
OUTDIR/S.scores.json has the numbers of the table.

  scripts/cogs-tagging-predict.py DATA CHECKPOINT --split test --split gen --outdir OUT
"""

import argparse
import json
import sys
from pathlib import Path

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


class CliError(Exception):
    """Printed as one line."""


def parse_args(argv):
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", type=Path, help="folder written by scripts/cogs-tags.py")
    p.add_argument("checkpoint", type=Path, help="fairseq checkpoint of a tagging_transformer")
    p.add_argument(
        "--split", action="append", help="split to tag (repeatable; default: test and gen)"
    )
    p.add_argument("--outdir", type=Path, help="where S.pred.tsv and S.scores.json go")
    p.add_argument("--batch-size", type=int, default=256, help="sentences per batch (256)")
    p.add_argument("--cpu", action="store_true", help="run on CPU even if CUDA is available")
    return p.parse_args(argv)


def load(args):
    if not (args.data / "meta.json").is_file():
        raise CliError(f"{args.data}: no meta.json (run scripts/cogs-tags.py --outdir {args.data})")
    if not args.checkpoint.is_file():
        raise CliError(f"{args.checkpoint}: no such checkpoint")
    from fairseq import checkpoint_utils

    import fairseq_plugins  # noqa: F401  (registers the task, model and criterion)

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(args.checkpoint)], arg_overrides={"data": str(args.data)}
    )
    if cfg.task._name != "cogs_tagging":
        raise CliError(f"{args.checkpoint}: a {cfg.task._name} checkpoint, not cogs_tagging")
    return models[0], task


def predict_split(model, task, split, batch_size, use_cuda):
    """[(id, category, predicted Tags, tags exact, LF exact)] in file order."""
    import torch
    from fairseq import utils

    task.load_dataset(split)
    dataset = task.dataset(split)
    itr = task.get_batch_iterator(
        dataset, max_sentences=batch_size, ignore_invalid_inputs=False
    ).next_epoch_itr(shuffle=False)
    out = []
    with torch.no_grad():
        for sample in itr:
            if use_cuda:
                sample = utils.move_to_cuda(sample)
            prediction = model.predict(model(**sample["net_input"]))
            prediction = {k: v.cpu() for k, v in prediction.items()}
            for k, (rows, tags_ok, lf_ok) in enumerate(task.score(sample, prediction)):
                out.append((int(sample["id"][k]), sample["distribution"][k], rows, tags_ok, lf_ok))
    out.sort(key=lambda r: r[0])
    return out


def write_predictions(path, records, dataset):
    from plugin_tools import cogs_tags as ct

    with open(path, "w", encoding="utf-8") as f:
        for idx, category, rows, tags_ok, lf_ok in records:
            try:
                lf = ct.tags_to_lf(dataset.examples[idx]["tokens"], rows)
            except ct.TagError as e:
                lf = f"! {e}"
            strings = [" ".join(map(str, rows.parent))] + [
                " ".join(v if v else ct.FILE_NONE for v in row) for row in rows[1:]
            ]
            f.write("\t".join([str(idx), category, str(int(tags_ok)), str(int(lf_ok)), lf]))
            f.write("\t" + "\t".join(strings) + "\n")


def main(argv=None):
    args = parse_args(argv)
    if args.batch_size < 1:
        raise CliError(f"--batch-size {args.batch_size}: must be >= 1")
    import torch

    from plugin_tools.tagging_accuracy import format_table, score_tagging

    model, task = load(args)
    use_cuda = torch.cuda.is_available() and not args.cpu
    model.eval()
    if use_cuda:
        model.cuda()
    splits = args.split or ["test", "gen"]
    for split in splits:
        if not (args.data / f"{split}.src").is_file():
            raise CliError(f"{args.data}/{split}.src: no such split")
    if args.outdir:
        args.outdir.mkdir(parents=True, exist_ok=True)
    summary = {}
    for split in splits:
        records = predict_split(model, task, split, args.batch_size, use_cuda)
        scores = score_tagging((cat, t, lf) for _, cat, _, t, lf in records)
        scores["parent_head"] = model.parent_head.kind
        scores["checkpoint"] = str(args.checkpoint)
        summary[split] = scores
        print(format_table(scores, title=f"{split}\t"))
        print(
            f"{split}: accuracy {scores['accuracy']:.4f} lf_accuracy {scores['lf_accuracy']:.4f} "
            f"({scores['total']} sentences)"
        )
        if args.outdir:
            write_predictions(args.outdir / f"{split}.pred.tsv", records, task.dataset(split))
            (args.outdir / f"{split}.scores.json").write_text(json.dumps(scores, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CliError as e:
        sys.exit(f"cogs-tagging-predict: {e}")
    except OSError as e:
        sys.exit(f"cogs-tagging-predict: {e.filename or ''}: {e.strerror or e}")
    except Exception as e:  # plugin errors (bad checkpoint, bad files): one line
        from plugin_tools.errors import PluginError

        if isinstance(e, PluginError):
            sys.exit(f"cogs-tagging-predict: {e}")
        raise
