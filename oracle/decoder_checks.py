"""Re-check of a contractive-decoder certificate (kind ``decoder``): no B of rank < p within eps,
from p rows S of A and an N x p matrix W.  proofs/lemma_D_contractive_decoder.md (Lemma D).

The certificate lists ``rows`` S (p distinct row indices) and ``W`` (N rows of p rationals).  It
proves the cell impossible at every rank k <= p - 1 when, exactly,

    ||A_S W - I_p||_inf + eps max_j ||W_j||_1 < 1      (W_j: row j of W).

Fraction arithmetic (the product through FLINT, exactly); nothing about how S and W were found
is assumed.
"""

from __future__ import annotations

from softrank.exact.rational import ONE, ZERO, matmul
from softrank.oracle.check_basics import as_ints, as_matrix, l1


def lemma_d_sum(residual, eps, decoder_norm):
    """Lemma D's sum ``||A_S W - I_p||_inf + eps max_j ||W_j||_1`` from its two norms, exactly: below 1,
    no B of rank < p is within eps.  The one computation of it (``decoder_value`` here, and the grid
    family's W = I in ``softrank.oracle.families``)."""
    return residual + eps * decoder_norm


def decoder_value(A, eps, rows, W):
    """``||A_S W - I||_inf + eps max_j ||W_j||_1``, exactly."""
    P = matmul([A[i] for i in rows], W)
    residual = max(l1([x - (ONE if t == s else ZERO) for t, x in enumerate(row)]) for s, row in enumerate(P))
    return lemma_d_sum(residual, eps, max(l1(w) for w in W))


def check_decoder(A, eps, cert, k, klass) -> bool:
    """p = |S| > k distinct rows in range, W of shape N x p, and the Lemma D sum below 1."""
    m, N = len(A), len(A[0])
    rows = as_ints(cert["rows"])  # JSON integers only (no bools, floats or text)
    p = len(rows)
    if not k < p <= m or len(set(rows)) != p or any(not 0 <= i < m for i in rows):
        return False
    W = as_matrix(cert["W"], rows=N, cols=p)
    return decoder_value(A, eps, rows, W) < 1
