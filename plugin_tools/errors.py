"""The plugin's exception classes: errors in what the user gave us (options, checkpoints).

fairseq's command-line tools show them as one line (``fairseq_plugins: error: ...``, see
``compat/excepthook.py``). Each keeps the built-in base a caller would catch: ``ValueError`` for
options, ``pickle.UnpicklingError`` for a refused checkpoint, ``FileNotFoundError`` for a missing
one.
"""

import pickle

PREFIX = "fairseq_plugins: error:"


class PluginError(Exception):
    """An error in what the user gave us; shown as one line by the command-line tools."""


class PluginConfigError(PluginError, ValueError):
    """Impossible or unknown model options (names the flag)."""


class CheckpointError(PluginError):
    """A checkpoint that cannot be used (names the file)."""


class CheckpointRefusedError(CheckpointError, pickle.UnpicklingError):
    pass


class CheckpointCorruptError(CheckpointError, RuntimeError):
    pass


class CheckpointMismatchError(CheckpointError, RuntimeError):
    pass


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    def __str__(self):  # FileNotFoundError would format (errno, strerror)
        return str(self.args[0]) if self.args else ""


class DataNotFoundError(PluginError, FileNotFoundError):
    """A data file a task needs is missing (names the file and the command that writes it)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""
