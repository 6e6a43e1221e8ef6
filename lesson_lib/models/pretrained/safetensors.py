"""safetensors files on a memory map: every kernel on a machine shares the same pages of the weights.

The ``safetensors`` library's NumPy API copies the whole file into memory (about 150 ms and 91 MB per
kernel for §6's English model; this reader takes under a millisecond and lets a classroom's kernels
share one copy in the page cache), so the format is read here; tests check it against the library.

Format: 8-byte little-endian header length N, N bytes of JSON
``{name: {"dtype", "shape", "data_offsets": [begin, end]}}``, then the raw tensor bytes (offsets count
from the end of the header).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from lesson_lib.models.pretrained.files import WeightsFileError

__all__ = ["read_safetensors"]

_SAFETENSORS_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
    "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?",
}  # fmt: skip


def read_safetensors(path):
    """{name: read-only array} backed by one memmap of the file; a broken file raises WeightsFileError."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        raw_len = f.read(8)
        if len(raw_len) < 8:
            raise WeightsFileError(f"{path} 只有 {size} 字节，不是 safetensors 文件：请重新安装权重包。")
        header_len = int.from_bytes(raw_len, "little")
        if header_len <= 0 or 8 + header_len > size:
            raise WeightsFileError(
                f"{path} 的头部长度字段是 {header_len}，超出了文件大小 {size} 字节：文件已损坏，请重新安装权重包。"
            )
        try:
            header = json.loads(f.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise WeightsFileError(f"{path} 的 JSON 头部无法解析（{exc}）：文件已损坏，请重新安装权重包。") from None
    if not isinstance(header, dict):
        raise WeightsFileError(f"{path} 的 JSON 头部不是「名字 → 张量信息」的字典：文件已损坏，请重新安装权重包。")
    header.pop("__metadata__", None)
    buffer = np.memmap(path, dtype=np.uint8, mode="r")  # (size,) bytes; pages load on first touch
    body = 8 + header_len
    tensors = {}
    for name, info in header.items():
        tensors[name] = _tensor_view(buffer, body, name, info, path)
    return tensors


def _tensor_view(buffer, body, name, info, path):
    try:
        dtype_name, shape, (begin, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise WeightsFileError(
            f"{path} 里张量 {name} 的头部信息 {info!r} 缺少 dtype / shape / data_offsets："
            "文件已损坏，请重新安装权重包。"
        ) from None
    dtype = _SAFETENSORS_DTYPES.get(dtype_name)
    if dtype is None:
        raise WeightsFileError(f"{path} 里的张量 {name} 的类型 {dtype_name!r} 不受支持：本课只读取浮点数和整数张量。")
    expected = math.prod(shape) * np.dtype(dtype).itemsize
    if end - begin != expected or body + end > buffer.size:
        raise WeightsFileError(
            f"{path} 里的张量 {name} 声明形状 {shape}（{expected} 字节），但数据区是 {end - begin} 字节"
            f"或越过了文件末尾：文件已损坏，请重新安装权重包。"
        )
    arr = buffer[body + begin : body + end].view(dtype).reshape(shape)
    if not arr.flags.aligned:  # BLAS needs aligned floats; safetensors normally guarantees it
        arr = arr.copy()
    return arr

