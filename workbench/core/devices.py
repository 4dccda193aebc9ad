"""``wb.device``: where a tensor lives, with PyTorch's names, printing and errors.

A tensor's memory is a numpy array (``cpu``) or a CuPy array (``cuda``, see
``workbench/core/backend.py``); ``x.device`` says which as a :class:`device`, and
``x.to(device)`` moves it. The lines at the top of most PyTorch programs work here::

    device = "cuda" if wb.cuda.is_available() else "cpu"   # cuda only with CuPy and a GPU
    model = Net().to(device)

``wb.set_default_device("cuda")`` makes factories (``wb.zeros``, ``wb.tensor``...) put
new tensors there when no ``device=`` is given.
"""

from __future__ import annotations

from . import backend, state

KNOWN_TYPES = (
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta hpu "
    "mtia privateuseone"
).split()


class device:  # noqa: N801  (PyTorch's name)
    """A device type (``"cpu"``, ``"cuda"``) and an optional index: ``device("cuda:0")``.

    It compares equal to another device of the same type and index, never to a string
    (``x.device == "cpu"`` is False in PyTorch too: compare ``x.device.type``).
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index: int | None = None) -> None:  # noqa: A002  (PyTorch's name)
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, not {_name(type)}")
        kind, _, number = type.partition(":")
        if kind not in KNOWN_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(KNOWN_TYPES)} device type at start of device "
                f"string: {type}"
            )
        if number:
            if not number.isdigit() or index is not None:
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(number)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = kind
        self.index = index

    def __eq__(self, other) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
CUDA = device("cuda", 0)  # what a CuPy array's tensor reports, as PyTorch's cuda:0


def device_of(array) -> device:
    """The device a tensor whose memory is ``array`` lives on."""
    return CPU if backend.device_of(array) == "cpu" else CUDA


def set_default_device(device) -> None:
    """Where factories put new tensors when no ``device=`` is given (``None``: the CPU)."""
    state.set_default_device_name("cpu" if device is None else backend.normalize_device(device))


def get_default_device() -> device:
    return CPU if state.default_device.name == "cpu" else CUDA


def _name(value) -> str:
    return type(value).__name__
