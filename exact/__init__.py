"""Rational arithmetic and the exact checks of LP certificates (trusted core).

- ``softrank.exact.rational``: the one door from binary64 (``from_binary64``), exact parsing,
  Fraction matrices, FLINT rank and rank factorisation, and the exact ``ZERO`` and ``ONE``.
- ``softrank.exact.lp``: the LP form and the checks of an LP answer's certificate in rationals
  (``check_optimal``, ``check_farkas``, ``check_unbounded``, ``check_result``).  Nothing here solves
  an LP: the solve, where HiGHS proposes a basis and an exact simplex is the fallback (both
  advisors), is ``softrank.oracle.search.lp`` (untrusted), and it returns only checked answers.
Proofs: proofs/exact_rationals.md, proofs/exact_lp_verification.md.
"""
