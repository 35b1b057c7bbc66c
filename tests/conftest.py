"""Shared fixtures."""

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread (as extraction uses): much faster on the shared 2-core machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _no_hypothesis_database():
    """Hypothesis keeps an example database in ./.hypothesis by default: no test writes into the
    checkout, so the suite runs without one (every property test is derandomized or seeded)."""
    import tempfile

    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(tempfile.mkdtemp(prefix="softrank-hypothesis-"))  # its caches, outside the checkout
    settings.register_profile("softrank", database=None)
    settings.load_profile("softrank")


_no_hypothesis_database()
