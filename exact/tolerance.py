"""The tolerance, under its former name: ``softrank.replay.tolerance`` (re-exported here, one class).

``from softrank.exact.tolerance import Tolerance`` still works; the class, its parsers and its
printer live in ``replay/tolerance.py``, on the replay's trust line.
"""

from softrank.exact.rational import MAX_DIGITS, _shown  # noqa: F401  (re-exported)
from softrank.replay.tolerance import BINARY64, Tolerance, check_binary64, exact_text  # noqa: F401  (re-exported)
