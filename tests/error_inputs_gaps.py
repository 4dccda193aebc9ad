"""Mismatches with PyTorch that tests/test_error_inputs.py found and that are not fixed
yet, by what goes wrong: each case is a strict xfail, so fixing one fails the test until
its id leaves this table. Keep it shrinking; never add an entry to make a new op pass."""

GAPS = {
    "Tensor.norm, given huge int): ValueError (PyTorch: TypeError)": [
        "Tensor.norm(dim=huge_int)",
    ],
    "addmm, given complex: accepted (PyTorch: RuntimeError)": [
        "addmm[1]=complex",
        "addmm[2]=complex",
        "addmm:matrix_bias[1]=complex",
        "addmm:matrix_bias[2]=complex",
        "addmm:transposed_weight[1]=complex",
        "addmm:transposed_weight[2]=complex",
    ],
    "batch_norm, given zero dim: accepted (PyTorch: RuntimeError)": [
        "batch_norm:1d[1]=zero_dim",
        "batch_norm:1d[2]=zero_dim",
        "batch_norm:2d_images[1]=zero_dim",
        "batch_norm:2d_images[2]=zero_dim",
    ],
    "cat, given zero dim: IndexError (PyTorch: RuntimeError)": [
        "cat:three_dim1[0]=zero_dim",
    ],
    "cat, given zero dim: the message does not name the argument": [
        "cat:three_dim1[1]=zero_dim",
        "cat:three_dim1[2]=zero_dim",
        "cat:one_constant[0]=zero_dim",
        "cat:one_constant[1]=zero_dim",
    ],
    "chunk, given zero dim: IndexError (PyTorch: RuntimeError)": [
        "chunk:uneven[0]=zero_dim",
    ],
    "embedding, given zero dim: RuntimeError (PyTorch: IndexError)": [
        "embedding[1]=zero_dim",
    ],
    "index_put_broadcast_value, given empty: OpError (PyTorch: IndexError)": [
        "index_put_broadcast_value[0]=empty",
    ],
    "masked_fill, given None: RuntimeError (PyTorch: TypeError)": [
        "masked_fill:broadcast_mask[1]=None",
        "masked_fill:tensor_value[1]=None",
    ],
    "nll_loss, given empty: IndexError (PyTorch: RuntimeError)": [
        "nll_loss:no_batch[0]=empty",
    ],
    "norm, given complex: accepted (PyTorch: NotImplementedError)": [
        "norm:p1[0]=complex",
        "norm:inf[0]=complex",
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
    "split, given zero dim: IndexError (PyTorch: RuntimeError)": [
        "split:sizes[0]=zero_dim",
    ],
    "stack, given zero dim: RuntimeError (PyTorch: IndexError)": [
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
