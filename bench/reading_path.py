"""The reading path: the workbench code that one small backward runs.

A newcomer follows ``x.sigmoid().sum().backward()`` (``x`` a 2-element float tensor,
made in the same line) through the code. This script runs it once to warm up, then
again under ``sys.setprofile`` and counts the workbench functions it calls (generator
expressions, comprehensions and lambdas left out: they are part of the function they
sit in), the files they are in and their source lines (whole functions, docstrings
included: a reader reads them too). "engine" is what ``backward()`` itself runs under
``workbench/autograd/`` and ``record/``; "reference" is what the one-screen reference loop
(``workbench/autograd/reference.py``) runs there for the same loss, the yardstick the
engine's length is measured against.

Prints one JSON line; ``--list`` prints every function too::

    python bench/reading_path.py
    python bench/reading_path.py --list
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import workbench as wb  # noqa: E402

PACKAGE = str(Path(wb.__file__).resolve().parent)


def functions_called(run: Callable[[], object]) -> dict:
    """``{code object: number of calls}`` for the workbench functions ``run`` calls."""
    calls: dict = {}

    def count(frame, event, arg) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(PACKAGE):
            if not code.co_name.startswith("<"):
                calls[code] = calls.get(code, 0) + 1

    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def lines_of(code) -> int:
    try:
        return len(inspect.getsourcelines(code)[0])
    except OSError:  # (no source: not expected for workbench's own files)
        return 0


def program() -> None:
    wb.tensor([1.0, 2.0], requires_grad=True).sigmoid().sum().backward()


def _in_autograd(calls: dict) -> dict:
    return {
        code: n
        for code, n in calls.items()
        if any(
            f"{Path(PACKAGE).name}/{folder}/" in code.co_filename.replace("\\", "/")
            for folder in ("autograd", "record")
        )
    }


def measure() -> dict:
    program()  # warm up: first-use work (a save plan worked out, a lazy import) is not counted
    whole = functions_called(program)
    loss = wb.tensor([1.0, 2.0], requires_grad=True).sigmoid().sum()
    engine = _in_autograd(functions_called(loss.backward))
    loss = wb.tensor([1.0, 2.0], requires_grad=True).sigmoid().sum()
    reference = _in_autograd(functions_called(lambda: wb.autograd.reference.backward(loss)))
    return {
        "bench": "reading_path",
        "program": "wb.tensor([1.0, 2.0], requires_grad=True).sigmoid().sum().backward()",
        "functions": len(whole),
        "calls": sum(whole.values()),
        "files": len({code.co_filename for code in whole}),
        "lines": sum(lines_of(code) for code in whole),
        "engine_functions": len(engine),
        "engine_lines": sum(lines_of(code) for code in engine),
        "reference_lines": sum(lines_of(code) for code in reference),
        "_whole": whole,
        "_engine": engine,
        "_reference": reference,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="also list every function")
    args = parser.parse_args()
    record = measure()
    whole, engine = record.pop("_whole"), record.pop("_engine")
    record.pop("_reference")
    print(json.dumps(record))
    if args.list:
        for code in sorted(whole, key=lambda c: (c.co_filename, c.co_firstlineno)):
            where = Path(code.co_filename).relative_to(PACKAGE)
            mark = "  (engine)" if code in engine else ""
            print(
                f"{where}:{code.co_firstlineno} {code.co_qualname} x{whole[code]}, "
                f"{lines_of(code)} lines{mark}"
            )


if __name__ == "__main__":
    main()
