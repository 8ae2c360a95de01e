"""What the Contextual Retrieval study's driver (scripts/study-retrieval.py) and its report
(studies/retrieval_report.py) share: the settings and the reading of its CSVs."""

import csv

# setting name -> (S*, R*): the ground-truth searches and retrievals of the task
SETTINGS = {"2x4": (2, 4), "4x8": (4, 8), "4x16": (4, 16)}


def read_rows(path):
    """The rows of the CSV at PATH as dicts; none if it does not exist yet."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))
