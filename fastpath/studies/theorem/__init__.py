"""Sanity checks of the theory's inequalities and invariances (``softrank theorem``, ``softrank
kappa``), one study per module; untrusted orchestration.

Floats here only *propose* (a column term from an LP, weights, centres, gauges); every claim that
is reported as proved comes from ``softrank.validated`` (Arb balls).

- ``perturbation``  the softmax perturbation bound (proofs/softmax_perturbation.md);
- ``tau``           A within tau(T) of rowsoftmax(T + 1 c^T) (proofs/tau_bound.md);
- ``kappa``         kappa(T) brackets and kappa(C) <= Gamma (proofs/kappa_duality_contrast.md);
- ``gauge``         gauge audit: A, C, tau and kappa stay, the native Gamma moves;
- ``records``       operators from records and record selection, shared by the studies.
"""
