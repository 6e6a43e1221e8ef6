"""§0's check: set up fonts and BLAS threads, and speak only when something the lesson needs is
missing (no version numbers, so the stored output is the same wherever it passes; the optional
weights packages are §6's)."""

import ast
import sys
from importlib import metadata

# dist: (the floor pyproject.toml and requirements.txt declare, what the lesson uses it for)
PACKAGES = {
    "numpy": ("1.26", "矩阵运算"),
    "matplotlib": ("3.10.7", "画注意力热力图"),
    "ipywidgets": ("8.1", "滑块与自测题控件"),
    "jupyterlab_widgets": ("3.0.10", "让 JupyterLab 把控件画出来，而不是只印出一行控件的名字"),
    "anywidget": ("0.11", "能用键盘和读屏软件操作的滑块"),
}
SETUP_HINT = "在课程根目录运行 README 里的安装命令（bash scripts/setup.sh），然后重启内核。"


def problems() -> dict[str, str]:
    """{what: how to fix it} for everything missing."""
    from packaging.version import InvalidVersion, Version

    from lesson_lib.show.plotting import font_path

    found = {}
    for dist, (minimum, purpose) in PACKAGES.items():
        try:
            if Version(metadata.version(dist)).release[:3] < Version(minimum).release:
                found[dist] = f"{dist} 版本太旧（需要 ≥ {minimum}，{purpose}）。{SETUP_HINT}"
        except metadata.PackageNotFoundError:
            found[dist] = f"没有安装 {dist}（{purpose}）。{SETUP_HINT}"
        except InvalidVersion:
            found[dist] = (f"{dist} 的版本号 {metadata.version(dist)!r} 无法识别（{purpose}）。"
                           f"{SETUP_HINT}")
    try:
        font_path()
    except RuntimeError as exc:
        found["中文字体"] = str(exc)
    return found


def check() -> None:
    """§0's one call: one BLAS thread (§6's sentences take 2 CPU-s with two threads, 0.15 with one)
    and Chinese glyphs in figures, or, when something is missing, what to fix."""
    from lesson_lib.runtime.blas import fit_blas_to_cpus
    from lesson_lib.show.plotting import use_chinese_font

    fit_blas_to_cpus(1)
    _explain_syntax_errors()
    # the font needs matplotlib and its font package: set up only when nothing is missing
    if found := problems():
        print("\n".join(f"[需要处理] {name}：{message}" for name, message in found.items()))
        print("修好后用菜单「运行 → 重启内核 和 运行所有单元格…」（Run → Restart Kernel and Run "
              "All Cells…）。")
    else:
        use_chinese_font()


def _explain_syntax_errors() -> None:
    """IPython parses a cell before any lesson code runs, so its syntax error is English only: the
    cell is parsed here first, for one Chinese line (its line as IPython's "line N", counted from
    the cell's first line); IPython's own display (its caret) follows, the cell fails as before."""
    shell = (ipython := sys.modules.get("IPython")) and ipython.get_ipython()
    if not shell or getattr(shell, "_lesson_syntax_hint", False):  # once: the cell may run again
        return

    def hint(info) -> None:
        try:
            ast.parse(shell.transform_cell(info.raw_cell))
        except SyntaxError as error:
            check = ("拼错的关键字（如 retrun）、中文标点（如 ，）、漏掉的冒号、"
                     "没配对的括号或引号、缩进")
            if isinstance(error, IndentationError):
                check = "缩进：冒号结尾那行的下一行要多缩进，同一层的空格要一样多"
            print(f"[语法错误] 下面英文报错所指的第 {error.lineno} 行（开头的空行不算）："
                  f"请检查{check}。")
        except Exception:  # a cell IPython cannot transform: it says so itself
            pass

    shell.events.register("pre_run_cell", hint)
    shell._lesson_syntax_hint = True
