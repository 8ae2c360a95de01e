"""The experiment drivers: one command-line program with subcommands (``python -m studies``
or ``scripts/experiment.py``).

- :mod:`.compgen_run`: ``compgen-run``, one preset on one compositional-generalization task, per
  seed (scripts/compgen-run.sh);
- :mod:`.cogs_tagging_run`: ``cogs-tagging-run``, COGS as sequence tagging, per seed
  (scripts/cogs-tagging-run.sh);
- :mod:`.grid`: ``grid`` (the short-budget grid and the paper-budget grid, scripts/compgen-grid.sh;
  the plan is :mod:`.grid_plan`);
- :mod:`.paper_variants`: ``paper-variants``, one factor of a paper-budget row at a time
  (scripts/paper-variants.sh);
- :mod:`.nmt_compare` and :mod:`.lm_compare`: ``compare-nmt`` and ``compare-lm``, the comparison
  pipelines (scripts/compare-{nmt,lm}.sh; what they share is :mod:`.compare`);
- :mod:`.studies`: ``study-nmt`` and ``study-lm`` (scripts/study-{nmt,lm}.sh: data once, then the
  comparison pipeline :mod:`.nmt_compare`; the LM study is :mod:`.lm_study`, its statistics
  and rules :mod:`.study_stats`);
- :mod:`.grid_report` and :mod:`.study_report`: ``report compgen`` and ``report nmt|lm``
  (scripts/compgen-grid-report.py, scripts/study-report.py); :mod:`.cli` dispatches.

What every driver repeats (one-line usage errors, seeds, the resume state of a run folder, locks,
the time pieces of a resumed run, the results CSV, atomic data preparation) is one tested layer,
:mod:`.runs`. The drivers call fairseq's command-line tools and the pipeline scripts as
subprocesses; nothing here imports torch or fairseq.
"""
