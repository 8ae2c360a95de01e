#!/usr/bin/env python3
"""Average the value scores of every compositional attention of a checkpoint over a dataset and
draw one heatmap (searches x retrievals) per layer, as in the Compositional Attention paper.

  python scripts/value-scores.py CHECKPOINT DATA_BIN [--subset valid] [--out DIR] [--max-batches N]

Value scores c_ij (how much search i uses retrieval j, per token) are averaged over every real
(non-padding) query token. Writes DIR/value-scores-<layer>.png for each layer with compositional
attention (one panel per attention of the layer) and DIR/value-scores.json with the numbers.
"""

import argparse
import json
import os
import sys
from collections import defaultdict

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser


def fail(message):
    print(f"value-scores: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(checkpoint, data, subset, max_tokens):
    from fairseq import checkpoint_utils

    import fairseq_plugins  # noqa: F401  (registers the models, safe checkpoint loading)
    from plugin_tools.errors import PluginError

    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [checkpoint], arg_overrides={"data": data}
        )
    except FileNotFoundError as e:
        fail(f"cannot load {checkpoint} with data {data}: {e}")
    except PluginError as e:  # refused, corrupt or mismatching checkpoint
        fail(" ".join(str(e).split()))
    model = models[0].eval()
    try:
        task.load_dataset(subset)
    except (FileNotFoundError, KeyError) as e:
        fail(f"no subset '{subset}' in {data}: {e}")
    itr = task.get_batch_iterator(
        dataset=task.dataset(subset), max_tokens=max_tokens, required_batch_size_multiple=1
    ).next_epoch_itr(shuffle=False)
    return model, itr


def main():
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("data")
    p.add_argument("--subset", default="valid")
    p.add_argument("--out", default="value-scores")
    p.add_argument("--max-batches", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=4000)
    args = p.parse_args()
    if not os.path.isfile(args.checkpoint):
        fail(f"checkpoint {args.checkpoint} not found")
    if not os.path.isdir(args.data):
        fail(f"data directory {args.data} not found")

    import torch

    from fairseq_plugins.modules.compositional_attention import CompositionalAttention

    model, itr = load(args.checkpoint, args.data, args.subset, args.max_tokens)
    modules = {n: m for n, m in model.named_modules() if isinstance(m, CompositionalAttention)}
    if not modules:
        fail(f"{args.checkpoint} has no compositional attention (--attention-type compositional)")
    sums = {n: 0.0 for n in modules}
    counts = defaultdict(float)
    current = {}

    def hook(name):
        def collect(module, inputs, output):
            scores = module.last_value_scores  # (B, S, T, R)
            mask = current["encoder" if name.startswith("encoder.") else "decoder"]
            keep = (~mask).to(scores.dtype)  # (B, T)
            sums[name] = sums[name] + torch.einsum("bstr,bt->sr", scores, keep)
            counts[name] += float(keep.sum())

        return collect

    for name, module in modules.items():
        module.keep_value_scores = True
        module.register_forward_hook(hook(name))
    pad = model.decoder.dictionary.pad()
    with torch.no_grad():
        for i, sample in enumerate(itr):
            if args.max_batches is not None and i >= args.max_batches:
                break
            net_input = sample["net_input"]
            current["encoder"] = net_input["src_tokens"].eq(pad)
            current["decoder"] = net_input.get("prev_output_tokens", net_input["src_tokens"]).eq(
                pad
            )
            model(**net_input)

    averages = {n: (sums[n] / max(counts[n], 1.0)).tolist() for n in modules}
    write_plots(averages, args.out)
    print(
        f"value-scores: {len(averages)} attentions averaged; plots and value-scores.json in {args.out}"
    )


def write_plots(averages, out):
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # fairseq's logging shows DEBUG

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "value-scores.json"), "w") as f:
        json.dump(averages, f, indent=1)
    layers = defaultdict(list)  # "encoder.layers.0" -> [(attention name, matrix)]
    for name, matrix in averages.items():
        layer, _, attention = name.rpartition(".")
        layers[layer].append((attention, np.array(matrix)))
    for layer, panels in layers.items():
        fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
        for ax, (attention, matrix) in zip(axes[0], panels):
            im = ax.imshow(matrix, vmin=0.0, vmax=1.0, cmap="viridis")
            ax.set_title(attention, fontsize=9)
            ax.set_xlabel("retrieval")
            ax.set_ylabel("search")
            ax.set_xticks(range(matrix.shape[1]))
            ax.set_yticks(range(matrix.shape[0]))
            for (i, j), v in np.ndenumerate(matrix):
                ax.text(
                    j,
                    i,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="w" if v < 0.6 else "k",
                )
        fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
        fig.suptitle(f"value scores, {layer}", fontsize=10)
        fig.savefig(os.path.join(out, f"value-scores-{layer}.png"), dpi=110, bbox_inches="tight")
        plt.close(fig)


if __name__ == "__main__":
    main()
