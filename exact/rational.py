"""Rational scalars and matrices: the one door from binary64, parsing, and exact matrix helpers.

Matrices are lists of rows of ``fractions.Fraction`` (small, easy to audit); FLINT's ``fmpq_mat``
is used where speed matters (products, linear solves, rank, rank factorisation) and converts both ways
exactly.  Proof of the conversions: ``proofs/exact_rationals.md``.
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mat

from softrank.errors import InputError
from softrank.exact.scalar import (MAX_DIGITS, MAX_EXPONENT, ONE, SIZE_LIMIT, ZERO, _shown,  # noqa: F401  (re-exported)
                                   from_binary64, parse_rational)

Matrix = list[list[Fraction]]

def as_matrix(A, where: str = "input", field: str = "matrix") -> Matrix:
    """A validated rectangular, non-empty rational matrix (a new list of lists of Fraction).

    ``A`` may be a list of rows of anything :func:`parse_rational` accepts, or an ``fmpq_mat``.
    """
    if isinstance(A, fmpq_mat):
        return from_fmpq_mat(A)
    if not isinstance(A, (list, tuple)) or len(A) == 0:
        raise InputError(where, field, "expected a non-empty list of rows")
    rows: Matrix = []
    width = None
    for i, row in enumerate(A):
        if not isinstance(row, (list, tuple)) or len(row) == 0:
            raise InputError(where, field, f"row {i} is not a non-empty list")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise InputError(where, field, f"ragged rows: row 0 has {width} entries, row {i} has {len(row)}")
        rows.append([parse_rational(x, where, f"{field}[{i}][{j}]") for j, x in enumerate(row)])
    return rows


TEXT_BITS = 13_000  # numerator or denominator longer than this (about 3,900 digits) has no text form here


class TooLongForText(ArithmeticError):
    """An exact value whose numerator or denominator is too long to be written as certificate text."""


def fmt(q: Fraction) -> str:
    """Canonical text of a rational: ``"3/7"``, ``"-2"``; ``TooLongForText`` beyond ``TEXT_BITS``
    bits (a certificate reader refuses such text, and Python's int-to-text limit is 4,300 digits)."""
    q = Fraction(q)
    if q.numerator.bit_length() > TEXT_BITS or q.denominator.bit_length() > TEXT_BITS:
        raise TooLongForText(f"an exact value with about {max(q.numerator.bit_length(), q.denominator.bit_length()) * 3 // 10:,} "
                             "digits, too long for certificate text")
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def fmt_vec(v) -> list[str]:
    return [fmt(x) for x in v]


def fmt_mat(M) -> list[list[str]]:
    return [fmt_vec(r) for r in M]


def parse_vec(v, where: str = "certificate", field: str = "") -> list[Fraction]:
    if not isinstance(v, (list, tuple)):
        raise InputError(where, field, "expected a list")
    return [parse_rational(x, where, field) for x in v]


# ---------------------------------------------------------------- FLINT conversions

def to_fraction(q: fmpq) -> Fraction:
    return Fraction(int(q.p), int(q.q))


def to_fmpq_mat(M) -> fmpq_mat:
    m = len(M)
    n = len(M[0]) if m else 0
    return fmpq_mat(m, n, [fmpq(x.numerator, x.denominator) for row in M for x in row])


def from_fmpq_mat(M: fmpq_mat) -> Matrix:
    return [[to_fraction(M[i, j]) for j in range(M.ncols())] for i in range(M.nrows())]


# ---------------------------------------------------------------- exact helpers (Fraction only)

def row_l1(row) -> Fraction:
    return sum((abs(x) for x in row), ZERO)


def inf_norm(M) -> Fraction:
    """``||M||_inf``: the largest row l1 norm."""
    return max(row_l1(r) for r in M)


def sub(A, B) -> Matrix:
    return [[a - b for a, b in zip(ra, rb)] for ra, rb in zip(A, B)]


def matmul(A, B) -> Matrix:
    """The exact product (FLINT ``fmpq_mat`` multiplication, converted both ways exactly)."""
    if not A or not B or not B[0]:
        return [[ZERO] * (len(B[0]) if B else 0) for _ in A]
    return from_fmpq_mat(to_fmpq_mat(A) * to_fmpq_mat(B))


def matvec(A, v) -> list[Fraction]:
    return [sum((a * x for a, x in zip(row, v)), ZERO) for row in A]


def transpose(A) -> Matrix:
    return [list(c) for c in zip(*A)]


def dot(u, v) -> Fraction:
    return sum((a * b for a, b in zip(u, v)), ZERO)


# ---------------------------------------------------------------- rank (FLINT)

def rank(A) -> int:
    """The exact rank over Q."""
    return int(to_fmpq_mat(A).rank())


def rank_factor(A) -> tuple[Matrix, Matrix]:
    """Exact rank factorisation ``A = X Y^T`` with ``X`` (m x r), ``Y`` (N x r), r = rank(A).

    ``X`` is the pivot columns of A and ``Y^T`` the non-zero rows of the reduced row echelon form.
    For r = 0 both factors have zero columns.  The product is re-checked exactly here.
    """
    m, n = len(A), len(A[0])
    R, r = to_fmpq_mat(A).rref()
    R = from_fmpq_mat(R)
    pivots = []
    for i in range(r):
        j = next(j for j in range(n) if R[i][j] != 0)
        pivots.append(j)
    X = [[A[i][j] for j in pivots] for i in range(m)]
    Y = [[R[t][j] for t in range(r)] for j in range(n)]
    prod = matmul(X, transpose(Y)) if r else [[ZERO] * n for _ in range(m)]
    if prod != [list(row) for row in A]:  # pragma: no cover - FLINT rref is exact
        raise ArithmeticError("rank factorisation does not reproduce A")
    return X, Y
