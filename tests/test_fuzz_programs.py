"""The program fuzzer: random whole programs (tests/fuzz_programs.py) agree with
PyTorch — every value, the leaves' gradients and a second-order gradient.

CI's quick run takes 120 programs (the "ci" profile's 15 examples are too few for
programs this varied); ``make fuzz`` runs the "fuzz" profile (tests/conftest.py), 4,000.
A program it ever found failing is kept in tests/test_fuzz_regressions.py.
"""

from __future__ import annotations

import pytest
from fuzz_programs import check_program, programs
from hypothesis import event, given, settings

pytest.importorskip("torch")


@settings(max_examples=max(120, settings.default.max_examples))
@given(program=programs())
def test_random_programs_match_torch(program):
    for step in program.steps:
        event(f"op {step.op}")
    check_program(program)
