"""Finished runs kept in the checkout. A study takes more CPU hours than one sitting on a
2-core machine, and its output folder (outputs/, ignored by git) does not outlive the machine. So
every finished run's own files (logs, hypotheses, scores, time pieces, done markers; not its
checkpoints or locks) are copied into an archive folder that is committed (docs/study-runs/...),
text files over GZIP_OVER bytes gzipped. A study started again restores every archived run that
its output folder lacks: the run counts as finished (it is not trained again) and is reported
with the others. An archive holds relative paths only: every absolute path of the checkout the
run was made in (this checkout's, and any other recorded in RUN_DIR's files, see
relative_paths) is written relative to the checkout's root, so the archive reads the same on any
machine.

    scripts/experiment.py run-archive save RUN_DIR ARCHIVE_DIR
    scripts/experiment.py run-archive restore ARCHIVE_DIR RUN_DIR
"""

import gzip
import os
import re
import shutil
import sys
from pathlib import Path

from .runs import ROOT, ExperimentError

GZIP_OVER = 16_000
# never archived: what a running or killed run leaves behind, and what cannot be diffed
SKIPPED_SUFFIXES = (".lock", ".open", ".tmp", ".pt")
# restored last, so that they are newer than what they mark (compare-nmt.sh: generate.done -nt)
MARKERS = ("train.done", "generate.done", "result.json")

USAGE = """\
Usage: scripts/experiment.py run-archive save RUN_DIR ARCHIVE_DIR
       scripts/experiment.py run-archive restore ARCHIVE_DIR RUN_DIR

save: copies the plain files of the finished run folder RUN_DIR (not its sub-folders such as
checkpoints/, nor *.lock, *.open, *.tmp, *.pt) into ARCHIVE_DIR, replacing what was there;
text over 16 kB is stored gzipped (NAME.gz).
restore: copies them back into RUN_DIR (made if missing), unzipping NAME.gz to NAME, the done
markers last, replacing files of the same name (an archived run is a finished one: it wins
over what an unfinished attempt left).
The studies (study-nmt, study-lm) do both themselves (--archive); this command is for one run.
"""


# A checkout root recorded in a run's files: this checkout's own, and the ones the studies ran in
# (/work/<name>/ followed by a folder of a checkout: the package, the data, the outputs, the
# virtual environment, the configs, the scripts).
CHECKOUT_DIRS = ("fairseq_plugins", "plugin_tools", "data-bin", "outputs", ".venv", "configs")
CHECKOUT_DIRS += ("scripts", "work", "docs", "data")
_DIRS = "|".join(map(re.escape, CHECKOUT_DIRS))
OTHER_ROOT = re.compile(r"/work/[A-Za-z0-9_.+-]+/(?=(?:" + _DIRS + r")(?:/|\b))")


def relative_paths(text):
    """TEXT with the absolute checkout roots removed: ROOT/x -> x (also a root of another machine
    of the form /work/NAME/ in front of one of the checkout's folders)."""
    text = text.replace(f"{ROOT}/", "")
    return OTHER_ROOT.sub("", text)


def _relative_bytes(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # not text: kept as it is
    return relative_paths(text).encode("utf-8")


def archived_files(run_dir):
    return sorted(
        p
        for p in Path(run_dir).iterdir()
        if p.is_file() and not p.is_symlink() and not p.name.endswith(SKIPPED_SUFFIXES)
    )


def marker_last(path):
    """Sort key: the done markers after every other file (of a run or of its archive)."""
    name = path.name.removesuffix(".gz")
    return (name in MARKERS, name)


def save(run_dir, archive_dir):
    """Copy RUN_DIR's plain files into ARCHIVE_DIR (written to a temporary folder, then renamed:
    an interrupted save never leaves half an archive that would restore as finished)."""
    run_dir, archive_dir = Path(run_dir), Path(archive_dir)
    if not run_dir.is_dir():
        raise ExperimentError(f"run-archive: no run folder {run_dir}")
    tmp = archive_dir.with_name(archive_dir.name + ".saving")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for src in archived_files(run_dir):
        data = _relative_bytes(src.read_bytes())  # relative paths only (see relative_paths)
        if len(data) > GZIP_OVER:
            write_gzip(tmp / (src.name + ".gz"), data)
        else:
            (tmp / src.name).write_bytes(data)
    keep = {p.name for p in tmp.iterdir()}
    if archive_dir.is_dir():  # sub-folders of an archive (other runs) stay
        for old in archive_dir.iterdir():
            if old.is_file() and old.name not in keep:
                old.unlink()
    archive_dir.mkdir(parents=True, exist_ok=True)
    # the done markers last: a save interrupted while moving never looks finished
    for p in sorted(tmp.iterdir(), key=marker_last):
        os.replace(p, archive_dir / p.name)
    tmp.rmdir()


def write_gzip(path, data):
    """DATA gzipped into PATH; mtime=0 and no file name: the same data gives the same bytes, so
    re-saving changes nothing in git."""
    with open(path, "wb") as f, gzip.GzipFile(filename="", fileobj=f, mode="wb", mtime=0) as g:
        g.write(data)


def relativize_archive(folder):
    """Rewrite every file under FOLDER (an archive) with relative paths (relative_paths), .gz
    files unpacked and packed again; returns the files changed."""
    changed = []
    for p in sorted(Path(folder).rglob("*")):
        if not p.is_file():
            continue
        raw = p.read_bytes()
        data = gzip.decompress(raw) if p.name.endswith(".gz") else raw
        new = _relative_bytes(data)
        if new != data:
            if p.name.endswith(".gz"):
                write_gzip(p, new)
            else:
                p.write_bytes(new)
            changed.append(p)
    return changed


def restore(archive_dir, run_dir):
    """Copy ARCHIVE_DIR's files into RUN_DIR (replacing files of the same name); returns whether
    the archive held any file."""
    archive_dir, run_dir = Path(archive_dir), Path(run_dir)
    files = [p for p in archive_dir.iterdir() if p.is_file()] if archive_dir.is_dir() else []
    if not files:
        return False
    run_dir.mkdir(parents=True, exist_ok=True)
    for p in sorted(files, key=marker_last):
        dest = run_dir / p.name.removesuffix(".gz")
        # a name of this process's own: the two processes of a study may restore a run at once
        tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
        if p.name.endswith(".gz"):
            with gzip.open(p, "rb") as g, open(tmp, "wb") as f:
                shutil.copyfileobj(g, f)
        else:
            shutil.copyfile(p, tmp)
        os.replace(tmp, dest)
    return True


def main(argv, prog="run-archive", usage="scripts/experiment.py run-archive"):
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if len(argv) != 3 or argv[0] not in ("save", "restore"):
        raise ExperimentError("usage: run-archive save|restore FROM TO (see --help)")
    if argv[0] == "save":
        save(argv[1], argv[2])
    elif not restore(argv[1], argv[2]):
        raise ExperimentError(f"run-archive: nothing archived in {argv[1]}")
    return 0
