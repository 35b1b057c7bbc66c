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
    import atexit
    import shutil
    import tempfile

    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir

    home = tempfile.mkdtemp(prefix="softrank-hypothesis-")  # its caches, outside the checkout
    atexit.register(shutil.rmtree, home, ignore_errors=True)  # and gone after the run
    set_hypothesis_home_dir(home)
    settings.register_profile("softrank", database=None)
    settings.load_profile("softrank")


_no_hypothesis_database()
