"""Every check's Arb working precision, named once, and the one way to set it: ``working_precision``.

An Arb ball contains the exact value at any precision, so no verdict rests on these numbers; they
only choose how tight the balls are (proofs/softmax_enclosure.md, "Precision and users").  A check
runs its Arb work inside ``with working_precision(name):``; a function with a ``prec_bits``
argument passes the bits it was given (its default is the named precision).  Nothing else sets
flint's ``ctx.prec`` (tests/validated/test_precision.py checks this)."""

from types import MappingProxyType

from flint import ctx

PRECISION = MappingProxyType({
    "enclosure": 80,  # softmax enclosure (Lemma S): binary64 inputs, radii a few ulps of 53 bits
    "singular_values": 128,  # Lemma E's residuals ||M - U S V^T||, ||U^T U - I||: they are ~2^-53 of M
    "perturbation": 128,  # tau's softmax perturbation sides: differences of nearby softmax rows
    "kappa": 106,  # kappa bounds: a product of two binary64 numbers is exact at 2 x 53 bits
    "gauge": 106,  # the gauge study's logit products Q K^T: exact at 2 x 53 bits, as for kappa
    # Arb's upper() / lower() round to the working precision: at the default 53 bits a ball computed
    # at 128 bits would lose its last 75, so a ball's end points are read at least this finely:
    "ball_end_points": 256,
    "exp_constants": 300,  # ln 2 and 1/ln 2 for the binary64 exp: errors far below binary64's 2^-53
    "exp_reduction": 200,  # an upper bound on exp(r) for the exp's truncation error: only an upper bound
    "families": 128,  # the family closures' balls for s = log(8 r / (1 - eps)) and kappa
    "families_display": 64,  # the gauge family's first row of A, shown only (binary64 suffices)
})


def working_precision(name_or_bits: str | int):
    """flint's ``ctx.workprec`` at ``PRECISION[name]`` (an unknown name is a KeyError) or at the bits
    passed; it restores the old precision on exit, also on an exception."""
    return ctx.workprec(name_or_bits if isinstance(name_or_bits, int) else PRECISION[name_or_bits])
