"""The nudges: each exercise's hints, by exercise name, in the order the help button gives them.

They live here, not in the lesson's cell that makes the exercise, so a learner reads a hint
only when they ask for one (issue 38, point 5: every hint was printed in the code right
above the "Show hint" button). A hint says what to compute and stops short of the code
(``tests/test_exercise_flow.py`` checks that no line of a solution is in one); the last
level, the solution, comes from the course after one checked attempt (:mod:`.hints`).
The exam switch (``WORKBENCH_EXAM=1``) turns all of them off.
"""

from __future__ import annotations

HINTS: dict[str, tuple[str, ...]] = {
    # 01_sigmoid_gradient.ipynb
    "01-sigmoid-rule": (
        "Which tensor does the rule need: the input x, or the output y? orig.out is y.",
        "dy/dx = y · (1 − y), and the chain rule multiplies it by ȳ (the argument grad). The "
        "rule returns a list: one gradient per input.",
    ),
    "01-tanh-rule": (
        "Like sigmoid's rule, write the slope with the output y = orig.out.",
        "dy/dx = 1 − y². Multiply it by ȳ and return it in a list of one.",
    ),
    # 02_mul_and_broadcasting.ipynb
    "02-mul-rule": (
        "ā is ȳ times the *other* input, b; b̄ is ȳ times a.",
        "Sum each one back to the shape of the input it belongs to: collapse_sum_like takes "
        "that input as its second argument. Return None for an input whose needs_input_grad "
        "is False.",
    ),
    "02-collapse-sum": (
        "First sum away the leading axes that broadcasting added: g has g.ndim − len(shape) "
        "more axes than the target shape.",
        "Then, for each axis where the target's size is 1 and g's is not, sum over that axis "
        "and keep it (keepdims=True).",
    ),
    "02-predict-session": (
        "The sum sends ones of its input's shape. An add sends ȳ on to each input as it is, "
        "summed back to that input's shape.",
        "At the mul, x̄ = ȳ · w and w̄ = ȳ · x, each summed back to its own input's shape. A "
        "leaf's AccumulateGrad puts what reaches it into .grad.",
    ),
    "02-linear-rule": (
        "Write down each shape: x (N, in), W (out, in), b (out,), ȳ (N, out). Each gradient "
        "has the shape of its own input.",
        "A product (a, k) @ (k, b) is (a, b): for x̄ find the factor that turns ȳ's (N, out) "
        "into (N, in); for W̄ the only way to (out, in) transposes one of ȳ and x. b was "
        "broadcast over the batch rows: sum ȳ back over them.",
    ),
    # 03_backward_graph_step_by_step.ipynb
    "03-order": (
        "The add was created last, so its node runs first; then its two inputs' nodes are "
        "ready. Which of the two sums was created later?",
        "TanhBackward0 must wait for both muls. Once h * w's mul has run, w's AccumulateGrad "
        "and tanh's node are both ready: a leaf's node runs as soon as it is ready, so w's "
        "goes first.",
    ),
    "03-x-grad": (
        "h is used three times; h̄ is the sum of what each use sends back.",
        "h̄ = w + 2h, and tanh's rule gives x̄ = h̄ · (1 − h²).",
    ),
    "03-stop-gradient": (
        "Follow each path from the loss back to x. A constant sends nothing back, but the "
        "factor beside it still receives ȳ times the constant.",
        "In x * x.detach() only the first factor is on the graph; in (scale * x).sum(), scale "
        "is a number to backward. x.grad adds what every path that is left sends.",
    ),
    "03-in-place": (
        "Which tensor did sigmoid save for its rule, and which line changes it afterwards?",
        "Leave sigmoid's output as it was: build y + 1 as a new tensor, or change a copy of "
        "it (.clone()) in place. Hiding the change (.detach(), .data) only hides the error.",
    ),
    # 04_build_your_own_engine.ipynb
    "04-dependencies": (
        "Walk the graph from start with a stack of nodes still to visit, and a dict of counts.",
        "Each edge (child, _) in node.next_functions adds 1 to child's count (skip a None "
        "child). Visit each child once: the first time you meet it.",
    ),
    "04-backward-loop": (
        "Follow the five steps above in order: the loop runs while the heap of ready nodes is "
        "not empty, and takes the node on top each time.",
        "A node joins the heap when its count of gradients still to come reaches 0, not when "
        "its first gradient arrives; a gradient that arrives is added to what its slot holds. "
        "A leaf's gradient is added to its .grad, which may already hold one.",
    ),
    "04-value-recorder": (
        "Each op makes its result as a new Value whose parents are the inputs, and gives that "
        "result a closure: it adds (never sets) the result's grad, times the local derivative, "
        "into each parent's grad. For a · b the derivative for a is b's data; for tanh it is "
        "1 − y², with y the result's data.",
        "backward(): a depth-first walk from the root, with a set of nodes already visited, "
        "that appends a node to a list after visiting all its parents. The root's own grad is "
        "1.0 before anything runs; then call every node's closure, the list read from its end.",
    ),
    # 05_checkpointing.ipynb
    "05-checkpointing-peak": (
        "Three moments: before the step (what is held, and a fresh peak), the step itself, "
        "after the step (the peak).",
        "The peak also counts what was held before the step began: read the current amount "
        "before the step and subtract it from the peak after.",
    ),
    "05-checkpointing-budget": (
        "Fewest segments first: try 1, 2, 3, ... and stop at the first that fits.",
        "Measure each count with your peak_saved. If no count up to len(layers) fits in the "
        "budget, the answer is None.",
    ),
    # 06_custom_functions_and_gradcheck.ipynb
    "06-custom-functions-softplus": (
        "Backward needs x (for σ(x)): forward must keep it for backward, with "
        "ctx.save_for_backward.",
        "In forward: max(x, 0) is x.clamp(min=0) or x.relu(), −|x| is -x.abs(), and log(1 + "
        "u) is u.log1p(). In backward, σ(x) is x.sigmoid(), times ȳ.",
    ),
    "06-custom-functions-hypot": (
        "ctx.save_for_backward takes several tensors at once; backward gets them back, in the "
        "same order, from ctx.saved_tensors.",
        "∂y/∂a = a / y and ∂y/∂b = b / y: each input gets ȳ times its own partial derivative.",
    ),
    "06-custom-functions-power": (
        "Backward returns one gradient per input of forward: two here. k is a plain number, "
        "not a tensor, so its gradient is None.",
        "Keep k on ctx (ctx.k = k): save_for_backward is for tensors. d/dx xᵏ = k · xᵏ⁻¹.",
    ),
    # 07_higher_order_gradients.ipynb
    "07-higher-order-hvp": (
        "The first gradient must itself be differentiable: which argument of grad makes the "
        "engine record the backward pass?",
        "H·v is the gradient, with respect to x, of the number (g · v).sum(), where g is that "
        "first gradient.",
    ),
    "07-higher-order-jacobian": (
        "Compute y = f(x) once. Row i of the Jacobian is the gradient of y's element i: a "
        "backward with ȳ all zeros but a 1 at i.",
        "One backward per element of y, all on the same graph (keep it with "
        "retain_graph=True); stack the rows and give the result the shape y.shape + x.shape.",
    ),
    # 08_convolution_and_pooling.ipynb
    "08-conv-pool-safe-where": (
        "Backward runs through both branches of a where. Which values of x must sqrt never "
        "see, even in the branch that is not taken?",
        "First a where that swaps those x for a harmless number, where sqrt and its slope "
        "are finite; then the sqrt of that; then the where that picks the value. Test x > 0 "
        "in both: at x = 0 the 0 branch is taken.",
    ),
    "08-conv-pool-avg-pool": (
        "Each input in window (i, j) gets ȳ[..., i, j] / k². Inputs outside every window get "
        "0: start from zeros of data's shape.",
        "Window (i, j) covers rows i·k to i·k + k − 1 and columns j·k to j·k + k − 1; numpy's "
        "repeat along the last two axes spreads each value over its window.",
    ),
    "08-conv-pool-take": (
        "Work on the flattened x: zeros of x.numel() elements; add ȳ at the indices; reshape "
        "to x's shape.",
        "An index can appear twice, and then both gradients must land: fancy-index assignment "
        "with += keeps only one; np.add.at adds each.",
    ),
    # 09_training_a_network.ipynb
    "09-training-xent-grad": (
        "Three pieces: the softmax over each row, the one-hot of the labels, the 1/N of the mean.",
        "The gradient of the mean cross-entropy with respect to the logits is (softmax − "
        "one-hot) / N, row by row.",
    ),
    "09-training-momentum": (
        "state.get(i) is None on the first step: start the velocity at the gradient itself, "
        "as a copy (the next step zeroes p.grad in place).",
        "Later steps: velocity = momentum · old velocity + gradient. Keep it in state[i], "
        "then move p by −lr · velocity, in place and outside the graph.",
    ),
    "09-training-accumulate": (
        "backward() adds into p.grad, so one backward per micro-batch does all the adding. "
        "The question is what to multiply each micro-batch's loss by.",
        "Each micro-batch's mean loss weighs its number of points over N in the whole batch's "
        "mean. Mind the last micro-batch: it can hold fewer than micro_batch points.",
    ),
    "09-training-clip": (
        "Two passes over params: first the norm of all the gradients together, then one "
        "scale for every p.grad. Compute the total before you change any gradient.",
        "The total is the square root of the sum of every p.grad's squared norm. Scale each "
        "p.grad where it is by min(1, max_norm / (total + 1e-6)), and return the total.",
    ),
    "09-training-batchnorm": (
        "First each column's statistics over the batch (dim 0): its mean and its biased "
        "variance, divided by N, not N − 1. Then σ = sqrt(variance + eps) and x̂.",
        "x̄ = γ / σ · (ȳ − mean(ȳ) − x̂ · mean(ȳ · x̂)), every mean over dim 0: a (C,) row "
        "that broadcasts against the (N, C) ones.",
    ),
    # 10_complex_autodiff.ipynb
    "complex-autodiff-exp-rule": (
        "exp is its own derivative: f′(z) = exp(z), which is the op's output, orig.out.",
        "For a holomorphic op the rule is ȳ times the conjugate of f′(z); wb.conj conjugates "
        "a tensor.",
    ),
    "complex-autodiff-abs-rule": (
        "For a real number x, |x|′ = sign(x) = x / |x|. Here L depends on Re z and Im z "
        "through |z| = √((Re z)² + (Im z)²): compute ∂|z|/∂(Re z) and ∂|z|/∂(Im z).",
        "∂|z|/∂(Re z) = Re z / |z| and ∂|z|/∂(Im z) = Im z / |z|. Put them together as ∂/∂(Re "
        "z) + i·∂/∂(Im z) and multiply by ȳ (a real number).",
    ),
    # 11_forward_or_reverse.ipynb
    "11-sigmoid-jvp": (
        "ẏ is the derivative of σ at the point where σ is, times ẋ. Which tensor holds σ(x) "
        "already? orig.out.",
        "σ′(x) = y · (1 − y) with y = orig.out; multiply it by tangents[0]. Return the tensor "
        "itself, not a list.",
    ),
    "11-mul-jvp": (
        "Multiply the dual numbers (a + ȧε)(b + ḃε) out and keep the part with ε.",
        "Both inputs move: ẏ has one term for each tangent, each tangent times the other "
        "input. Broadcasting gives the sum y's shape by itself.",
    ),
    "11-dual-interpreter": (
        "Start from the first section's Dual: the same arithmetic, named primal and tangent. "
        "A constant becomes a Dual that does not move. jvp makes one Dual, runs f on it once, "
        "and takes the result apart.",
        "Each method returns a new Dual: its primal is the function's value, its tangent the "
        "derivative taken at the primal times the tangent coming in (for sin, cos at the "
        "primal). The product's tangent has two terms. jvp returns the primal first.",
    ),
    "11-fewer-passes": (
        "Which ẋ makes J·ẋ equal to column j of J? Which ȳ makes ȳᵀJ equal to row i?",
        "A whole J needs all its columns (one forward pass each) or all its rows (one "
        "backward pass each). For f: Rⁿ → Rᵐ, how many columns does J have, and how many "
        "rows?",
    ),
    # 12_per_example_gradients.ipynb
    "12-example-norms": (
        "Make each tensor of the tuple a matrix with one row per example: g.reshape(len(g), -1).",
        "Square and sum each row, add those sums over the tensors of the tuple, then take the "
        "square root once.",
    ),
    "12-clip-per-example": (
        "Each row gets its own scale, min(1, max_norm / ‖row‖): one number per row, as a "
        "column of shape (N, 1) that broadcasts over the row.",
        "grads.norm(dim=1, keepdim=True) gives the norms as a column. A zero row has norm 0: "
        "add a tiny number before dividing, and clamp the scale to at most 1.",
    ),
    "12-batching-rule": (
        "Three cases: x not batched (bdim is None: an ordinary sum, and out_dim None); x "
        "batched: put its batch dim first with batch_first, and then where is the example's "
        "dim?",
        "With the batch dim first, the example's dim d is dim d + 1 of x. A negative dim "
        "counts from the example's end: make it non-negative with dim % (x.ndim - 1) before "
        "you shift it. The sum keeps the batch dim where you put it: out_dim 0.",
    ),
    # 13_from_tape_to_program.ipynb
    "13-used-twice": (
        "Two rules run, from the loss down: mean_grad first (what does it do to L̄?), then "
        "mul_grad, whose two inputs are both err.",
        "mul_grad sends ȳ · b to a and ȳ · a to b; here a and b are the same value, so its "
        "adjoint is the sum of the two. N is err.size.",
    ),
    "13-adjoint-by-hand": (
        "Walk the forward bindings from the last to the first: tanh first (h̄ gives z̄), then "
        "add (z̄ gives the adjoint of x @ w, and b̄), then matmul (x̄ and w̄). The printed "
        "adjoint program's comments name each rule.",
        "An adjoint has the shape of its value: x̄ is (N, D), w̄ is (D, H), b̄ is (H,). Let the "
        "shapes choose where each transpose goes, and sum over the axis that broadcasting "
        "added to b. tanh's derivative is written with h, the forward output.",
    ),
}
