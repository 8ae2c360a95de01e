"""Imported at start-up by every Python process that a test not marked ``slow`` starts
(tests/conftest.py puts this folder first on PYTHONPATH while such a test runs, and names a
report file in FAIRSEQ_PLUGINS_SLOW_GUARD). A fairseq command-line tool started there records
itself in that file and stops: conftest then fails the test with "mark it slow", so the fast lane
(``scripts/test.sh --fast``, ``-m "not slow"``) never runs an end-to-end training or decoding."""

import os
import sys

_TOOLS = ("train", "generate", "eval_lm", "validate", "interactive")
_REPORT = os.environ.get("FAIRSEQ_PLUGINS_SLOW_GUARD")


def _fairseq_tool():
    """fairseq-train, ... (console script) or python -m fairseq_cli.train, ...; else None."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    if name.startswith("fairseq-") and name[len("fairseq-") :].replace("-", "_") in _TOOLS:
        return name
    argv = getattr(sys, "orig_argv", [])
    for flag, module in zip(argv, argv[1:]):
        if flag == "-m" and module.removeprefix("fairseq_cli.") in _TOOLS:
            return module
    return None


_tool = _fairseq_tool() if _REPORT else None
if _tool is not None:
    with open(_REPORT, "a") as report:
        report.write(f"{_tool}\n")
    sys.stderr.write(f"tests: {_tool} started by a test not marked slow (mark it slow)\n")
    sys.exit(97)
