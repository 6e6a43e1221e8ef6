"""safetensors files on a memory map: every kernel on a machine shares the same pages of the weights.

The ``safetensors`` library's NumPy API copies the whole file (about 150 ms and 91 MB per kernel for §6's
English model; this takes under a millisecond), so the format is read here; tests check it against the library.
Format: u64 header length N, N bytes of JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}}``,
then the tensors' bytes (offsets count from the end of the header).
"""

import json
import math

import numpy as np

from lesson_lib.models.pretrained.files import broken

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
           "U8": "u1", "BOOL": "?"}  # fmt: skip


def read_safetensors(path, reinstall="它所在的权重包"):
    """{name: read-only array} backed by one memmap of the file; a broken file raises WeightsFileError."""
    try:
        buffer = np.memmap(path, dtype=np.uint8, mode="r")  # (size,) bytes; pages load on first touch
        body = 8 + int(buffer[:8].view("<u8")[0])
        header = json.loads(bytes(buffer[8:body]))
        header.pop("__metadata__", None)
        tensors = {}
        for name, info in header.items():
            dtype, shape, (begin, end) = np.dtype(_DTYPES[info["dtype"]]), tuple(info["shape"]), info["data_offsets"]
            if end - begin != math.prod(shape) * dtype.itemsize or body + end > buffer.size:
                raise ValueError(f"张量 {name} 的形状 {shape} 与数据区 [{begin}, {end}) 不符，或越过了文件末尾")
            tensors[name] = buffer[body + begin : body + end].view(dtype).reshape(shape)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise broken(path, exc, reinstall) from None
    return tensors
