"""The table of error inputs (tests/error_inputs.py), run against PyTorch 2.13.

Every generated call that PyTorch refuses must be refused by the workbench with the same
builtin exception type, a message naming the op and the argument, and its inputs
unchanged. The calls PyTorch accepts were dropped when the table was made. Where the
workbench is friendlier on purpose, ``FRIENDLIER`` records the decision and its reason
(the README's "When things go wrong" says so too), and the test holds the workbench to
it. ``GAPS`` (tests/error_inputs_gaps.py) are mismatches the table found that are not
fixed yet: each fails until it is fixed (a strict xfail), and then its entry must go.
"""

from __future__ import annotations

import pytest

from tests import error_inputs as table
from tests.error_inputs_gaps import GAPS
from workbench.ops.registry import OPS

CASES = table.error_cases()
GAP_REASONS = {case_id: reason for reason, ids in GAPS.items() for case_id in ids}

# Ops for which PyTorch refuses none of the generated bad inputs, with the reason.
NO_ERROR_CASES = {
    "astype": "x.to(dtype) in PyTorch: its one tensor is the receiver of a method, and "
    "PyTorch converts every dtype and shape to any other",
    "to_device": "x.to(device): as astype, every dtype and shape moves",
    "repeat": "x.repeat(sizes) and x.tile(sizes): the receiver may have any dtype and shape "
    "that the sizes fit; bad sizes are tested in tests/test_bad_input.py",
    "no_grad": "the marker op of a detached copy: no PyTorch call to compare it with",
}


def marked(case):
    reason = GAP_REASONS.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


def judged(case) -> str:
    """``"ok"``, ``"decided"`` (friendlier on purpose, as FRIENDLIER records) or what is wrong."""
    verdict = table.verdict(case)
    decision = table.decision_for(case)
    if verdict != "ok" and decision and table.as_decided(decision, verdict):
        return "decided"
    return verdict


@pytest.mark.parametrize("case", [marked(c) for c in CASES])
def test_refused_as_pytorch_refuses_it(case):
    assert judged(case) in ("ok", "decided"), f"{case.id}: {judged(case)}"


def test_the_table_has_at_least_1500_error_cases():
    refused_alike = [c for c in CASES if c.id not in GAP_REASONS and judged(c) == "ok"]
    assert len(refused_alike) >= 1500, len(refused_alike)


def test_every_op_a_user_calls_has_error_cases():
    """A new op gets a registry sample (tests/test_registry.py insists), and with it error
    cases here, the day it is added; an op PyTorch refuses nothing of must say why."""
    covered = {case.op for case in CASES}
    user_facing = {name for name in OPS if table.user_facing(name)}
    missing = user_facing - covered - set(NO_ERROR_CASES)
    assert not missing, f"ops with no error case: {sorted(missing)}"


def test_every_decision_still_holds_somewhere():
    """Each FRIENDLIER entry describes at least one generated call (or the entry, and the
    sentence in the docs, would be stale)."""
    for decision in table.FRIENDLIER:
        assert any(table.decision_for(c) is decision and judged(c) == "decided" for c in CASES), (
            decision.reason
        )


def test_gaps_name_generated_cases():
    ids = {case.id for case in CASES}
    assert set(GAP_REASONS) <= ids, sorted(set(GAP_REASONS) - ids)[:5]
