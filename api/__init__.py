"""SoftRank from Python (producer side; docs/python.md).

``Record`` (in-memory records: ``from_logits``, ``from_qk``, ``with_upper``), ``bracket``
(untrusted float64 brackets), ``validate`` (the trusted replay of one record), ``Store`` (records
on disk), ``capture`` (attention of a transformers model, in a ``with`` block), ``results`` (the
validated results of many records as one table, ``Results``) and ``report`` (the HTML page).  Only
``capture`` needs torch.
"""

from softrank.api.capturing import Captured, capture
from softrank.api.checks import (
           ValidatedTolerance,
           Validation,
           bracket,
           check_record,
           validate,
)
from softrank.api.lens import records_from_cache
from softrank.api.records import Record
from softrank.api.results import Results, report, results
from softrank.api.store import Store

__all__ = ["Captured", "Record", "Results", "Store", "ValidatedTolerance", "Validation", "bracket", "capture",
           "check_record", "records_from_cache", "report", "results", "validate"]
