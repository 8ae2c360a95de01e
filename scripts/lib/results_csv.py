"""The run scripts' results CSV (scripts/compgen-run.sh, scripts/cogs-tagging-run.sh): append rows
under a header, upgrading a CSV written before newer columns existed.

Pure Python (no torch, no fairseq); the run scripts' inline steps import it from scripts/lib.
"""

import csv
import os


class HeaderError(Exception):
    pass


def append_rows(path, header, rows):
    """Append ROWS (lists of cells) to the CSV at PATH under HEADER. A new or empty file gets the
    header first. A file whose header is a prefix of HEADER (written before the later columns
    existed) is first rewritten, atomically, with the new header and those columns empty; any
    other header raises HeaderError."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    if not new:
        with open(path, newline="") as f:
            old = list(csv.reader(f))
        if old[0] != header:
            if old[0] != header[: len(old[0])]:
                raise HeaderError(
                    f"{path}: header {','.join(old[0])} is not the expected {','.join(header)}"
                )
            tmp = path + ".tmp"
            with open(tmp, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(header)
                for r in old[1:]:
                    w.writerow(r + [""] * (len(header) - len(r)))
            os.replace(tmp, path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        w.writerows(rows)
