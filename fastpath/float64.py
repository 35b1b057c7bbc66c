"""The float64 quantities the producer computes, each written once (torch-free).

- ``rowsoftmax64``: the row softmax of float64 logits (max-shifted), the producer's a_hat;
- ``row_l1`` / ``max_row_l1``: the row l1 errors of a factorization and ``||A - X Y^T||_inf``;
- ``decoder_value``: ``||A_S W - I_p||_inf + eps max_j ||W_j||_1`` (a decoder certificate holds
  when it is below 1), computed by the checker's own float implementation
  (``softrank.validated.contractive_decoder.decoder_sum_float``), so the two never disagree on it.

These are proposals only: the validated replay recomputes every claim in balls.
"""

from __future__ import annotations

import numpy as np

from softrank.validated.contractive_decoder import decoder_sum_float

MARGIN = 1e-9  # a float64 claim is kept only with this much room: value <= eps - MARGIN, <= 1 - MARGIN


def rowsoftmax64(logits: np.ndarray) -> np.ndarray:
    """float64 row softmax of float64 logits (max-shifted)."""
    h = np.asarray(logits, dtype=np.float64)
    z = np.exp(h - h.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def row_l1(A: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """float64 l1 norms of the rows of ``A - X Y^T``."""
    with np.errstate(over="ignore", invalid="ignore"):  # huge factors give inf / nan norms: never "within eps"
        if X.shape[1] == 0:
            return np.abs(A).sum(axis=1)
        R = X @ Y.T
        np.subtract(A, R, out=R)
        np.abs(R, out=R)
        return R.sum(axis=1)


def max_row_l1(A: np.ndarray, X: np.ndarray, Y: np.ndarray) -> float:
    """float64 ``||A - X Y^T||_inf`` (maximum row l1)."""
    return float(row_l1(A, X, Y).max())


def decoder_value(A: np.ndarray, rows: np.ndarray, W: np.ndarray, eps: float) -> float:
    """float64 ``||A_S W - I_p||_inf + eps max_j ||W_j||_1`` (inf or NaN on overflow)."""
    return float(decoder_sum_float(A[rows], W, eps))
