"""Mismatches with PyTorch that tests/test_error_inputs.py found and that are not fixed
yet, by what goes wrong: each case is a strict xfail, so fixing one fails the test until
its id leaves this table. Keep it shrinking; never add an entry to make a new op pass."""

GAPS: dict[str, list[str]] = {}
