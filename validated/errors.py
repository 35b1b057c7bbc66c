"""``InputError`` under its earlier import path (``softrank.validated.errors``): the class lives in
the neutral module ``softrank.errors``."""

from softrank.errors import InputError

__all__ = ["InputError"]
