"""Every module in this folder is imported (and so registered with fairseq) on import."""

from fairseq_plugins.registry import import_all

import_all(__name__, __path__)
