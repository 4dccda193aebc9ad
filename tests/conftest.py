import numpy as np
import pytest

import workbench as wb


@pytest.fixture(autouse=True)
def _fresh_state():
    """Every test starts with grad mode on, anomaly mode off and a seeded generator."""
    wb.manual_seed(0)
    np.random.seed(0)
    yield
    wb.autograd.set_detect_anomaly(False)
    wb.set_grad_enabled(True)


def pytest_collection_modifyitems(config, items):
    pass
