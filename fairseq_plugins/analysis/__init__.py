"""Analyses of trained models that need the plugin (torch, fairseq), not registered with fairseq:
the retrieval specialisation of a compositional Contextual Retrieval model (its command line is
``scripts/retrieval-specialisation.py``; the study's report, ``studies/retrieval_report.py``,
reads it)."""
