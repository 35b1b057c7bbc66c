"""Nonlinear conjugate gradients for the smoothed decoder objective (untrusted, float64).

``minimize_cg(fun, x0, maxiter)`` is the algorithm of ``scipy.optimize.minimize(fun, x0, jac=True,
method="CG")`` step for step: Polak-Ribiere-Powell directions with the descent safeguard, scipy's
own Wolfe line search (MINPACK's dcsrch, falling back to the Wolfe-2 search), the same constants
and the same stopping rule, so it visits the same points and returns the same x.  It skips the
general bookkeeping of ``minimize`` (the scalar-function wrapper and its per-evaluation checks),
which costs as much as the objective itself on the small problems of decoder growth (p x N
variables, p up to ~100).  ``tests/fastpath/test_conjugate_gradients.py`` checks that both give
the same x bit for bit.  Where scipy's line-search module is not importable, ``minimize`` runs.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
from scipy.optimize import line_search as _wolfe2_line_search
from scipy.optimize import minimize

try:  # the scalar Wolfe-1 search scipy's CG uses first (module-level function of scipy.optimize)
    from scipy.optimize._linesearch import LineSearchWarning, scalar_search_wolfe1
except ImportError:  # pragma: no cover - a scipy without it: the general routine
    scalar_search_wolfe1 = None

GTOL, C1, C2, SIGMA_3 = 1e-5, 1e-4, 0.4, 0.01  # scipy's CG defaults (gradient sup norm; Wolfe; descent)


class _Memo:
    """``fun(x) -> (f, g)`` evaluated once per point; ``value`` and ``grad`` read the cache.  The
    points are kept by reference (every point here is a fresh array, never modified afterwards),
    so the same array object is recognised without comparing its entries."""

    def __init__(self, fun: Callable):
        self.fun, self.x, self.f, self.g = fun, None, 0.0, None

    def _at(self, x: np.ndarray) -> None:
        if x is not self.x and (self.x is None or not np.array_equal(x, self.x)):
            f, g = self.fun(x)
            self.x, self.f, self.g = x, float(f), g

    def value(self, x):
        self._at(x)
        return self.f

    def grad(self, x):
        self._at(x)
        return self.g


class _Points:
    """The points ``xk + s pk`` of one line search, each computed once per step s (the same
    arithmetic, so the same array as recomputing it)."""

    def __init__(self, xk: np.ndarray, pk: np.ndarray):
        self.xk, self.pk, self.known = xk, pk, {}

    def __call__(self, s) -> np.ndarray:
        x = self.known.get(s)
        if x is None:
            x = self.known[s] = self.xk + s * self.pk
        return x


def _line_search(memo: _Memo, point: _Points, xk, pk, gfk, old_fval, old_old_fval, extra):
    """scipy's CG line search: Wolfe-1 (dcsrch) with the extra descent condition, else Wolfe-2."""
    gval = [gfk]

    def phi(s):
        return memo.value(point(s))

    def derphi(s):
        gval[0] = memo.grad(point(s))
        return np.dot(gval[0], pk)

    stp, fval, old = scalar_search_wolfe1(phi, derphi, old_fval, old_old_fval, np.dot(gfk, pk),
                                          c1=C1, c2=C2, amax=1e100, amin=1e-100, xtol=1e-14)
    if stp is not None and not extra(stp, point(stp), fval, gval[0]):
        stp = None
    if stp is not None:
        return stp, fval, old, gval[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LineSearchWarning)
        ret = _wolfe2_line_search(memo.value, memo.grad, xk, pk, gfk, old_fval, old_old_fval, c1=C1, c2=C2,
                                  amax=1e100, extra_condition=extra)
    return None if ret[0] is None else (ret[0], ret[3], ret[4], ret[5])


def minimize_cg(fun: Callable, x0: np.ndarray, maxiter: int, stall: tuple[int, float] | None = None,
                stop: Callable[[int, np.ndarray], bool] | None = None) -> np.ndarray:
    """The x of ``scipy.optimize.minimize(fun, x0, jac=True, method="CG", options={"maxiter": ...})``.
    ``stall=(window, tol)`` adds a stopping rule of its own (then the result is no longer scipy's):
    stop once the value fell by less than ``tol`` over the last ``window`` iterations.  ``stop(k,
    xk)``, asked after each iteration k >= 1, ends the run at xk when it returns True."""
    if scalar_search_wolfe1 is None:  # pragma: no cover (``stall`` only saves time: scipy's CG runs whole)
        return minimize(fun, x0, jac=True, method="CG", options={"maxiter": maxiter}).x
    memo = _Memo(fun)
    xk = np.asarray(x0, dtype=np.float64).flatten()
    old_fval = memo.value(xk)
    gfk = memo.grad(xk)
    old_old_fval = old_fval + np.linalg.norm(gfk) / 2
    pk, gnorm, k = -gfk, np.amax(np.abs(gfk)), 0
    values = [old_fval]  # the value after each iteration (for ``stall``)
    while gnorm > GTOL and k < maxiter:
        if stall is not None and k >= stall[0] and values[k - stall[0]] - values[k] < stall[1]:
            break
        deltak = np.dot(gfk, gfk)
        cached = [None]
        point = _Points(xk, pk)

        def pr_step(alpha, gfkp1, xkp1, pk=pk, gfk=gfk, deltak=deltak):
            beta = max(0, np.dot(gfkp1 - gfk, gfkp1) / deltak)
            return alpha, xkp1, -gfkp1 + beta * pk, gfkp1, np.amax(np.abs(gfkp1))

        def descent(alpha, xkp1, fp1, gfkp1):
            cached[0] = pr_step(alpha, gfkp1 if gfkp1 is not None else memo.grad(xkp1), xkp1)
            _, _, p1, g1, gn1 = cached[0]
            return gn1 <= GTOL or np.dot(p1, g1) <= -SIGMA_3 * np.dot(g1, g1)

        found = _line_search(memo, point, xk, pk, gfk, old_fval, old_old_fval, descent)
        if found is None:
            break
        alpha, old_fval, old_old_fval, gfkp1 = found
        if cached[0] is not None and alpha == cached[0][0]:
            _, xk, pk, gfk, gnorm = cached[0]
        else:
            xkp1 = point(alpha)
            _, xk, pk, gfk, gnorm = pr_step(alpha, gfkp1 if gfkp1 is not None else memo.grad(xkp1), xkp1)
        values.append(old_fval)
        k += 1
        if stop is not None and stop(k, xk):
            break
    return xk
