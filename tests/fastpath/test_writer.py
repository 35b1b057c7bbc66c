"""The producer's record writer and atomic file helpers: checks at write time, nothing left
behind on an error, and files that follow the umask (a colleague can read a shared store)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from softrank.fastpath.files import write_csv
from softrank.fastpath.writer import RecordWriter, write_index
from softrank.replay.reader import list_records


def softmax64(h):
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_writer_checks_at_write_time_and_leaves_nothing_on_error(tmp_path):
    h = np.zeros((3, 3))
    with pytest.raises(ValueError, match="non-finite"):
        with RecordWriter(tmp_path, "bad", {}) as w:
            w.set_logits(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="disagrees"):
        with RecordWriter(tmp_path, "bad", {}) as w:
            w.set_logits(h)
            w.set_a_hat(np.full((3, 4), 0.25))
    with pytest.raises(ValueError, match="do not fit"):
        with RecordWriter(tmp_path, "bad", {}) as w:
            w.set_logits(h)
            w.set_a_hat(softmax64(h))
            w.add_tolerance(0.25, upper=(np.zeros((3, 1)), np.zeros((4, 1)), "x"))
    with pytest.raises(ValueError, match="needs an operator"):
        with RecordWriter(tmp_path, "bad", {}):
            pass
    assert list((tmp_path / "records").iterdir()) == []  # no temporary folder, no record
    with RecordWriter(tmp_path, "good", {}) as w:
        w.set_logits(h)
        w.set_a_hat(softmax64(h))
    assert [p.name for p in list_records(tmp_path)] == ["good"]


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_written_files_follow_the_umask(tmp_path, mask, file_mode, dir_mode):
    old = os.umask(mask)
    try:
        h = np.zeros((2, 2))
        with RecordWriter(tmp_path, "r", {}) as w:
            w.set_logits(h)
            w.set_a_hat(softmax64(h))
        write_index(tmp_path)
        write_csv(tmp_path / "t.csv", [{"a": 1}])
    finally:
        os.umask(old)
    folder = tmp_path / "records" / "r"
    for path, want in [(folder, dir_mode), (folder / "arrays", dir_mode), (folder / "record.json", file_mode),
                       (folder / "arrays" / "a_hat.npy", file_mode), (tmp_path / "index.csv", file_mode),
                       (tmp_path / "t.csv", file_mode)]:
        assert stat.S_IMODE(path.stat().st_mode) == want, path
