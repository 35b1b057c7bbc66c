"""SoftRank: trustworthy low-rank certificates for softmax attention.

Components (all under this namespace):

- ``softrank.fastpath``  untrusted float64 producer (torch / transformers)
- ``softrank.replay``    record format, store I/O and dispatch of checks
- ``softrank.validated`` Arb-ball and binary64-error-bound checkers (trusted core)
- ``softrank.exact``     rational arithmetic and exact LP (trusted core)
- ``softrank.oracle``    exact decisions for small cells and exactly closed families

The Python API (docs/python.md) is exported lazily, so that ``import softrank`` stays light (no
numpy, no torch) and ``softrank replay`` never imports torch:
``Record``, ``bracket``, ``validate``, ``Store``, ``capture``, ``records_from_cache``, ``results`` / ``Results`` and
``report`` (``softrank.api``) and the exact
oracle's ``decide`` and ``profile`` (``softrank.oracle.search``).
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Record": "softrank.api",
    "bracket": "softrank.api",
    "validate": "softrank.api",
    "Validation": "softrank.api",
    "Store": "softrank.api",
    "capture": "softrank.api",
    "Results": "softrank.api",
    "results": "softrank.api",
    "report": "softrank.api",
    "records_from_cache": "softrank.api",
    "decide": "softrank.oracle.search",
    "profile": "softrank.oracle.search",
}
__all__ = ["Record", "Results", "Store", "Validation", "__version__", "bracket", "capture", "decide", "profile",
           "records_from_cache", "report", "results", "validate"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'softrank' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
