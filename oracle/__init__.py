"""Exact decisions for small rational cells, and the profile of exact thresholds.

Public API::

    from softrank.oracle import decide, profile, recheck
    v = decide(A, eps, k, klass="unrestricted")   # Verdict: .verdict, .certificate, .recheck()
    lower, upper, rank, thresholds = profile(A, eps)

``A`` is a list of rows of ``fractions.Fraction`` (ints and "p/q" strings are read exactly) or a
FLINT ``fmpq_mat``; ``eps`` a rational > 0.  See docs/oracle.md and proofs/oracle_*.md.
"""

from softrank.oracle.checks import recheck
from softrank.oracle.core import (
    CertificateRejected,
    Profile,
    Verdict,
    decide,
    profile,
    thresholds,
)
from softrank.oracle.threshold_checks import check_threshold

__all__ = ["CertificateRejected", "Profile", "Verdict", "check_threshold", "decide", "profile", "recheck",
           "thresholds"]
