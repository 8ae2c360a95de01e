#!/usr/bin/env python3
"""Retrieval specialisation of a compositional Contextual Retrieval model (Mittal et al.,
Figure 11); `--help` for the usage. The logic is fairseq_plugins/analysis/retrieval_specialisation.py."""

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from fairseq_plugins.analysis.retrieval_specialisation import main

if __name__ == "__main__":
    main()
