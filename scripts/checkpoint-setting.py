"""Print one task setting a fairseq checkpoint was trained with, e.g. tokens_per_sample.

    python scripts/checkpoint-setting.py CHECKPOINT tokens_per_sample

Reads the checkpoint's cfg.task (or, for a legacy checkpoint, its args); scripts/eval-lm.sh asks
it for tokens_per_sample, which fairseq-eval-lm would otherwise default to 1024. A refused or
corrupt checkpoint: the plugin's one-line error ("fairseq_plugins: error: ..."), exit status 1; a
setting the checkpoint lacks: one line, exit status 1.

Not through scripts/_this_checkout.py: eval-lm.sh puts the parent of its --user-dir (then this
checkout) first on PYTHONPATH, so that the plugin reading the checkpoint is the one that
fairseq-eval-lm uses.
"""

import sys

from fairseq import checkpoint_utils

import fairseq_plugins  # noqa: F401  (safe globals for weights_only loading)
from plugin_tools.cli import OneLineParser
from plugin_tools.errors import PREFIX, PluginError


def task_setting(state, name):
    cfg = state.get("cfg")
    task = cfg["task"] if cfg is not None else None
    return task[name] if task is not None else vars(state["args"])[name]


def main(argv=None):
    parser = OneLineParser(prog="checkpoint-setting.py", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("name", help="a task setting, e.g. tokens_per_sample")
    args = parser.parse_args(argv)
    try:
        state = checkpoint_utils.load_checkpoint_to_cpu(args.checkpoint)
    except PluginError as e:
        sys.exit(f"{PREFIX} {' '.join(str(e).split())}")
    try:
        print(task_setting(state, args.name))
    except (KeyError, TypeError):
        sys.exit(f"{parser.prog}: {args.checkpoint} has no task setting '{args.name}'")


if __name__ == "__main__":
    main()
