#!/usr/bin/env bash
# The long run of the property tests, as `make fuzz` runs it: the "fuzz" hypothesis
# profile (tests/conftest.py) gives the program fuzzer 4,000 random programs and each
# property test 4,000 examples, fresh ones every run, and hypothesis prints its statistics.
# Indexing against PyTorch, trace round trips of random programs with odd names and
# attributes, and random indexing, shapes and sizes in a child process that must never
# crash (tests/test_no_crash.py) run too, and random answers to the exercise checkers
# (tests/test_hostile_answers.py), lesson 9's claims for twenty more seeds
# (tests/test_lesson_09_seeds.py), and random stacks of wb.func transforms against
# torch.func (tests/test_func_compose_property.py).
# CI's `make test` runs the same tests with few examples. PY=... picks another Python.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

if ! $PY -c 'import torch' 2>/dev/null; then
    $PY -m pip install -q torch==2.13.0  # no fallback: without torch every test would skip
fi
export HYPOTHESIS_PROFILE=fuzz
exec $PY -m pytest -q -p no:cacheprovider --timeout=3600 --hypothesis-show-statistics \
    tests/test_fuzz_programs.py tests/test_fuzz_regressions.py tests/test_properties.py \
    tests/test_fuzz_indexing.py tests/test_trace_round_trip.py tests/test_no_crash.py \
    tests/test_hostile_answers.py \
    tests/test_lesson_09_seeds.py tests/test_func_compose_property.py "$@"
