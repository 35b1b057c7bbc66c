"""The capture's public face for the Python API (``softrank.capture``, ``api/capturing.py``): live
capture from a model the caller runs, and the operators, provenance and record ids of what was
captured.  The front ends import the capture through this module, ``extract.py`` (extraction into
a store), ``labels.py`` and ``panels.py`` only (``PRODUCER_PUBLIC`` in
``tests/repository/test_layering.py``); the modules named here stay free to change inside.
Importing it imports torch."""

from __future__ import annotations

from softrank.fastpath.capture.dispatch import CaptureWarning, capturing, input_digest
from softrank.fastpath.capture.locate import tag_of
from softrank.fastpath.capture.names import ModuleNames
from softrank.fastpath.capture.operators import OPERATOR_KINDS, Refusal, operators_for, provenance, record_id
from softrank.fastpath.capture.session import link_cross_queries, valid_positions


def model_tag(model_name: str) -> str:
    """The short tag of a model's name that record ids begin with."""
    return tag_of(model_name)


__all__ = ["OPERATOR_KINDS", "CaptureWarning", "ModuleNames", "Refusal", "capturing", "input_digest", "link_cross_queries", "model_tag", "operators_for",
           "provenance", "record_id", "valid_positions"]
