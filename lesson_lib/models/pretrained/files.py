"""Weights packages: find one, and turn a missing or different file into a Chinese ``WeightsFileError``."""

import contextlib
import hashlib
import importlib.util
import mmap
from pathlib import Path


class WeightsFileError(ValueError):
    """A weights-package file is missing or not the one this lesson was checked against; says how to reinstall."""


def load_or_explain(load, available, install_hint, model_name):
    """``load()``, or None after printing in Chinese why not: the notebook runs on to the end either way."""
    if not available():
        print(install_hint())
        return None
    try:
        return load()
    except WeightsFileError as exc:
        print(f"{model_name}没有载入：{exc}\n用到它的单元格会跳过真实模型的部分，笔记本其余部分照常运行。")
        return None


def package_dir(module_name):
    """Folder of an installed package, found without importing it (None when it is not installed)."""
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec(module_name)
        if spec is not None and spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations)))
    return None


def sha256_of(path):
    """Hex sha256 of a file, hashed from a memory map (tens of ms for ~90 MB with SHA-NI)."""
    if Path(path).stat().st_size == 0:  # mmap refuses empty files; an empty file still has a hash
        return hashlib.sha256().hexdigest()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return hashlib.sha256(view).hexdigest()


def verify(path, expected, reinstall):
    """The file must exist and hash to ``expected`` (a notebook loads each model once: no cache)."""
    if not Path(path).is_file():
        raise WeightsFileError(f"找不到 {path}：权重包不完整。请重新安装：{reinstall}")
    actual = sha256_of(path)
    if actual != expected:
        raise WeightsFileError(f"权重文件 {path} 的 sha256 是 {actual}，\n与本课核对过的 {expected} 不一致："
                               f"文件可能损坏，或者不是本课用的那个版本。\n请重新安装：{reinstall}")

