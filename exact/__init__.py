"""Rational arithmetic and exact linear programming (trusted core: the ``check_*`` functions).

- ``softrank.exact.rational``: the one door from binary64 (``from_binary64``), exact parsing,
  Fraction matrices, FLINT rank and rank factorisation.
- ``softrank.exact.lp``: LPs whose answers carry certificates checked in rationals
  (``solve``, ``feasibility``, ``check_optimal``, ``check_farkas``); HiGHS only proposes a basis
  (``softrank.advisors.highs``), an exact simplex is the fallback (``softrank.advisors.simplex``).
Proofs: proofs/exact_rationals.md, proofs/exact_lp_verification.md.
"""
