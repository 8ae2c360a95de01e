"""Import every module of a sub-package so that its @register_* decorators run.

fairseq's ``--user-dir`` does this itself for ``models/`` and ``tasks/``; ``import fairseq_plugins``
(pip-installed use, ``from_pretrained``) must register everything too.
"""

import importlib
import pkgutil


def import_all(package_name, package_path):
    for info in pkgutil.iter_modules(package_path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
