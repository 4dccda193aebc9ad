"""Mismatches with PyTorch that tests/test_error_inputs.py found and that are not fixed
yet, by what goes wrong: each case is a strict xfail, so fixing one fails the test until
its id leaves this table. Keep it shrinking; never add an entry to make a new op pass."""

GAPS = {
    "Tensor.norm, given huge int): ValueError (PyTorch: TypeError)": [
        "Tensor.norm(dim=huge_int)",
    ],
    "batch_norm, given zero dim: accepted (PyTorch: RuntimeError)": [
        "batch_norm:1d[1]=zero_dim",
        "batch_norm:1d[2]=zero_dim",
        "batch_norm:2d_images[1]=zero_dim",
        "batch_norm:2d_images[2]=zero_dim",
    ],
    "embedding, given zero dim: RuntimeError (PyTorch: IndexError)": [
        "embedding[1]=zero_dim",
    ],
    "index_put_broadcast_value, given empty: OpError (PyTorch: IndexError)": [
        "index_put_broadcast_value[0]=empty",
    ],
    "nll_loss, given empty: IndexError (PyTorch: RuntimeError)": [
        "nll_loss:no_batch[0]=empty",
    ],
    "pad, given empty: RuntimeError (PyTorch: NotImplementedError)": [
        "pad:reflect[0]=empty",
        "pad:circular[0]=empty",
    ],
    "pad, given extra dim: accepted (PyTorch: NotImplementedError)": [
        "pad:reflect[0]=extra_dim",
        "pad:replicate[0]=extra_dim",
        "pad:circular[0]=extra_dim",
    ],
    "round, given bool: OpError (PyTorch: NotImplementedError)": [
        "round:decimals[0]=bool",
    ],
    "stack, given zero dim: the message does not name the argument": [
        "stack:dim1[0]=zero_dim",
    ],
    "take, given extra dim: IndexError (PyTorch: RuntimeError)": [
        "take:axis1[0]=extra_dim",
    ],
    "take, given extra dim: accepted (PyTorch: IndexError)": [
        "take:axis1[1]=extra_dim",
    ],
    "take, given index too big: IndexError (PyTorch: RuntimeError)": [
        "take:axis1[1]=index_too_big",
    ],
    "take, given index too small: IndexError (PyTorch: RuntimeError)": [
        "take:axis1[1]=index_too_small",
    ],
    "wb.norm, given huge int): ValueError (PyTorch: TypeError)": [
        "wb.norm(dim=huge_int)",
    ],
}
