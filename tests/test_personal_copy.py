"""The learner's personal copy: made once, never overwritten, git-ignored, renewed only on request."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("personal_copy", ROOT / "scripts" / "personal_copy.py")
personal_copy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(personal_copy)


def _repo(tmp_path) -> Path:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / personal_copy.LESSON).write_text('{"cells": []}', encoding="utf-8")
    return tmp_path


def test_first_open_makes_the_copy_and_later_opens_keep_it(tmp_path):
    root = _repo(tmp_path)
    path, made = personal_copy.ensure_copy(root)
    assert path == root / "my_lesson" / "day11_multi_head_attention.ipynb" and path.is_file()
    reopen = personal_copy.REOPEN_LINE.format(copy=path.relative_to(root))
    assert str(path.relative_to(root)) in made and made != reopen  # names the copy it made
    path.write_text("the learner's own run", encoding="utf-8")
    again, line = personal_copy.ensure_copy(root)
    assert again == path and path.read_text(encoding="utf-8") == "the learner's own run" and line == reopen


def test_an_updated_lesson_is_announced_not_forced(tmp_path):
    root = _repo(tmp_path)
    path, _ = personal_copy.ensure_copy(root)
    path.write_text("mine", encoding="utf-8")
    (root / personal_copy.LESSON).write_text('{"cells": [1]}', encoding="utf-8")
    _, line = personal_copy.ensure_copy(root)
    reopen = personal_copy.REOPEN_LINE.format(copy=path.relative_to(root))
    assert line.startswith(reopen) and line != reopen  # the reopen line, and a notice after it
    assert "scripts/personal_copy.py --fresh" in line and path.read_text(encoding="utf-8") == "mine"


def test_fresh_copy_keeps_the_old_one(tmp_path):
    root = _repo(tmp_path)
    path, _ = personal_copy.ensure_copy(root)
    path.write_text("mine", encoding="utf-8")
    new, line = personal_copy.fresh_copy(root)
    kept = [p for p in new.parent.glob("day11_multi_head_attention-*.ipynb")]
    assert new.read_text(encoding="utf-8") == '{"cells": []}' and len(kept) == 1
    assert kept[0].read_text(encoding="utf-8") == "mine" and str(kept[0].relative_to(root)) in line


def test_the_copy_is_ignored_by_git_and_setup_opens_it():
    ignored = subprocess.run(["git", "check-ignore", "-q", "my_lesson/day11_multi_head_attention.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "scripts/personal_copy.py --open" in setup
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "my_lesson/day11_multi_head_attention.ipynb" in readme and "personal_copy.py --fresh" in readme


def test_the_cli_prints_the_path(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "personal_copy.py"), "--help"], capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert "--fresh" in out.stdout


def test_lab_serves_the_whole_course_and_opens_the_copy(tmp_path):
    root = _repo(tmp_path)
    path, _ = personal_copy.ensure_copy(root)
    argv, lines = personal_copy.lab_command(path, root, as_root=False, port=8765, token="abc", browser=True)
    assert argv[1:4] == ["lab", f"--ServerApp.root_dir={root}", "my_lesson/day11_multi_head_attention.ipynb"]
    assert argv[0] == str(Path(sys.executable).with_name("jupyter"))
    assert {"--ServerApp.log_level=WARN", "--ServerApp.port=8765", "--ServerApp.port_retries=0"} <= set(argv)
    assert "--no-browser" not in argv and "--allow-root" not in argv
    # one line, with the full URL of the copy, token included
    urls = re.findall(r"https?://\S+", lines[0])
    assert len(lines) == 1 and urls == ["http://localhost:8765/lab/tree/my_lesson/day11_multi_head_attention.ipynb"
                                        "?token=abc"]
    argv, _ = personal_copy.lab_command(path, root, as_root=False, port=8765, browser=False)
    assert "--no-browser" in argv  # no browser to open: no English warning about it, the URL line is enough


def test_as_root_it_says_why_in_one_chinese_line_and_allows_root(tmp_path):
    root = _repo(tmp_path)
    path, _ = personal_copy.ensure_copy(root)
    argv, lines = personal_copy.lab_command(path, root, as_root=True, port=8765)
    assert argv[-1] == "--allow-root" and argv.count("--allow-root") == 1
    notice = lines[0]
    assert len(lines) == 2 and "\n" not in notice and "root" in notice and "--allow-root" in notice
    assert personal_copy.lab_command(path, root, as_root=False, port=8765)[1] == lines[1:]  # not root: no notice


def test_readme_says_what_opens_and_keeps_the_pip_path_safe():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    chinese, english = readme.split("\n## English\n")
    for part in (chinese, english):
        assert "bash scripts/setup.sh" in part and "--allow-root" in part
        assert "my_lesson/day11_multi_head_attention.ipynb" in part and "lesson_lib/" in part
        assert "pip install -r requirements.txt -c constraints.txt" in part  # the tested versions
        assert "python scripts/personal_copy.py --open" in part  # the copy, not the tracked notebook
    first = re.search(r"```bash\n(.*?)\n```", chinese, re.S).group(1)
    assert first == "bash scripts/setup.sh"  # the first command, exactly as tests/test_fresh_clone.py runs it


def test_the_labs_are_copied_beside_the_lesson_and_never_overwritten(tmp_path):
    root = _repo(tmp_path)
    for lab in personal_copy.LABS:
        (root / lab).write_text('{"cells": ["lab"]}', encoding="utf-8")
    path, _ = personal_copy.ensure_copy(root)
    labs = [path.parent / lab.name for lab in personal_copy.LABS]
    assert all(p.read_text(encoding="utf-8") == '{"cells": ["lab"]}' for p in labs)
    labs[0].write_text("my lab run", encoding="utf-8")
    personal_copy.ensure_copy(root)
    assert labs[0].read_text(encoding="utf-8") == "my lab run"
    personal_copy.fresh_copy(root)  # a fresh start renames the learner's lab aside, like the lesson
    assert labs[0].read_text(encoding="utf-8") == '{"cells": ["lab"]}'
    assert [p.read_text(encoding="utf-8") for p in path.parent.glob(f"{labs[0].stem}-*.ipynb")] == ["my lab run"]
    # the other lab is byte for byte what the course writes: nothing of the learner's to keep aside
    assert list(path.parent.glob(f"{labs[1].stem}-*.ipynb")) == [] and labs[1].is_file()


def test_every_lab_the_build_knows_gets_a_personal_copy():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    labs = {notebook.relative_to(ROOT) for _, notebook, _ in build.NOTEBOOKS.values()} - {personal_copy.LESSON}
    assert labs == set(personal_copy.LABS)


NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"


def _real_repo(tmp_path, monkeypatch) -> Path:
    """A course folder with the real lesson, and Jupyter's signature store in tmp_path."""
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / personal_copy.LESSON).write_bytes(NOTEBOOK.read_bytes())
    return root


def _trusted(path: Path) -> bool:
    import nbformat
    from nbformat.sign import NotebookNotary

    return NotebookNotary().check_signature(nbformat.read(path, as_version=4))


def test_the_copy_is_signed_when_it_is_made_so_it_opens_trusted(tmp_path, monkeypatch):
    root = _real_repo(tmp_path, monkeypatch)
    assert not _trusted(root / personal_copy.LESSON)  # the tracked lesson is not signed here
    path, _ = personal_copy.ensure_copy(root)
    assert _trusted(path)
    new, _ = personal_copy.fresh_copy(root)
    assert _trusted(new)


def _edit(path: Path, cell_text: str) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(cell_text))
    nbformat.write(nb, path)


def test_on_a_hub_the_copy_is_made_in_the_home_and_kept_until_the_course_changes(tmp_path, monkeypatch):
    image = _real_repo(tmp_path, monkeypatch)  # the lesson as the image holds it
    home = tmp_path / "home"
    path, _ = personal_copy.update_copy(image, home)
    assert path == home / "my_lesson" / "day11_multi_head_attention.ipynb" and _trusted(path)
    _edit(path, "the student's own note")
    again, _ = personal_copy.update_copy(image, home)  # the next server start, same course
    assert again == path and "the student's own note" in path.read_text(encoding="utf-8")
    assert list(path.parent.glob("day11_multi_head_attention-*.ipynb")) == []


def test_on_a_hub_a_course_update_gives_a_new_copy_and_keeps_the_old(tmp_path, monkeypatch):
    image = _real_repo(tmp_path, monkeypatch)
    home = tmp_path / "home"
    progress = home / ".local/share/day11-multi-head-attention/progress.json"  # the student's answers
    progress.parent.mkdir(parents=True)
    progress.write_text('{"questions": {"Q1": {"answer": "B"}}}', encoding="utf-8")
    monkeypatch.setenv("LESSON_PROGRESS_FILE", str(progress))
    path, _ = personal_copy.update_copy(image, home)
    _edit(path, "the student's own note")
    _edit(image / personal_copy.LESSON, "a course update")
    new, _ = personal_copy.update_copy(image, home)
    # the update touches no answer: progress.py keeps answers to changed questions as an earlier version's
    assert progress.read_text(encoding="utf-8") == '{"questions": {"Q1": {"answer": "B"}}}'
    assert new == path and "a course update" in new.read_text(encoding="utf-8") and _trusted(new)
    (old,) = path.parent.glob("day11_multi_head_attention-*.ipynb")
    assert "the student's own note" in old.read_text(encoding="utf-8")  # nothing of the student's is lost
    import nbformat

    first = nbformat.read(new, as_version=4).cells[0]
    assert first.cell_type == "markdown" and old.name in first.source  # the notice names where the old copy is
    personal_copy.update_copy(image, home)  # the next start: no second notice, no second renaming
    assert len(list(path.parent.glob("day11_multi_head_attention-*.ipynb"))) == 1


def test_on_a_hub_an_untouched_copy_is_simply_replaced(tmp_path, monkeypatch):
    image = _real_repo(tmp_path, monkeypatch)
    home = tmp_path / "home"
    path, _ = personal_copy.update_copy(image, home)
    _edit(image / personal_copy.LESSON, "a course update")
    personal_copy.update_copy(image, home)
    assert "a course update" in path.read_text(encoding="utf-8")
    assert list(path.parent.glob("day11_multi_head_attention-*.ipynb")) == []


SCRIPT = ROOT / "scripts" / "personal_copy.py"
NOTEBOOKS = (personal_copy.LESSON, *personal_copy.LABS)


def _small_course(tmp_path, monkeypatch) -> Path:
    """A course folder whose lesson and labs are small notebooks (one Markdown cell each, "<name> v1"), and
    Jupyter's signature store in tmp_path."""
    import nbformat

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    for notebook in NOTEBOOKS:
        cell = nbformat.v4.new_markdown_cell(f"{notebook.stem} v1")
        nbformat.write(nbformat.v4.new_notebook(cells=[cell]), root / notebook)
    return root


def _server_start(course: Path, home: Path) -> int:
    """What binder/start runs at each server start, its exit code (run here: a child would import nbformat anew
    for each start, ~2 CPU-s)."""
    return personal_copy.main(["--update", "--source", str(course), "--home", str(home)])


def _copies(home: Path) -> dict[str, bytes]:
    """Every notebook in the student's my_lesson/, kept-aside ones included, by name."""
    return {p.name: p.read_bytes() for p in (home / "my_lesson").glob("*.ipynb")}


def test_on_a_hub_a_course_update_of_one_lab_alone_replaces_that_untouched_lab(tmp_path, monkeypatch):
    course = _small_course(tmp_path, monkeypatch)
    home = tmp_path / "home"
    assert _server_start(course, home) == 0
    before = _copies(home)
    lab = personal_copy.LABS[0].name
    _edit(course / personal_copy.LABS[0], "a lab update")  # the lesson and the other lab unchanged
    assert _server_start(course, home) == 0
    after = _copies(home)
    assert set(after) == set(before)  # nothing kept aside: the student had not touched it
    assert after[lab] == (course / personal_copy.LABS[0]).read_bytes()  # the new lab, as the course has it
    assert {n: b for n, b in after.items() if n != lab} == {n: b for n, b in before.items() if n != lab}


def test_on_a_hub_a_lab_the_student_changed_is_kept_aside_and_the_new_one_names_it(tmp_path, monkeypatch, capsys):
    import nbformat

    course = _small_course(tmp_path, monkeypatch)
    home = tmp_path / "home"
    assert _server_start(course, home) == 0
    lab = home / "my_lesson" / personal_copy.LABS[1].name
    _edit(lab, "the student's own note")
    mine = lab.read_bytes()
    _edit(course / personal_copy.LABS[1], "a lab update")  # only this lab changed in the course
    capsys.readouterr()
    done = _server_start(course, home)
    (old,) = lab.parent.glob(f"{lab.stem}-*.ipynb")
    assert done == 0 and old.read_bytes() == mine  # the student's copy, byte for byte, not erased
    new = nbformat.read(lab, as_version=4)
    assert new.cells[0].cell_type == "markdown" and old.name in new.cells[0].source  # the notice names it
    assert new.cells[-1].source == "a lab update" and _trusted(lab)
    assert old.name in capsys.readouterr().out  # the terminal line too
    assert sorted(_copies(home)) == sorted([*(n.name for n in NOTEBOOKS), old.name])  # the lesson left alone
    again = _copies(home)
    assert _server_start(course, home) == 0 and _copies(home) == again  # the next start: nothing


def test_on_a_hub_a_copy_the_course_did_not_change_stays_as_the_student_has_it(tmp_path, monkeypatch):
    course = _small_course(tmp_path, monkeypatch)
    home = tmp_path / "home"
    assert _server_start(course, home) == 0
    folder = home / "my_lesson"
    for notebook in (personal_copy.LESSON, personal_copy.LABS[0]):
        _edit(folder / notebook.name, "the student's own note")
    lab = folder / personal_copy.LABS[0].name
    mine = lab.read_bytes()
    _edit(course / personal_copy.LESSON, "a lesson update")  # the labs unchanged
    assert _server_start(course, home) == 0
    assert len(list(folder.glob("day11_multi_head_attention-*.ipynb"))) == 1  # the lesson: the student's kept aside
    assert lab.read_bytes() == mine and list(folder.glob(f"{lab.stem}-*.ipynb")) == []  # the lab: left as it was


def test_on_a_hub_a_home_from_before_the_labs_had_stamps_loses_nothing(tmp_path, monkeypatch):
    course = _small_course(tmp_path, monkeypatch)
    home = tmp_path / "home"
    assert _server_start(course, home) == 0
    folder = home / "my_lesson"
    for stamp in folder.glob(".*.copied-from"):
        stamp.unlink()  # the labs' stamps: an older personal_copy.py wrote none
    lesson = (course / personal_copy.LESSON).read_bytes()
    (folder / personal_copy.STAMP).write_text(personal_copy._sha1(course / personal_copy.LESSON))  # its old form
    same = folder / personal_copy.LABS[1].name
    mtime = same.stat().st_mtime_ns
    _edit(course / personal_copy.LESSON, "a lesson update")
    _edit(course / personal_copy.LABS[0], "a lab update")  # LABS[1] unchanged
    assert _server_start(course, home) == 0
    assert list(folder.glob("day11_multi_head_attention-*.ipynb")) == []  # the old stamp: untouched, renewed
    assert (folder / personal_copy.LESSON.name).read_bytes() == (course / personal_copy.LESSON).read_bytes() != lesson
    # no stamp to tell whether the student changed it: kept aside rather than overwritten
    (old,) = folder.glob(f"{personal_copy.LABS[0].stem}-*.ipynb")
    assert b"a lab update" not in old.read_bytes()
    assert same.stat().st_mtime_ns == mtime and list(folder.glob(f"{same.stem}-*.ipynb")) == []  # identical: left


@pytest.mark.parametrize("argv", [
    ["--bogus"],  # unrecognized arguments
    ["--home"],  # expected one argument
    ["--update", "--source", "a", "--source"],
    ["--名字"],  # not ASCII, still argparse's message: translated
])
def test_a_wrong_command_line_is_refused_in_one_line_that_names_the_argument(argv):
    proc = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True)
    (line,) = proc.stderr.splitlines()  # one line, no usage block
    assert proc.returncode == 2 and argv[-1] in line and "--help" in line and not line.isascii()
    assert proc.stdout == ""


def test_a_course_folder_without_the_lesson_is_refused_and_nothing_is_made(tmp_path):
    course = tmp_path / "course"  # e.g. a hub admin's typo in --source
    course.mkdir()
    proc = subprocess.run([sys.executable, str(SCRIPT), "--update", "--source", str(course), "--home",
                           str(tmp_path / "home")], capture_output=True, text=True)  # fmt: skip
    (line,) = proc.stderr.splitlines()
    assert proc.returncode == 2 and str(course) in line and not (tmp_path / "home").exists()


def _parser() -> personal_copy.ChineseParser:
    parser = personal_copy.ChineseParser(prog="tool.py")
    parser.add_argument("mode", choices=["fast", "slow"])
    parser.add_argument("--out", required=True)
    return parser


@pytest.mark.parametrize(("argv", "named"), [
    (["medium", "--out", "x"], "medium"),  # invalid choice: the value refused, and the ones it takes
    (["fast"], "--out"),  # required
    ([], "mode"),
])
def test_argparse_errors_are_said_in_chinese_naming_the_argument(argv, named, capsys):
    with pytest.raises(SystemExit) as exit_:
        _parser().parse_args(argv)
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and named in line and not line.isascii()
    if named == "medium":
        assert "fast" in line and "slow" in line


@pytest.mark.parametrize("message", [
    "ambiguous option: --o could match --open, --only",  # argparse's, not in the table: quoted
    "没有叫 'x' 的笔记本；有的是：a、b",  # a script's own: kept as it is
])
def test_a_message_argparse_has_no_chinese_for_is_quoted_and_the_scripts_own_are_kept(message, capsys):
    with pytest.raises(SystemExit) as exit_:
        _parser().error(message)
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and message in line and line.startswith("tool.py")


@pytest.mark.parametrize(("script", "argv", "named"), [
    ("build_notebook.py", ["--only"], "--only"),  # expected at least one argument
    ("build_notebook.py", ["--check", "--bogus"], "--bogus"),
    ("build_notebook.py", ["no_such_lab", "--check"], "no_such_lab"),  # its own message, kept as it is
    ("class_report.py", ["--out"], "--out"),
])
def test_the_other_instructor_scripts_share_the_chinese_errors(script, argv, named):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / script), *argv], capture_output=True, text=True)
    (line,) = proc.stderr.splitlines()
    assert proc.returncode == 2 and named in line and line.startswith(script) and not line.isascii()
