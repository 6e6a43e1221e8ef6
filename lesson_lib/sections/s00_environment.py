"""§0's check: set up fonts and BLAS threads, and speak only when something the lesson needs is missing.

No version numbers are printed, so the stored output is the same wherever the check passes. The optional
weights packages are left to §6, which says what it shows without them.
"""

from __future__ import annotations

import sys
from importlib import metadata

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


def _package_problem(dist: str) -> str | None:
    """What is wrong with ``dist`` (missing, unreadable version, older than MINIMUM), or None."""
    from packaging.version import InvalidVersion, Version

    purpose = PURPOSE[dist]
    try:
        found = Version(metadata.version(dist)).release[:3]
    except metadata.PackageNotFoundError:
        return f"没有安装 {dist}（{purpose}）。{SETUP_HINT}"
    except InvalidVersion:
        return f"{dist} 的版本号 {metadata.version(dist)!r} 无法识别（{purpose}）。{SETUP_HINT}"
    if found < MINIMUM[dist]:
        want = ".".join(map(str, MINIMUM[dist]))
        return f"{dist} 版本太旧（需要 ≥ {want}，{purpose}）。{SETUP_HINT}"
    return None


def problems() -> dict[str, str]:
    """{what: how to fix it} for everything the lesson needs that is missing; empty when all is well."""
    from lesson_lib.show.plotting import font_path

    found = {}
    if sys.version_info[:2] < MIN_PYTHON:
        found["Python"] = f"需要 Python ≥ {'.'.join(map(str, MIN_PYTHON))}：请用较新的 Python 重新创建虚拟环境。"
    for dist in PURPOSE:
        if message := _package_problem(dist):
            found[dist] = message
    try:
        font_path()
    except RuntimeError as exc:
        found["中文字体"] = str(exc)
    return found


def prepare() -> None:
    """Chinese glyphs in figures, and one BLAS thread: the lesson's matmuls are small, and a second thread only
    spins waiting (§6's sentences: 2 CPU-s with two threads, 0.15 with one). Harmless to call again."""
    from lesson_lib.runtime.blas import fit_blas_to_cpus
    from lesson_lib.show.plotting import use_chinese_font

    fit_blas_to_cpus(1)
    use_chinese_font()


def check() -> None:
    """§0's one call: set up fonts and threads, then print only what needs fixing."""
    prepare()
    if found := problems():
        print("\n".join(f"[需要处理] {name}：{message}" for name, message in found.items()))
        print("修好后用菜单「运行 → 重启内核并运行所有单元格」（Run → Restart Kernel and Run All Cells）。")
