"""Fuzzed records: every corruption ends in a clear error (InputError naming a field) or a replay
with no traceback, and never in an acceptance the exact rank contradicts: the base operators have
r_eps(A) = p exactly, so a proved lower end above p or a proved upper end below p after any
mutation of the operator-preserving kind would be a false acceptance; whatever the mutation, the
proved ends of one tolerance never cross.  1,000 records by default; 10,000 with ``-m slow``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_records import build_store, mutate, true_rank
from softrank.replay.engine import replay_record
from softrank.replay.reader import read_record
from softrank.errors import InputError

STATS = {"records": 0, "input_errors": 0, "replayed": 0}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    store = tmp_path_factory.mktemp("fuzz-base")
    return build_store(store), tmp_path_factory.mktemp("fuzz-cases")


def _operator_unchanged(original, record) -> bool:
    same = lambda a, b: (a is None and b is None) or (a is not None and b is not None and a.shape == b.shape  # noqa: E731
                                                      and np.array_equal(a, b))
    return (record.form == original.form and same(record.logits, original.logits)
            and same(record.queries, original.queries) and same(record.keys, original.keys)
            and record.scale == original.scale and same(record.bias, original.bias))


def _check_one(base, data) -> None:
    folders, work = base
    name = data.draw(st.sampled_from(sorted(folders)))
    STATS["records"] += 1
    dst = work / f"case-{STATS['records']}" / name
    label = mutate(folders[name], dst, lambda n: data.draw(st.integers(0, max(0, n - 1))))
    try:
        record = read_record(dst)
    except InputError as err:
        line = err.one_line()
        assert "\n" not in line and err.field is not None and len(line) < 2000, label
        STATS["input_errors"] += 1
        return
    result = replay_record(record)  # must not raise
    STATS["replayed"] += 1
    original = read_record(folders[name])
    for t in result.tolerances:
        if t.contradiction:
            raise AssertionError(f"{label}: {t.contradiction}")
        if name != "qk" and _operator_unchanged(original, record) and t.eps == original.tolerances[0].eps:
            p = true_rank(name)
            assert t.validated_lower <= p, f"{label}: proved r >= {t.validated_lower} but r = {p}"
            assert t.validated_upper is None or t.validated_upper >= p, f"{label}: proved r <= {t.validated_upper}"


@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_records(base, data):
    _check_one(base, data)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_records_slow(base, data):
    _check_one(base, data)


def test_the_fuzzing_reached_both_outcomes(base):
    """Runs after the fuzz test in this file: both errors and replays happened."""
    if STATS["records"] == 0:  # this test alone: run a few cases so it can still fail
        folders, work = base
        import random

        rng = random.Random(0)
        for i in range(200):
            name = sorted(folders)[i % len(folders)]
            STATS["records"] += 1
            dst = work / f"solo-{i}" / name
            mutate(folders[name], dst, lambda n: rng.randrange(max(1, n)))
            try:
                replay_record(read_record(dst))
                STATS["replayed"] += 1
            except InputError:
                STATS["input_errors"] += 1
    print(f"\nfuzzed records: {json.dumps(STATS)}")
    assert STATS["input_errors"] > 0 and STATS["replayed"] > 0


def test_the_uncorrupted_records_are_closed_exactly(base):
    """The reference the fuzz test leans on: without corruption, L = U = p is proved."""
    folders, _ = base
    for name in ("blocks2", "blocks3"):
        (t,) = replay_record(read_record(folders[name])).tolerances
        assert t.validated_lower == t.validated_upper == true_rank(name), (name, t)
