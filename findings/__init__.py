"""The results room: what SoftRank makes of a replay, between the trusted core and the front ends.

- ``replay_job``: the replay of a store (``ReplayJob``, ``replay_store``) and its ``ReplaySummary``;
- ``replay_rows`` (typed row dataclasses, the schema derived from them), ``replay_table`` (the
  tables read back and checked), ``tables`` (parquet and CSV written atomically);
- ``regress``, ``regress_baseline``: float64 versus validated verdicts, and baselines;
- ``report`` and ``report_page``, ``report_figures``, ``report_constructions``,
  ``report_research``: the self-contained HTML report.

The command line (``softrank.cli``) and the Python API (``softrank.api``) both stand on these
modules; nothing here imports either of them, and nothing here decides a verdict: the verdicts are
the trusted replay engine's (``softrank.replay.engine``).
"""
