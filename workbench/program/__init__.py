"""From tape to program: trace a function into a program you can read, derive its adjoint
program from the same registered rules, and run either as a flat list of kernels.

    program = wb.program.trace(f, x, w)        # SSA bindings of registry ops
    print(program)
    adjoint = wb.program.gradient(program)      # forward bindings, then backward ones
    print(wb.program.eliminate_dead_code(adjoint))
    adjoint.run(x, w, 1.0)                      # outputs, then x̄ and w̄

``wb.compile`` (PyTorch's name) puts it together: trace on the first call of each input
signature, run the program, and backward through the adjoint program.
"""

from .adjoint import checkpoint_segment, gradient, recompute_checkpoints, recompute_in_backward
from .compiled import Compiled, compile
from .ir import Binding, Program, Value
from .partition import min_cut_partition
from .runner import Runner
from .simplify import eliminate_common_subexpressions, eliminate_dead_code
from .tracer import TraceError, trace

__all__ = [
    "Binding",
    "Compiled",
    "Program",
    "Runner",
    "TraceError",
    "Value",
    "checkpoint_segment",
    "compile",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "gradient",
    "min_cut_partition",
    "recompute_checkpoints",
    "recompute_in_backward",
    "trace",
]
