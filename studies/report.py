"""`report`: `report compgen [options]` renders the compgen grid (grid_report.py, also
scripts/compgen-grid-report.py); `report nmt|lm OUT --doc FILE [--smoke]` writes a study's
results document (study_report.py, also scripts/study-report.py)."""

from . import grid_report, study_report
from .runs import ExperimentError

USAGE = """\
Usage: {usage} compgen [options]
       {usage} nmt|lm OUT --doc FILE [--smoke]

compgen: the compgen grid's report (options: `compgen --help`); nmt, lm: a study's results
document from the outputs of scripts/compare-nmt.sh / compare-lm.sh (`nmt --help`).
"""


def main(argv, prog="report", usage="scripts/experiment.py report"):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE.format(usage=usage), end="")
        return 0
    if argv[0] == "compgen":
        return grid_report.main(argv[1:], prog=prog)
    if argv[0] in ("nmt", "lm"):
        return study_report.main(argv, prog=prog)
    raise ExperimentError(f"unknown report {argv[0]}: choose compgen, nmt or lm")
