"""Imported first by the Python scripts of scripts/ (which Python runs with scripts/ as
sys.path[0]): puts this checkout's root first on sys.path, so that ``plugin_tools`` and
``fairseq_plugins`` are this checkout's packages and not those of another checkout that the venv
has installed in development mode (the experiment worktrees share one venv)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))
