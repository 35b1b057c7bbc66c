"""A store on disk from Python: write records, read them back, iterate (docs/record-format.md).

Writing goes through the producer's ``RecordWriter`` (atomic: one rename per record); reading
through the checker's ``read_record``, which re-checks every field and hash.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

from softrank.api.records import Record
from softrank.replay import record as core
from softrank.replay.record import check_record
from softrank.errors import InputError


class Store:
    """``Store(path)``: a folder of records.  ``store.write(record)`` adds a record
    (``overwrite=True`` replaces one); ``for record in store`` reads each one (checked);
    ``store[record_id]``, ``len(store)``, ``record_id in store``, ``store.ids()``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def ids(self) -> list[str]:
        """Record ids, sorted (an absent folder is an empty store)."""
        from softrank.replay.reader import list_records

        if not (self.path / "records").is_dir():
            return []
        return [p.name for p in list_records(self.path)]

    def __len__(self) -> int:
        return len(self.ids())

    def __contains__(self, record_id: str) -> bool:
        return (self.path / "records" / record_id / "record.json").is_file()

    def __getitem__(self, record_id: str) -> Record:
        from softrank.replay.reader import read_record

        if record_id not in self:
            raise KeyError(record_id)
        return Record.from_record(read_record(self.path / "records" / record_id))

    def __iter__(self) -> Iterator[Record]:
        for record_id in self.ids():
            yield self[record_id]

    def write(self, record: core.Record, index: bool = True, overwrite: bool = False) -> str:
        """Write ``record`` (operator, A_hat, every tolerance) and, with ``index``, rewrite
        ``index.csv``; returns the record id.  A record already in the store under the same id is
        never replaced unless ``overwrite=True``: writing the same record again changes nothing,
        a different one is an ``InputError`` (one line) and the store keeps the old one.  A
        malformed record is an ``InputError`` naming the field (the store reader's
        ``check_record``, then the writer's own refusals), and nothing in the store is changed."""
        from softrank.fastpath.store.writer import RecordWriter, write_index

        check_record(record)
        try:
            with RecordWriter(self.path, record.record_id, dict(record.provenance), overwrite=overwrite,
                              support=record.support) as writer:
                if record.form == "logits":
                    writer.set_logits(record.logits)
                else:
                    writer.set_qk(record.queries, record.keys, record.scale, record.bias)
                writer.set_a_hat(record.a_hat)
                for tol in record.tolerances:
                    up, t = tol.upper, tol.tolerance
                    eps = t.binary64 if Fraction(t.binary64) == t.value else t  # a JSON number if binary64 holds it
                    writer.add_tolerance(
                        eps, upper=None if up is None else (up.X, up.Y, up.construction),
                        lower=[{"kind": c.kind, "lower": c.lower, **c.data} for c in tol.lower],
                        float64={"lower": tol.float64_lower, "upper": tol.float64_upper,
                                 "verdicts": {str(k): v for k, v in tol.float64_verdicts.items()}})
        except (ValueError, TypeError) as err:  # a refusal of the writer (its temporary folder is gone)
            raise InputError(record.record_id, "", f"cannot be written: {err}") from None
        if index:
            write_index(self.path)
        return record.record_id

    def write_all(self, records, overwrite: bool = False) -> list[str]:
        """Write several records, then ``index.csv`` once (``overwrite`` as for :meth:`write`;
        the records before a refused one are written)."""
        from softrank.fastpath.store.writer import write_index

        ids = [self.write(r, index=False, overwrite=overwrite) for r in records]
        write_index(self.path)
        return ids
