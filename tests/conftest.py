import os

import numpy as np
import pytest
from hypothesis import settings

import workbench as wb

# Two run lengths for the hypothesis tests: examples per test. CI's quick run is "ci",
# the default: 15 (the program fuzzer, tests/test_fuzz_programs.py, takes 120 at least),
# the same examples on every run (derandomized), so that `make test` passes or fails
# alike on every machine and every try. `make fuzz` (scripts/fuzz.sh) sets
# HYPOTHESIS_PROFILE=fuzz: 4,000 programs and 4,000 examples per property test, fresh
# random ones on every run; what it finds goes into tests/test_fuzz_regressions.py.
settings.register_profile("ci", max_examples=15, deadline=None, derandomize=True)
settings.register_profile("fuzz", max_examples=4000, deadline=None, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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


@pytest.fixture(scope="session")
def core_wheel(tmp_path_factory):
    """This checkout's wheel (tests/core_env.py), built once per test session."""
    from tests.core_env import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def core_venv(core_wheel, tmp_path_factory):
    """A fresh venv with the wheel and its core dependencies only, made once per session."""
    from tests.core_env import make_core_venv

    return make_core_venv(tmp_path_factory.mktemp("core") / "venv", core_wheel)
