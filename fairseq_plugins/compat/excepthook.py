"""One-line errors for our own exceptions in fairseq's command-line tools.

fairseq's CLIs let every exception escape as a traceback. In those commands only (fairseq-train,
-generate, -interactive, -validate, -eval-lm, -preprocess, ...; never in a user's own program or
notebook that imports the plugin), a ``sys.excepthook`` prints ``fairseq_plugins: error: <message>``
on one line for a :class:`~plugin_tools.errors.PluginError`; every other exception keeps its
traceback. ``FAIRSEQ_PLUGINS_TRACEBACK=1`` shows the traceback of ours too.
"""

import os
import sys

from plugin_tools.errors import PREFIX, PluginError


def plugin_excepthook(previous):
    def excepthook(exc_type, exc, tb):
        if isinstance(exc, PluginError) and not os.environ.get("FAIRSEQ_PLUGINS_TRACEBACK"):
            message = " ".join(str(exc).split())  # one line, whatever the message holds
            print(f"{PREFIX} {message}", file=sys.stderr, flush=True)
            return
        previous(exc_type, exc, tb)

    excepthook.fairseq_plugins_hook = True
    return excepthook


def running_fairseq_command(argv=None, main_module=None):
    """True in fairseq's console scripts (``fairseq-train``) and ``python -m fairseq_cli.X``."""
    argv = sys.argv if argv is None else argv
    if main_module is None:
        main = sys.modules.get("__main__")
        main_module = getattr(getattr(main, "__spec__", None), "name", None) or ""
    program = os.path.basename(argv[0]) if argv else ""
    return program.startswith("fairseq-") or main_module.startswith("fairseq_cli.")


def install_excepthook():
    if running_fairseq_command() and not getattr(sys.excepthook, "fairseq_plugins_hook", False):
        sys.excepthook = plugin_excepthook(sys.excepthook)
