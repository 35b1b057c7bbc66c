"""Re-check of a nerve-cycle certificate (kind ``nerve-cycle``): no B of rank <= d within eps, from
a mod-2 cycle of signed row simplices.  proofs/oracle_nerve_cycle.md.

A signed row simplex is ``rows`` r_0 < ... < r_d with ``signs`` s_0 = +1, s_1, ..., s_d in {+1, -1}
and a point ``y`` (N rationals) with ``s_l (a_{r_l} . y) > eps ||y||_inf`` for every l.  The
certificate lists distinct simplices of one dimension d.  It proves the cell impossible at every
rank k <= d when

- every face (drop one vertex; if the first is dropped, flip all signs so the new first is +1)
  occurs an even number of times over the list (the list is a mod-2 cycle), and
- an odd number of the simplices have alternating signs (s_l != s_{l-1} for every l).

Fraction arithmetic only; nothing about how the simplices were found is assumed.
"""

from __future__ import annotations

from collections import Counter

from softrank.oracle.check_basics import as_ints, as_vector, dot


def face(rows: tuple, signs: tuple, j: int) -> tuple:
    """The face without vertex j, signs flipped when the first is dropped (so its first is +1)."""
    fr, fs = rows[:j] + rows[j + 1:], signs[:j] + signs[j + 1:]
    if fs[0] < 0:
        fs = tuple(-s for s in fs)
    return fr, fs


def checked_simplex(A, eps, item, m: int, N: int) -> tuple | None:
    """(rows, signs) of a well-formed simplex whose point lies in all its signed row cones, else None."""
    rows = tuple(as_ints(item["rows"]))
    signs = tuple(as_ints(item["signs"]))
    if not rows or len(rows) != len(signs) or signs[0] != 1 or any(s not in (1, -1) for s in signs):
        return None
    if any(not 0 <= r < m for r in rows) or any(a >= b for a, b in zip(rows, rows[1:])):
        return None
    y = as_vector(item["y"], N)
    bound = eps * max(abs(x) for x in y)
    if not all(s * dot(A[r], y) > bound for r, s in zip(rows, signs)):
        return None
    return rows, signs


def check_nerve_cycle(A, eps, cert, k, klass) -> bool:
    """The listed simplices are well formed, lie in their cones, have dimension d >= k, form a
    mod-2 cycle, and an odd number of them alternate in sign.  proofs/oracle_nerve_cycle.md."""
    m, N = len(A), len(A[0])
    items = cert["simplices"]
    if not isinstance(items, list) or not items or eps <= 0:
        return False
    simplices = []
    for item in items:
        s = checked_simplex(A, eps, item, m, N)
        if s is None:
            return False
        simplices.append(s)
    d = len(simplices[0][0]) - 1
    if d < max(k, 1) or any(len(r) != d + 1 for r, _ in simplices) or len(set(simplices)) != len(simplices):
        return False
    faces = Counter(face(r, s, j) for r, s in simplices for j in range(d + 1))
    if any(c % 2 for c in faces.values()):
        return False
    alternating = sum(all(a != b for a, b in zip(s, s[1:])) for _, s in simplices)
    return alternating % 2 == 1
