"""Exact decisions for small rational cells: the trusted re-checkers, and the exactly closed families.

Trusted here (Fraction arithmetic only, no solver, no advisor)::

    from softrank.oracle import recheck, check_threshold
    recheck(A, eps, k, klass, verdict, certificate)   # True iff the certificate proves the verdict
    check_threshold(A, threshold_certificate)         # an exact eps*_k with its certificate

The search that finds verdicts and certificates (``decide``, ``profile``, ``thresholds``) is
``softrank.oracle.search`` (untrusted: it re-checks every certificate with ``recheck`` before it
answers).  See docs/oracle.md and proofs/oracle_*.md.
"""

from softrank.oracle.checks import recheck
from softrank.oracle.threshold_checks import check_threshold

__all__ = ["check_threshold", "recheck"]
