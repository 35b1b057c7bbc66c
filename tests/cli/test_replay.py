"""``softrank replay``'s command line: when the progress bar is drawn."""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from softrank.cli.replay import configure, progress_shown


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("flags, shown", [([], True), (["--quiet"], False), (["--no-progress"], False),
                                          (["--quiet", "--no-progress"], False)])
def test_progress_bar_only_on_a_terminal_without_quiet_or_no_progress(flags, shown, monkeypatch):
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["STORE", *flags])
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress_shown(args) is shown
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: never drawn
    assert progress_shown(args) is False
