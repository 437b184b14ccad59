"""Fixtures shared by several test modules."""
import warnings

import pytest


@pytest.fixture
def quiet_torch_deprecations():
    """The old weight_norm and backward(create_graph=True) warn on every use; some tests use both."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph=True")
        yield
