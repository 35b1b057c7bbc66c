"""Re-check of a branch-and-bound impossibility (kind ``branch-and-bound``): Fraction arithmetic
only, no solver.  proofs/oracle_branch_bound.md.

For every set J of k pivot columns the certificate holds a tree that splits the box of the free
entries of C (in [-1, 1]; B = Z C, C[:, J] = I) and of Z = B[:, J] (within eps of A[:, J]); each
leaf carries a Farkas vector for the relaxation rows that ``relaxation_rows`` builds here from
(A, eps, class, J, box).
The producer (``softrank.oracle.search.branch``) solves the same rows; the check rebuilds them itself.
"""

from __future__ import annotations

import itertools
import math

from softrank.exact.rational import ONE, ZERO
from softrank.oracle.check_basics import as_int, as_ints, as_rational

MAX_NODES = 200_000


def _z_bounds(a, eps, klass):
    lo, hi = a - eps, a + eps
    if klass == "stochastic":
        lo, hi = max(lo, ZERO), min(hi, ONE)
    return lo, hi


def _mccormick(w, z, c, zb, cb):
    """The four envelope rows of w = z c for z in [zl, zu], c in [L, U] (all as "<=")."""
    (zl, zu), (L, U) = zb, cb
    return [({c: zl, z: L, w: -1}, zl * L), ({c: zu, z: U, w: -1}, zu * U),
            ({w: 1, c: -zu, z: -L}, -zu * L), ({w: 1, c: -zl, z: -U}, -zl * U)]


def root_box(A, eps, klass, J):
    """The box every tree splits: free entries of C in [-1, 1], z_it within eps of a_{i, J_t}
    (and in [0, 1] in the stochastic class).  Keys ("c", t, l) and ("z", i, t)."""
    free = [l for l in range(len(A[0])) if l not in J]
    box = {("c", t, l): (-ONE, ONE) for t in range(len(J)) for l in free}
    box.update({("z", i, t): _z_bounds(A[i][J[t]], eps, klass) for i in range(len(A)) for t in range(len(J))})
    return box


def relaxation_rows(A, eps, klass, J, box):
    """Rows (coefs, rhs, is_equality) of the relaxation; "<=" unless is_equality.

    Variables: ("c", t, l) for the free entries of C, ("z", i, t) for Z = B[:, J], ("w", i, t, l)
    for the products z_it c_tl, ("e", i, l) for |a_il - b_il|.  ``box`` maps each ("c", t, l) and
    ("z", i, t) to its interval (L, U)."""
    m, N = len(A), len(A[0])
    free = [l for l in range(N) if l not in J]
    rows = []
    for key, (L, U) in sorted(box.items()):
        rows += [({key: 1}, U, False), ({key: -1}, -L, False)]
    for i in range(m):
        for t, l in itertools.product(range(len(J)), free):
            z, c = ("z", i, t), ("c", t, l)
            rows += [(co, r, False) for co, r in _mccormick(("w", i, t, l), z, c, box[z], box[c])]
        b = [{("z", i, J.index(l)): ONE} if l in J else {("w", i, t, l): ONE for t in range(len(J))}
             for l in range(N)]
        for l in range(N):
            rows.append(({**b[l], ("e", i, l): -1}, A[i][l], False))
            rows.append(({**{v: -x for v, x in b[l].items()}, ("e", i, l): -1}, -A[i][l], False))
            if klass == "stochastic":
                rows.append(({v: -x for v, x in b[l].items()}, ZERO, False))
        rows.append(({("e", i, l): 1 for l in range(N)}, eps, False))
        if klass == "stochastic":
            rows.append(({v: x for l in range(N) for v, x in b[l].items()}, ONE, True))
    return rows


def check_farkas_rows(rows, mult) -> bool:
    """sum_r y_r row_r = 0 in every variable and sum_r y_r rhs_r < 0, with y_r >= 0 on "<=" rows."""
    combo, rhs, seen = {}, ZERO, set()
    for idx, val in mult:
        r, y = as_int(idx), as_rational(val)
        if r in seen or not 0 <= r < len(rows):
            return False
        seen.add(r)
        coefs, b, eq = rows[r]
        if y < 0 and not eq:
            return False
        for v, x in coefs.items():
            combo[v] = combo.get(v, ZERO) + y * x
        rhs += y * b
    return rhs < 0 and all(x == 0 for x in combo.values())


def _tree_ok(A, eps, klass, J, tree) -> bool:
    stack, count = [(tree, root_box(A, eps, klass, J))], 0
    while stack:
        node, box = stack.pop()
        count += 1
        if count > MAX_NODES:
            return False
        if "y" in node:
            if not check_farkas_rows(relaxation_rows(A, eps, klass, J, box), node["y"]):
                return False
            continue
        name, a, b, at = node["split"]
        key = (str(name), as_int(a), as_int(b))
        at = as_rational(at)
        L, U = box[key]  # KeyError for a coordinate outside the box: rejected
        if not L < at < U:
            return False
        stack.append((node["low"], {**box, key: (L, at)}))
        stack.append((node["high"], {**box, key: (at, U)}))
    return True


def check_branch(A, eps, cert, k, klass) -> bool:
    """Every k'-subset J of the columns (k <= k' < N) has a refuted tree; the relaxation's class
    must be the cell's or the unrestricted one."""
    N = len(A[0])
    inner = cert["class"]
    if inner not in ("unrestricted", "stochastic") or (inner == "stochastic" and klass != "stochastic"):
        return False
    trees = {tuple(as_ints(entry["columns"])): entry["tree"] for entry in cert["trees"]}
    sizes = {len(J) for J in trees}
    if len(sizes) != 1:
        return False
    size = sizes.pop()
    if not k <= size < N or any(len(set(J)) != size for J in trees):
        return False
    # every size-subset of the columns has a tree: the distinct increasing keys inside range(N)
    # are counted against C(N, size), never listed (a small certificate could name a huge count)
    want = sorted(J for J in trees if all(a < b for a, b in zip((-1, *J), (*J, N))))  # 0 <= J_1 < ... < N
    if len(want) != math.comb(N, size):
        return False
    return all(_tree_ok(A, eps, inner, list(J), trees[J]) for J in want)
