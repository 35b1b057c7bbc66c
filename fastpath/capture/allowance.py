"""The rounding allowance of a float32 capture check (docs/extraction.md, "The capture's check").

A record of form ``qk`` holds the model's own float32 queries and keys; its logits
``H = scale * Q K^T (+ bias)`` are evaluated in float64, so they are exact up to ~1e-16 relative,
while the model evaluated them in float32.  By the standard dot-product error bound (Higham,
*Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 3.1: ``|fl(x.y) - x.y| <=
gamma_d |x|.|y|`` with ``gamma_n = n u / (1 - n u)``, ``u = 2^-24``, whatever the summation order;
a wider accumulator only lowers it) and lemma 3.3 (``(1 + theta_k)(1 + theta_j) = 1 + theta_{k+j}``),
the model's logit of query i and key j is within

    delta_ij = gamma_{d+3} * |scale| * sum_k |q_ik| |k_jk|  +  gamma_2 * |bias_ij|     (d >= 1)

of the record's: ``gamma_d`` for the dot product, one rounding for the product with the scale (or
for a query scaled before the product), one for the scale itself rounded to float32, one for the
addition of the bias, and ``gamma_2 |bias|`` for that addition and one more (a bias summed from
two parts in another order).  With ``d = 0`` (the softmax route's records: the bias *is* the
model's logits) ``delta = 0``.

If every logit of row i moves by at most ``delta_ij``, the row's softmax (over any set of columns:
a block renormalised, a mask's visible keys) moves by a factor within
``[exp(-(delta_ij + delta_i)), exp(delta_ij + delta_i)]``, ``delta_i = max_j delta_ij``: the
numerator by ``exp(+-delta_ij)``, the denominator, a convex combination, by ``exp(+-delta_i)``.
So the exact softmax of the model's float32 logits is within ``A_ij (exp(delta_ij + delta_i) - 1)``
of the record's ``A``.  The model's float32 softmax then rounds on its own (exp, the row sum, the
division: a few u relative per entry, ``gamma_{N+3}`` at worst for a naive row sum of N terms);
the fixed ``TOLERANCES[dtype]`` (1e-5 in float32, about 168 u) is kept as that term.  The
allowance of an operator is

    floor + max_ij A_ij (exp(delta_ij + delta_i) - 1)

evaluated in float64 and raised by a relative 1e-9 (the float64 evaluation's own rounding).

It applies to float32 operators of form ``qk`` only.  A soft-capped operator keeps the floor
alone (the float32 ``tanh`` has no documented error bound; the soft-cap itself contracts the
logits' error, ``|d tanh| <= 1``, but its rounding cannot be bounded from documentation).  A
bfloat16 / float16 operator of the attention-interface route holds the model's own logits (form
``logits``): nothing between record and model remains to bound but the probabilities' rounding,
the fixed tolerance of the dtype.  Records with factors in a low-precision dtype (the sdpa and
multi-head-attention routes) are checked against probabilities recomputed in float64 from the
same factors, so the allowance does not arise there either; float64 keeps its fixed 1e-9.

Wrong captures stay refused: a wrong scale, a missing bias or transposed keys move the
probabilities by far more than the allowance unless the logits are tiny (the planted-error tests).
"""

from __future__ import annotations

import numpy as np

UNIT_ROUNDOFF = {"float32": 2.0 ** -24}  # dtypes whose qk records get the allowance
EVALUATION_MARGIN = 1e-9  # relative: the float64 evaluation of the allowance itself


def gamma(n: int, u: float) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)`` (requires ``n u < 1``)."""
    if n * u >= 1:
        return float("inf")
    return n * u / (1 - n * u)


def logit_errors(queries: np.ndarray, keys: np.ndarray, scale: float, bias: np.ndarray | None,
                 u: float) -> np.ndarray:
    """``delta_ij``: how far a model that evaluated ``scale * q_i.k_j (+ bias_ij)`` with unit
    roundoff ``u`` can be from the exact value (module docstring)."""
    m, d = queries.shape
    n = keys.shape[0]
    if d == 0:
        return np.zeros((m, n))
    delta = gamma(d + 3, u) * abs(scale) * (np.abs(queries) @ np.abs(keys).T)
    if bias is not None:
        delta = delta + gamma(2, u) * np.abs(bias)
    return delta


def probability_excess(a_hat: np.ndarray, delta: np.ndarray, visible: np.ndarray | None = None) -> float:
    """``max_ij A_ij (exp(delta_ij + delta_i) - 1)`` over the visible entries (all when ``visible``
    is None), ``delta_i`` the largest visible ``delta_ij`` of row i."""
    if delta.size == 0:
        return 0.0
    if visible is not None:
        delta = np.where(visible, delta, 0.0)
    row = delta.max(axis=1, keepdims=True)
    excess = a_hat * np.expm1(delta + row)
    if visible is not None:
        excess = np.where(visible, excess, 0.0)
    return float(excess.max())


def allowance(op, floor: float) -> float:
    """The deviation an operator (``operators.Operator``) may show from the model's probabilities:
    ``floor`` plus the rounding of the model's float32 logits (module docstring); ``floor`` alone
    where that does not apply."""
    u = UNIT_ROUNDOFF.get(op.dtype)
    if u is None or op.form != "qk":
        return floor
    delta = logit_errors(op.queries, op.keys, op.scale, op.bias, u)
    excess = probability_excess(op.a_hat(), delta, op.mask)
    return (floor + excess) * (1 + EVALUATION_MARGIN)
