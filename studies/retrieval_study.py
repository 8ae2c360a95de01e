"""What the Contextual Retrieval study's driver (scripts/study-retrieval.py) and its report
(studies/retrieval_report.py) share: the settings (its
CSVs are read with ``runs.read_rows``, as every study's)."""

# setting name -> (S*, R*): the ground-truth searches and retrievals of the task
SETTINGS = {"2x4": (2, 4), "4x8": (4, 8), "4x16": (4, 16)}
