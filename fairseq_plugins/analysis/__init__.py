"""Analyses of trained models that need the plugin (torch, fairseq), not registered with fairseq:
the retrieval specialisation of a compositional Contextual Retrieval model and the report of the
Contextual Retrieval study. Their command lines are ``scripts/retrieval-specialisation.py`` and
``scripts/study-retrieval-report.py`` (also ``scripts/study-retrieval.py report``)."""
