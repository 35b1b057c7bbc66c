"""Sanity checks of the theory's inequalities and invariances (``softrank theorem``, ``softrank
kappa``), one study per module; untrusted orchestration.  ``command``: ``softrank theorem``;
``kappa_command``: ``softrank kappa``.

Floats here only *propose* (a column term from an LP, weights, centres, gauges); every claim that
is reported as proved comes from ``softrank.validated`` (Arb balls).

- ``perturbation``  the softmax perturbation bound (proofs/softmax_perturbation.md);
- ``tau_check``     A within tau(T) of rowsoftmax(T + 1 c^T) (proofs/tau_bound.md);
- ``kappa``         kappa(T) brackets and kappa(C) <= Gamma (proofs/kappa_duality_contrast.md);
- ``gauge``         gauge audit: A, C, tau and kappa stay, the native Gamma moves;
- ``record_logits`` operators from records and record selection, shared by the studies
                   (``softrank.studies.kappa`` too);
- ``kappa_sdp``     the kappa SDP (cvxpy + Clarabel) that proposes the dual weights and primal.
"""
