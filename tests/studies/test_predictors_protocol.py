"""``softrank.studies.predictors.protocol``: the study runs only under its frozen protocol file (the
repository's, whose hash the code records), and refuses a changed, missing or unreadable one on
one line naming the file."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from softrank.errors import InputError
from softrank.studies.predictors import protocol as P


def test_the_repository_protocol_is_the_frozen_one():
    got = P.check_protocol()
    assert got["matches"] and got["sha256"] == P.PROTOCOL_SHA256
    assert hashlib.sha256(P.PROTOCOL_PATH.read_bytes()).hexdigest() == P.PROTOCOL_SHA256


def test_settings_are_the_protocols():
    text = P.PROTOCOL_PATH.read_text(encoding="utf-8")
    assert "eps = 1/4" in text and P.EPS == 0.25
    assert "2,000 resamples" in text and P.BOOTSTRAP == 2000
    assert "[-0.10, +0.10]" in text and P.BAND == 0.10
    assert "288 operators per family and panel" in text and P.SUBSET_PER_FAMILY == 288
    for block, base in P.COMPARISONS:
        assert f"{block.replace('+', ' + ')} over {base}" in text


@pytest.mark.parametrize("change", [
    lambda b: b.replace(b"+0.10", b"+0.20"),  # a looser decision band
    lambda b: b + b"\n",  # one byte more
    lambda b: b[:-1],  # one byte less
])
def test_a_changed_protocol_is_refused(tmp_path, change):
    path = tmp_path / "protocol.md"
    path.write_bytes(change(P.PROTOCOL_PATH.read_bytes()))
    with pytest.raises(InputError) as err:
        P.check_protocol(path)
    assert str(path) in str(err.value) and "protocol changed" in str(err.value)


def test_a_missing_or_unreadable_protocol_is_refused(tmp_path):
    with pytest.raises(InputError, match="not found"):
        P.check_protocol(tmp_path / "absent.md")
    with pytest.raises(InputError, match="not found"):
        P.check_protocol(tmp_path)  # a folder


def test_the_command_refuses_before_reading_anything(tmp_path):
    bad = tmp_path / "protocol.md"
    bad.write_bytes(P.PROTOCOL_PATH.read_bytes().replace(b"seed 0", b"seed 1"))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "softrank", "study", "predictors", "--main", str(tmp_path / "nope"),
                           "--heldout", str(tmp_path / "nope"), "--out", str(out), "--protocol", str(bad)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and str(bad) in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()  # nothing written
