"""PyTorch programs written in the idioms of the PyTorch tutorials, d2l and makemore.

Each is an ordinary PyTorch script that ends by printing ``RESULT {json}``. The test
(tests/test_torch_programs.py) runs each twice, in subprocesses: with PyTorch, and with
the workbench under the name ``torch`` (``workbench.as_torch()`` first), and compares
the two results. Data come from numpy or from seeded generators, so both begin equal.
"""
