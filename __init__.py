"""SoftRank: trustworthy low-rank certificates for softmax attention.

Components (all under this namespace):

- ``softrank.fastpath``  untrusted float64 producer (torch / transformers)
- ``softrank.replay``    record format, store I/O and dispatch of checks
- ``softrank.validated`` Arb-ball and binary64-error-bound checkers (trusted core)
- ``softrank.exact``     rational arithmetic and exact LP (trusted core)
- ``softrank.oracle``    exact decisions for small cells and exactly closed families
"""

__version__ = "0.1.0"
