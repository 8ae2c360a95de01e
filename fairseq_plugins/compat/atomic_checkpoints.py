"""Crash-safe checkpoint files: a process killed at any moment (SIGKILL, OOM killer, preemption)
leaves every ``checkpoint*.pt`` either as it was or complete.

fairseq writes the first checkpoint of a save atomically (``torch_persistent_save``: ``X.tmp`` then
``os.rename``), but writes the others of the same save, usually ``checkpoint_last.pt`` after
``checkpoint_best.pt`` or ``checkpointN.pt``, with ``PathManager.copy`` = ``shutil.copyfile``
straight onto the destination: a kill during that copy leaves a truncated ``checkpoint_last.pt``,
the file the next run resumes from. Within ``fairseq.checkpoint_utils`` only (nowhere else is
``PathManager.copy`` changed), that copy writes ``X.tmp`` and ``os.replace``s it.

This covers process crashes, which is what kills training jobs. It does not fsync, so (like
fairseq's own save) a power loss can still lose the last save. ``--write-checkpoints-asynchronously``
bypasses both (fairseq then writes in place and does not copy).
"""

import os
import shutil

from fairseq.file_io import PathManager


def atomic_copy(src_path, dst_path, overwrite=False, **kwargs):
    if PathManager.path_requires_pathmanager(dst_path) or kwargs:
        return PathManager.copy(src_path, dst_path, overwrite=overwrite, **kwargs)
    if not overwrite and os.path.exists(dst_path):
        raise FileExistsError(dst_path)
    tmp = f"{dst_path}.tmp"
    shutil.copyfile(src_path, tmp)  # looked up at call time (tests inject crashes here)
    os.replace(tmp, dst_path)
    return dst_path


class CheckpointPathManager(PathManager):
    """fairseq's PathManager as ``checkpoint_utils`` sees it: copies are atomic."""

    copy = staticmethod(atomic_copy)


def make_checkpoint_copies_atomic():
    from fairseq import checkpoint_utils

    checkpoint_utils.PathManager = CheckpointPathManager
