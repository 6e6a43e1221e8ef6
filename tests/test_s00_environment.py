"""lesson_lib.sections.s00_environment: the section-0 check is silent when all is well and names the fix when not."""

from __future__ import annotations

import contextlib
import sys
from importlib import metadata
from pathlib import Path

import pytest
from helpers import scaled

from lesson_lib.sections import s00_environment as env

REQUIRED_DISTS = ["numpy", "matplotlib", "ipywidgets", "jupyterlab_widgets"]


@pytest.fixture
def healthy(monkeypatch):
    """Every package present at a new enough version."""
    monkeypatch.setattr(metadata, "version", lambda dist: "99.12.3")
    return monkeypatch


def missing(monkeypatch, *dists):
    def version(dist):
        if dist in dists:
            raise metadata.PackageNotFoundError(dist)
        return "99.0"

    monkeypatch.setattr(metadata, "version", version)


def test_healthy_environment_has_no_problems(healthy):
    assert env.problems() == {}


def test_this_environment_passes():
    """The environment running the tests is a lesson environment: nothing needs fixing."""
    assert env.problems() == {}


@pytest.mark.parametrize("dist", REQUIRED_DISTS)
def test_missing_package_gives_install_hint(healthy, dist):
    missing(healthy, dist)
    found = env.problems()
    assert list(found) == [dist]
    assert dist in found[dist] and env.SETUP_HINT in found[dist]


def test_two_missing_packages_are_both_named(healthy):
    missing(healthy, "matplotlib", "ipywidgets")
    assert set(env.problems()) == {"matplotlib", "ipywidgets"}


def test_old_version_names_the_minimum(healthy):
    healthy.setattr(metadata, "version", lambda dist: "3.1.0rc1" if dist == "matplotlib" else "99.0")
    found = env.problems()
    assert list(found) == ["matplotlib"] and "3.10.7" in found["matplotlib"]


def test_prerelease_version_strings_parse(healthy):
    versions = {"numpy": "2.0.0rc1", "ipywidgets": "8.1", "matplotlib": "3.10.7rc1"}
    healthy.setattr(metadata, "version", lambda dist: versions.get(dist, "99.0"))
    assert env.problems() == {}


def test_unreadable_version_is_named_not_crashed(healthy):
    healthy.setattr(metadata, "version", lambda dist: "not-a-version" if dist == "numpy" else "99.0")
    found = env.problems()
    assert list(found) == ["numpy"] and "'not-a-version'" in found["numpy"]


def test_missing_font_package(healthy):
    healthy.setitem(sys.modules, "noto_cjk_sans_otc", None)  # `import noto_cjk_sans_otc` now raises ImportError
    found = env.problems()
    assert len(found) == 1 and "pip install noto-cjk-sans-otc" in next(iter(found.values()))  # one problem: the font


def test_check_prints_only_what_is_wrong(monkeypatch, capsys):
    from lesson_lib.runtime import blas
    from lesson_lib.show import plotting

    calls = []
    monkeypatch.setattr(blas, "fit_blas_to_cpus", lambda cpus=None: calls.append(("blas", cpus)))
    monkeypatch.setattr(plotting, "use_chinese_font", lambda: calls.append("font"))
    monkeypatch.setattr(env, "problems", lambda: {})
    assert env.check() is None and capsys.readouterr().out == ""
    monkeypatch.setattr(env, "problems", lambda: {"pkg": "pip install pkg"})
    env.check()
    out = capsys.readouterr().out.splitlines()
    assert "pkg" in out[0] and "pip install pkg" in out[0] and len(out) == 2
    assert calls == [("blas", 1), "font", ("blas", 1)]  # one BLAS thread (small matmuls); the font only if all is well


def test_check_with_matplotlib_missing_prints_instead_of_raising(healthy, capsys):
    """The font is set up through matplotlib and the font package: with one missing, §0 still prints what to install."""
    from lesson_lib.runtime import blas

    healthy.setattr(blas, "fit_blas_to_cpus", lambda cpus=None: None)
    healthy.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    missing(healthy, "matplotlib")
    env.check()
    out = capsys.readouterr().out
    assert "matplotlib" in out and env.SETUP_HINT in out


def test_first_cell_without_lesson_lib_speaks_chinese(tmp_path, monkeypatch, cells):
    """A kernel that cannot import lesson_lib gets the first cell's Chinese instructions, no English traceback,
    and Run All stops there (an error) instead of failing in every later cell."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    first = next(c for c in cells if c["kind"] == "code")  # the notebook's first code cell
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-no-lesson-lib.py").write_text("import sys\nsys.modules['lesson_lib'] = None\n", encoding="utf-8")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(first["source"]), nbformat.v4.new_code_cell("print('later cell ran')")]
    with pytest.raises(CellExecutionError):
        NotebookClient(nb, timeout=int(scaled(60)), kernel_name="python3").execute()
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
            declared[m.group(1).replace("-", "_").lower()] = m.group(2)
    minimum = {dist: floor for dist, (floor, _) in env.PACKAGES.items()}
    assert {dist: declared[dist] for dist in minimum} == minimum



def test_a_syntax_error_names_its_cell_line_and_still_stops_the_cell(tmp_path, monkeypatch, cells):
    """After the first cell, a cell that does not parse prints the line IPython's own display names (counted from
    the cell's first line), still fails (Run All stops), and a handler set before keeps its exceptions."""
    import re

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    earlier = "get_ipython().set_custom_exc((ZeroDivisionError,), lambda *a, **k: print('earlier-handler'))"
    first = next(c for c in cells if c["kind"] == "code")["source"]
    broken = {"SyntaxError": "def f(x):\n    y = x\n    retrun y\n", "IndentationError": "if True:\nx = 1\n"}
    nb = nbformat.v4.new_notebook()
    sources = [earlier, first, first, *broken.values(), "1 / 0"]  # the first cell twice: one handler, not two
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    client = NotebookClient(nb, timeout=int(scaled(60)), kernel_name="python3")
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            with pytest.raises(CellExecutionError) if index >= 3 else contextlib.nullcontext():
                client.execute_cell(cell, index)
    for cell, (name, source) in zip(nb.cells[3:5], broken.items(), strict=True):
        with pytest.raises(SyntaxError) as parsed:
            compile(source, "cell", "exec")
        [said, error] = cell.outputs
        assert error["output_type"] == "error" and error["ename"] == name
        assert said["name"] == "stdout" and said["text"].count("\n") == 1
        assert set(re.findall(r"\d+", said["text"])) == {str(parsed.value.lineno)}
        assert f"line {parsed.value.lineno}" in "\n".join(error["traceback"])  # IPython's own display stays
    assert [o.get("text") for o in nb.cells[5].outputs] == ["earlier-handler\n"]
