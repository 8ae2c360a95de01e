#!/usr/bin/env python3
"""Tables, learning curves and the specialisation figures of the Contextual Retrieval study;
`--help` for the usage. The logic is studies/retrieval_report.py."""

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from studies.retrieval_report import main

if __name__ == "__main__":
    main()
