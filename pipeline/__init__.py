"""The pipeline of ``softrank run`` (``softrank.pipeline.run``): extract, bracket and replay as
peer jobs on the one runner (``softrank.fastpath.runner``), one journal scheme under
``OUT/.partial/``, one run per output folder (``OUT/.lock``), faults stopped in one line, and the
summary table.  Above the producer and the replay job, below the command line."""
