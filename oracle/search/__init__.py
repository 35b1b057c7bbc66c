"""The oracle's search (untrusted): decisions, profiles and thresholds of small rational cells.

Public API::

    from softrank.oracle.search import decide, profile, thresholds
    v = decide(A, eps, k, klass="unrestricted")   # Verdict: .verdict, .certificate, .recheck()
    lower, upper, rank, thresholds = profile(A, eps)

``A`` is a list of rows of ``fractions.Fraction`` (ints and "p/q" strings are read exactly) or a
FLINT ``fmpq_mat``; ``eps`` a rational > 0.  Everything here only proposes: the witness search,
the LPs (HiGHS through ``softrank.advisors``, checked exactly), decoders, sub-cells, nerve cycles,
branch and bound.  ``decide`` hands out a verdict only after the trusted re-check
(``softrank.oracle.recheck``) has accepted its certificate.  See docs/oracle.md.
"""

from softrank.oracle.search.cell import CertificateRejected
from softrank.oracle.search.core import Profile, Verdict, decide, profile, thresholds

__all__ = ["CertificateRejected", "Profile", "Verdict", "decide", "profile", "thresholds"]
