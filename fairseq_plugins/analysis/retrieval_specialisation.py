"""Retrieval specialisation of a compositional Contextual Retrieval model (Mittal et al., Figure 11;
docs/contextual-retrieval-task.md §5).

For one example of the evaluation data: the value scores c_{i,s,r} of every object (columns) for
every model search s and retrieval r (rows), under the ground-truth retrieval-preference one-hots
of the same objects, grey scale 0..1 (white = 1). The model rows are put in the order of the best
matching (below) so that a specialised model shows the same pattern twice.

The number: over --examples examples, the agreement of argmax_r c_{i,s,r} with rho_{i,s'} after
the best one-to-one map of model retrievals to ground-truth retrievals (per search pair, Hungarian
matching) and the best one-to-one map of model searches to ground-truth searches; 1 = every object
reads what its preference says. "chance" is the same statistic with the preferences shuffled
across objects (best matching lifts it above 1/R*).

Usage: scripts/retrieval-specialisation.py CHECKPOINT --out FIG.png [--split valid|ood]
       [--examples 2560] [--example 0]
"""

import argparse
import sys

import numpy as np

from plugin_tools.cli import OneLineParser

PROG = "retrieval-specialisation.py"


def parse_args(argv=None):
    p = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "checkpoint", help="checkpoint of --arch contextual_retrieval_model (compositional)"
    )
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument(
        "--split", choices=("valid", "ood"), help="evaluation data (default: ood for --ood runs)"
    )
    p.add_argument("--examples", type=int, default=2560, help="examples scored (default 2560)")
    p.add_argument("--example", type=int, default=0, help="the example drawn (default 0)")
    return p.parse_args(argv)


def matched_agreement(choices, preferences, retrievals, gt_retrievals):
    """choices (N, S) model argmax retrievals, preferences (N, S*): (score, search map, retrieval
    maps). score: mean over the matched searches of the best-permutation agreement."""
    from scipy.optimize import linear_sum_assignment

    searches, gt_searches = choices.shape[1], preferences.shape[1]
    agree = np.zeros((searches, gt_searches))
    maps = {}
    for s in range(searches):
        for g in range(gt_searches):
            confusion = np.zeros((retrievals, gt_retrievals))
            np.add.at(confusion, (choices[:, s], preferences[:, g]), 1)
            rows, cols = linear_sum_assignment(-confusion)
            agree[s, g] = confusion[rows, cols].sum() / len(choices)
            maps[s, g] = dict(zip(rows.tolist(), cols.tolist()))
    rows, cols = linear_sum_assignment(-agree)
    search_map = dict(zip(rows.tolist(), cols.tolist()))
    score = agree[rows, cols].mean()
    return score, search_map, {s: maps[s, g] for s, g in search_map.items()}, agree


class SpecialisationError(Exception):
    """A checkpoint or split the figure cannot be made from (one line for the user)."""


def load(checkpoint):
    """(model, task) of a contextual_retrieval_model checkpoint with compositional attention."""
    from fairseq import checkpoint_utils

    import fairseq_plugins  # noqa: F401  (registers the task and model)
    from fairseq_plugins.modules.compositional_attention import CompositionalAttention

    try:
        models, _cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    except FileNotFoundError:
        raise SpecialisationError(f"{checkpoint}: no such checkpoint") from None
    model = models[0].eval()
    if not isinstance(getattr(model, "attention", None), CompositionalAttention):
        raise SpecialisationError(
            f"{checkpoint}: value scores exist only for --arch contextual_retrieval_model "
            "--attention-type compositional"
        )
    return model, task


def specialisation(model, task, examples, split=None):
    """Value scores on ``examples`` evaluation examples (a stream of its own, fixed per seed) and
    their best-permutation agreement: a dict with split, batch, scores (B, S, n, R), score,
    chance, search_map, retrieval_maps."""
    import torch

    from fairseq_plugins.data import contextual_retrieval as cr

    split = split or ("ood" if task.cfg.ood else "valid")
    if split == "ood" and not task.cfg.ood:
        raise SpecialisationError("--split ood needs a model trained with --ood")
    setting = task.setting
    rng = np.random.RandomState([task.cfg.seed, 7])
    batch = cr.generate(rng, setting, examples, task.cfg.ood, split == "ood")
    attention = model.attention
    attention.keep_value_scores = True
    with torch.no_grad():
        model(torch.from_numpy(batch.tokens).float())
    scores = attention.last_value_scores.numpy()  # (B, S, n, R)
    searches, retrievals = scores.shape[1], scores.shape[3]
    choices = scores.argmax(-1).transpose(0, 2, 1).reshape(-1, searches)  # (B n, S)
    prefs = batch.preferences.reshape(-1, setting.searches)
    score, search_map, retrieval_maps, _ = matched_agreement(
        choices, prefs, retrievals, setting.retrievals
    )
    shuffled = np.random.RandomState(0).permutation(len(prefs))
    chance = matched_agreement(choices, prefs[shuffled], retrievals, setting.retrievals)[0]
    return dict(split=split, batch=batch, scores=scores, score=score, chance=chance,
                search_map=search_map, retrieval_maps=retrieval_maps)  # fmt: skip


def draw(found, setting, example, out):
    """The figure: model value-score rows (best-matching order) above the ground-truth rows."""
    import logging

    import matplotlib

    matplotlib.use("Agg")
    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's logging set-up is DEBUG
    import matplotlib.pyplot as plt

    scores, search_map, retrieval_maps = (
        found["scores"],
        found["search_map"],
        found["retrieval_maps"],
    )
    searches, retrievals = scores.shape[1], scores.shape[3]
    values = scores[example]  # (S, n, R)
    onehots = found["batch"].tokens[example, :, setting.searches + setting.retrievals :]
    gt_rows = onehots.T  # (S* R*, n): search s', preference r in row s' R* + r
    model_rows, labels = [], []
    for s in sorted(range(searches), key=lambda s: search_map.get(s, searches + s)):
        rmap = retrieval_maps.get(s, {})
        for r in sorted(range(retrievals), key=lambda r: rmap.get(r, retrievals + r)):
            model_rows.append(values[s, :, r])
            gt = f" -> GT s{search_map[s]} r{rmap[r]}" if r in rmap else ""
            labels.append(f"model search {s} retrieval {r}{gt}")
    labels += [
        f"GT search {g} preference {r}"
        for g in range(setting.searches)
        for r in range(setting.retrievals)
    ]
    matrix = np.concatenate([np.stack(model_rows), gt_rows])
    fig, ax = plt.subplots(figsize=(7, 0.22 * len(matrix) + 1.2))
    ax.imshow(matrix, cmap="Greys_r", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    ax.axhline(len(model_rows) - 0.5, color="red", linewidth=1)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)  # row 0 at the top, labelled as drawn
    ax.set_xticks(range(setting.objects), [f"obj {i}" for i in range(setting.objects)], fontsize=7)
    objects = found["batch"].preferences.shape[0] * setting.objects
    ax.set_title(
        f"value scores (top) vs ground-truth preferences (bottom), {found['split']} example "
        f"{example}\nbest-permutation agreement {found['score']:.3f} over {objects} objects "
        f"(chance {found['chance']:.3f})",
        fontsize=8,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    if args.examples < 1 or not 0 <= args.example < args.examples:
        sys.exit(f"{PROG}: error: --example must be in 0..--examples-1 and --examples >= 1")
    try:
        model, task = load(args.checkpoint)
        found = specialisation(model, task, args.examples, args.split)
    except SpecialisationError as error:
        sys.exit(f"{PROG}: error: {error}")
    draw(found, task.setting, args.example, args.out)
    print(
        f"best-permutation agreement {found['score']:.4f} (chance {found['chance']:.4f}) over "
        f"{args.examples * task.setting.objects} objects of {found['split']}; searches "
        f"model->GT {found['search_map']}; retrievals {found['retrieval_maps']}; figure {args.out}"
    )
