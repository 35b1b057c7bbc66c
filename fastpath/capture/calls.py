"""What every captured attention call (``session.Capture``, ``lens.LensCall``) reads off its
``(B, H, ...)`` tensor: the batch size (axis 0) and the head count (axis 1)."""

from __future__ import annotations


class BatchHeads:
    """``batch_size`` and ``num_heads`` of a call: the first two axes of the tensor field that
    ``HEADS_OF`` names (a class attribute of the call's class)."""

    HEADS_OF = ""

    @property
    def num_heads(self) -> int:
        return int(getattr(self, self.HEADS_OF).shape[1])

    @property
    def batch_size(self) -> int:
        return int(getattr(self, self.HEADS_OF).shape[0])
