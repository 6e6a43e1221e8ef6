"""The class report counts what the students' own progress files hold, planted through the lesson's real checker."""

import contextlib
import csv
import ctypes
import dataclasses
import errno
import importlib.util
import io
import json
import os
import pwd
import re
import select
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import scaled

from lesson_lib.practice import questions, quiz
from lesson_lib.practice.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("class_report", ROOT / "scripts" / "class_report.py")
class_report = importlib.util.module_from_spec(spec)
sys.modules["class_report"] = class_report  # dataclasses look their module up
spec.loader.exec_module(class_report)

RIGHT_Q2 = {"d_k": "32", "params": "不变"}
WRONG_Q2 = {"d_k": "64", "params": "不变"}  # d_k of h = 8 given for h = 16


def _answer(progress: Progress, qid: str, answer) -> None:
    feedback = quiz.check(qid, answer)
    assert not feedback.blank
    progress.record(feedback, answer)


def _exercise(progress: Progress, name: str, status: str, mistakes=()) -> None:
    result = SimpleNamespace(name=name, status=status, message="…", mistakes=tuple(mistakes), source=None)
    progress.record_exercise(result)


def _late_question() -> str:
    """A question the core notebook asks after §5 (so answering it means the student went on)."""
    asked = class_report.asked_in()
    return next(qid for qid, where in asked.items() if where > 5 and qid in questions.question_ids())


@pytest.fixture
def planted_class(_planted_once, tmp_path):
    """12 students: 7 first answer Q2 with 64 (then 32), 3 forget the transpose in split_heads, 2 stop after §5
    (Q2 is asked in the review at the end). A copy of their files in this test's own tmp_path, free to change."""
    shutil.copytree(_planted_once, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.fixture(scope="module")
def _planted_once(tmp_path_factory):
    """The planted class's files, answered once per module: answered and saved anew for each test that uses them,
    they cost 2.8 CPU-s of the fast set. Every test gets its own copy."""
    tmp_path = tmp_path_factory.mktemp("planted-class")
    late = _late_question()
    ids = questions.question_ids()
    early = next(qid for qid, where in class_report.asked_in().items() if where == 5 and qid in ids)
    s5_right = next(a for q, a, right in _answers() if q == early and right)
    for i in range(12):
        path = tmp_path / f"home{i:02d}" / "progress.json"
        progress = Progress(path)
        if i < 3:
            _exercise(progress, "split_heads", "wrong", ["transpose"])
        elif i < 6:
            _exercise(progress, "split_heads", "passed")
        _answer(progress, early, s5_right)
        if i >= 10:  # the last two stop after §5
            continue
        if i < 7:
            _answer(progress, "Q2", WRONG_Q2)
        _answer(progress, "Q2", RIGHT_Q2)
        if late != "Q2":
            _answer(progress, late, next(a for q, a, right in _answers() if q == late and right))
    return tmp_path


def _answers():
    """(question id, answer, right?) from the adversarial answer table the quiz tests use."""
    import quiz_answers

    return [(q, a, expected == "right") for q, a, expected, *_ in quiz_answers.TABLE]


def _csv(out: Path) -> list[dict]:
    with open(out / "class-report.csv", newline="", encoding="utf-8-sig") as f:  # -sig: the BOM Excel needs
        return list(csv.DictReader(f))


def _rows(out: Path) -> list[dict]:
    """The CSV's rows read by its Chinese header and names, each given back under the report's own ids (kind,
    item, measure, count, detail; "question", "first_right" …): a name not in the report's tables is a KeyError."""
    header = {said: key for key, said in class_report.CSV_HEADER.items()}
    kinds = {said: kind for kind, said in class_report.CSV_KINDS.items()}
    rows = []
    for said in _csv(out):
        row = {header[name]: value for name, value in said.items()}
        row["kind"] = kinds[row["kind"]]
        measures = {name: key for key, name in class_report.CSV_MEASURES.get(row["kind"], {}).items()}
        row["measure"] = measures.get(row["measure"], row["measure"])
        rows.append(row)
    return rows


def test_counts_equal_the_planted_ones(planted_class, tmp_path):
    report = class_report.build([str(planted_class)])
    assert report.n == 12
    q2 = report.questions["Q2"]
    assert (q2.answered, q2.first_right, q2.later_right, q2.never) == (10, 3, 7, 0)
    top_count, top_q, top_mistake, _, _ = report.misconceptions[0]
    assert (top_count, top_q, top_mistake) == (7, "Q2", "d_k=64")
    ex = report.exercises["split_heads"]
    assert (ex.tried, ex.passed, ex.failing, ex.mistakes["transpose"]) == (6, 3, 3, 3)
    last = max(class_report.asked_in()[q] for q in ("Q2", _late_question()))
    assert report.stopped[5] == 2 and report.stopped[last] == 10


def test_page_and_csv_say_the_same_numbers(planted_class, tmp_path):
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), "--out", str(out)]) == 0
    rows = _rows(out)
    got = {(r["kind"], r["item"], r["measure"]): int(r["count"]) for r in rows}
    assert got[("misconception", "Q2", "d_k=64")] == 7
    assert got[("exercise_mistake", "split_heads", "transpose")] == 3
    assert got[("stopped", "第 5 节", "students")] == 2
    page = (out / "class-report.html").read_text("utf-8")
    students = _dom(page).find_all("table")[-1].tbody.find_all("tr")  # the last table: one row per student
    labels = [row.td.get_text() for row in students]
    assert labels == class_report.build([str(planted_class)]).names and "home00" not in page  # numbered only
    assert got[("student", "学生 11", "last_section")] == 5
    named = tmp_path / "named"
    class_report.main([str(planted_class), "--out", str(named), "--names"])
    assert "home00" in (named / "class-report.html").read_text("utf-8")  # names only with --names
    pictures = _dom(page).select("[role=img]")
    assert len(pictures) == 2 and all(p.get("aria-label", "").strip() for p in pictures)  # each says what it shows


def test_what_the_csv_counts_is_named_by_the_pages_columns(planted_class, tmp_path, monkeypatch):
    """A spreadsheet of the CSV reads as the page does: each count of a question, an exercise or a student is named
    by the page's column that shows it (an exercise's passes, both together, is the one the page splits in two)."""
    monkeypatch.setattr(class_report, "recheck_with", lambda box: lambda name, source: True)
    out = tmp_path / "out"
    class_report.write(class_report.build([str(planted_class)], recheck=object()), out)
    columns = {th.get_text() for th in _dom((out / "class-report.html").read_text("utf-8")).find_all("th")}
    kind, measure = class_report.CSV_HEADER["kind"], class_report.CSV_HEADER["measure"]
    counted = {class_report.CSV_KINDS[k] for k in ("question", "lab_question", "exercise", "student")}
    named = {row[measure] for row in _csv(out) if row[kind] in counted}
    tables = [class_report.CSV_MEASURES[k] for k in ("question", "exercise", "student")]
    assert named == {said for table in tables for key, said in table.items() if key != "ticked"}  # nobody ticked
    assert named - columns == {class_report.CSV_MEASURES["exercise"]["passed"]}


def test_bad_files_are_skipped_with_a_line(planted_class, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "garbage.json").write_text("{not json", "utf-8")
    (bad / "other.json").write_text(json.dumps({"format": "another-course", "version": 1}), "utf-8")
    (bad / "newer.json").write_text(json.dumps({"format": "day11-progress", "version": 99}), "utf-8")
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("not yours", "utf-8")
    os.symlink(decoy, bad / "link.json")
    report = class_report.build([str(planted_class), str(bad)], warn=print)
    assert report.n == 12
    assert len(report.skipped) == 4
    assert decoy.read_text("utf-8") == "not yours"


def test_a_copy_or_a_hard_link_is_one_student_and_a_linked_folder_is_not_entered(planted_class, tmp_path_factory):
    first = sorted(planted_class.rglob("progress.json"))[0]
    (planted_class / "handed").mkdir()
    shutil.copy(first, planted_class / "handed" / "alice (1).json")  # the same file handed in again, renamed
    os.link(first, first.with_name("alice (2).json"))  # a hard link to the same file
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "progress.json"  # a file outside the class folder
    Progress(elsewhere).record_exercise(SimpleNamespace(name="split_heads", status="passed", message="…",
                                                        mistakes=(), source=None))
    os.symlink(elsewhere.parent, planted_class / "home00" / "linked")  # a link out of the folder
    lines = []
    report = class_report.build([str(planted_class)], warn=lines.append)
    assert report.n == 12 and report.exercises["split_heads"].passed == 3
    assert len(lines) == 2 and all("alice (" in line for line in lines)


def test_an_anonymous_page_lists_no_skipped_path(planted_class, tmp_path_factory):
    """A skipped file's path names its student (home00/…): the anonymous page counts the skipped files, the
    named page lists them."""
    handed = tmp_path_factory.mktemp("handed")
    shutil.copy(sorted(planted_class.rglob("progress.json"))[0], handed / "copy.json")
    pages = []
    for names in ((), ("--names",)):
        out = tmp_path_factory.mktemp("out")
        assert class_report.main([str(planted_class), str(handed), "--out", str(out), *names]) == 0
        pages.append(_dom((out / "class-report.html").read_text("utf-8")))
    anonymous, named = (_sections(str(p)) for p in pages)
    assert not any(str(planted_class) in n.get_text() for nodes in anonymous.values() for n in nodes)
    assert any(str(planted_class) in n.get_text() and "copy.json" in n.get_text() for n in list(named.values())[-1])


def test_one_malformed_file_never_stops_the_report(planted_class, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    deep = {"format": "day11-progress", "version": 2, "questions": {}, "exercises": {}}
    (bad / "deep.json").write_text(json.dumps(deep)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (bad / "latin1.json").write_bytes(b'{"format": "day11-progress", "name": "\xe9"}')
    os.mkfifo(bad / "fifo.json")  # reading it would block for ever
    os.mkdir(bad / "folder.json")
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), str(bad), "--out", str(out)]) == 0
    assert (out / "class-report.html").is_file() and len(_rows(out)) > 1
    lines = capsys.readouterr().err.splitlines()
    assert sorted(name for name in ("deep.json", "latin1.json", "fifo.json") if any(name in x for x in lines)) == [
        "deep.json", "fifo.json", "latin1.json"]
    assert len(lines) == 3  # one line each; a folder named *.json is searched, not read


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(planted_class, tmp_path):
    first = sorted(planted_class.rglob("progress.json"))[0]
    names = ["=1+2", "+1", "-1", "@SUM(1)", "\tA", "\rB"]
    for i, name in enumerate(names):  # files named by the student (--names shows the file's name)
        (tmp_path / "handed" / str(i)).mkdir(parents=True)
        copy = first.read_bytes() + b" " * i  # six students, not one file handed in six times
        (tmp_path / "handed" / str(i) / f"{name}.json").write_bytes(copy)
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "handed"), "--names", "--out", str(out)]) == 0
    rows = _rows(out)
    labels = {r["item"] for r in rows if r["kind"] == "student"}
    assert labels == {"'=1+2", "'+1", "'-1", "'@SUM(1)", "\\tA", "\\rB"}  # a tab or CR escaped: it runs nothing
    assert all(r["count"].isdigit() for r in rows)  # the report's own numbers are left as numbers


def _dom(page: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup(page, "html.parser")


def _sections(page: str) -> dict:
    """Each h2's text -> the elements after it, up to the next h2."""
    out, current = {}, None
    for node in _dom(page).main.find_all(recursive=False):
        if node.name == "h2":
            current = out.setdefault(node.get_text(), [])
        elif current is not None:
            current.append(node)
    return out


def test_the_page_shows_whole_stems_and_choice_texts_and_says_when_a_section_is_empty(tmp_path):
    path = tmp_path / "s" / "progress.json"
    right = next(a for q, a, is_right in _answers() if q == "Q2" and is_right)
    _answer(Progress(path), "Q2", right)  # one student, one right answer: most sections have nothing
    report = class_report.build([str(path)])
    dom = _dom(class_report.page(report))
    cells = [td.get_text() for td in dom.find_all("td")]
    for qid in questions.question_ids():  # every stem whole, as the question bank holds it
        assert questions.question(qid).prompt.removeprefix(qid).strip() in cells
    for qid in questions.question_ids():  # every choice whole, and why it is wrong
        for key, label, why in getattr(questions.question(qid).key, "options", ()):
            text = class_report.describe_mistake(questions.question(qid).key, f"option={key}")
            assert " ".join(label.split()) in text and why in text
    for heading, nodes in _sections(class_report.page(report)).items():
        assert any(n.get_text(strip=True) for n in nodes), heading  # a sentence, a table or a list
    assert not dom.find("svg") and dom.find_all("caption")  # captions kept


def test_a_students_file_name_is_text_on_the_page_never_markup(planted_class, tmp_path):
    first = sorted(planted_class.rglob("progress.json"))[0]
    (tmp_path / "handed").mkdir()
    shutil.copy(first, tmp_path / "handed" / "<img src=x onerror=alert(1)>.json")
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "handed"), "--names", "--out", str(out)]) == 0
    dom = _dom((out / "class-report.html").read_text("utf-8"))
    assert dom.find("img") is None and "<img src=x onerror=alert(1)>" in dom.get_text()


# Headless Chromium without its background work (network fetches, component updates, sync, GPU process): what the
# page looks like is the same, and the browser's start costs less CPU.
QUIET_CHROMIUM = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--disable-extensions"]


def test_the_page_reads_at_390px_without_sideways_scrolling(planted_class, tmp_path):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("没有 playwright")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("没有 chromium")
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), "--out", str(out)]) == 0
    widths = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[*QUIET_CHROMIUM], headless=True)
        try:
            for scheme in ("light", "dark"):
                context = browser.new_context(color_scheme=scheme, viewport={"width": 390, "height": 844})
                page = context.new_page()
                page.goto((out / "class-report.html").as_uri())
                widths[scheme] = page.evaluate("document.documentElement.scrollWidth")
                context.close()
        finally:
            browser.close()
    assert widths == {"light": 390, "dark": 390}


def test_answers_to_an_earlier_version_are_kept_apart(tmp_path):
    path = tmp_path / "s" / "progress.json"
    _answer(Progress(path), "Q2", WRONG_Q2)
    data = json.loads(path.read_text("utf-8"))  # as if the question changed after the student answered it
    entry = data["questions"]["Q2"]
    entry["question_version"] = "an-old-version"
    for attempt in entry["attempts"]:
        attempt["question_version"] = "an-old-version"
    path.write_text(json.dumps(data), "utf-8")
    report = class_report.build([str(path)])
    q2 = report.questions["Q2"]
    assert (q2.answered, q2.old, sum(q2.mistakes.values())) == (0, 1, 0)


def test_reading_never_changes_a_students_file(planted_class):
    files = sorted(planted_class.rglob("progress.json"))
    before = [f.read_bytes() for f in files]
    class_report.build([str(planted_class)])
    assert [f.read_bytes() for f in files] == before


def test_an_export_beside_its_progress_file_is_the_same_student(planted_class):
    for live in sorted(planted_class.rglob("progress.json"))[:3]:  # three students pressed 「导出进度」
        Progress(live).export()
    assert len(list(planted_class.rglob("progress-export.json"))) == 3
    report = class_report.build([str(planted_class)])
    assert report.n == 12 and report.questions["Q2"].answered == 10
    exports = class_report.build([str(p) for p in planted_class.rglob("progress-export.json")])
    assert exports.n == 3  # collected exports alone are read


def test_the_checkers_named_slips_reach_the_page_by_their_chinese_names(tmp_path, monkeypatch):
    from lesson_lib.sections import exercises

    def forgets_transpose(x, h):
        return x.reshape(x.shape[0], h, -1)

    def reshapes_straight(x, h):
        return x.reshape(h, x.shape[0], -1)

    def takes_strided_columns(x, h):
        return x.reshape(x.shape[0], -1, h).transpose(2, 0, 1)

    named = set()
    for i, slip in enumerate((forgets_transpose, reshapes_straight, takes_strided_columns)):
        monkeypatch.setenv("LESSON_PROGRESS_FILE", str(tmp_path / f"s{i}" / "progress.json"))
        named.update(exercises.check("split_heads", slip).mistakes)
    assert named == {"transpose", "reshape_without_transpose", "strided"}
    assert named <= set(exercises.MISTAKES)
    report = class_report.build([str(tmp_path)])
    shown = {m: text for _, item, m, text, _ in report.misconceptions if item == "split_heads"}
    assert {m: text.split("：")[0] for m, text in shown.items()} == {m: exercises.MISTAKES[m] for m in named}


# ------------------------------------------------------------------------------------------ --recheck's sandbox
def _isolated() -> bool:
    """The machine lets the sandbox make its namespaces (else the report refuses --recheck in one line)."""
    sandbox = class_report._sandbox_module()
    return subprocess.run([*sandbox.namespaces(), "true"], capture_output=True).returncode == 0


# The sandbox's user reads the stdlib, the environment's packages and lesson_lib wherever they sit (bound back
# read-only in its own mount namespace): only root can build that, and drop to nobody; CI runs as root.
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0 or not _isolated(),
                             reason="these hold the sandbox's root path (CI runs as root): not root here, or this "
                                    "machine does not allow namespaces (the report then refuses --recheck)")
RIGHT_SPLIT = """
def split_heads(x, h):
    n, d_model = x.shape
    return x.reshape(n, h, d_model // h).transpose(1, 0, 2)
"""


@pytest.fixture(scope="module")
def shared():
    """A folder any user can enter, outside every folder the sandbox covers (/tmp, /var/tmp, /dev/shm and the homes
    are fresh tmpfs in there), with ``guarded`` (root's, 0755: only root can write there) and ``open`` (0777)."""
    base = Path(tempfile.mkdtemp(dir="/run", prefix="recheck-test-"))
    base.chmod(0o755)
    (base / "guarded").mkdir(mode=0o755)
    (base / "open").mkdir()
    (base / "open").chmod(0o777)
    yield base
    shutil.rmtree(base)


@pytest.fixture(scope="module")
def secrets():
    """A file only root reads in root's home (as ~/.ssh/id_…), and a file anyone may read in a home anyone may enter
    (an instructor's /home/… on an older Debian): the sandbox's user must read neither."""
    home = Path(tempfile.mkdtemp(dir="/home", prefix="recheck-test-"))
    home.chmod(0o755)
    (home / "notes.txt").write_text("open to all\n")
    (home / "notes.txt").chmod(0o644)
    fd, key = tempfile.mkstemp(dir=Path.home(), prefix="recheck-test-")  # mode 600
    os.write(fd, b"secret\n")
    os.close(fd)
    yield [key, str(home / "notes.txt")]
    os.unlink(key)
    shutil.rmtree(home)


WRONG_SPLIT = "def split_heads(x, h):\n    return x\n"
IMPORTING = "import csv, statistics, wave\n"  # stdlib modules the supervisor never loaded: read as nobody


def _spying_on(source: str, shared: Path, secrets: list[str]) -> str:
    """A right split_heads whose module first tries to write where the sandbox's user must not, writes to /tmp,
    /var/tmp and /dev/shm (a link the report could write through, too), tries to read the ``secrets``, and dumps
    what that user sees (uid, folder, environment, limits, network interfaces, what it read) to ``open/seen.json``."""
    planted = [f"{folder}/{shared.name}" for folder in ("/tmp", "/var/tmp", "/dev/shm")]
    return f"""
import json, os, resource
for target in ({str(shared / "guarded" / "planted.txt")!r}, {str(shared / "open" / "planted.txt")!r}):
    try:
        with open(target, "w") as f:
            f.write("planted")
    except OSError:
        pass
for target in {planted!r}:  # where a student may write: no try, a refusal would fail the check
    with open(target, "w") as f:
        f.write("planted")
os.symlink({str(shared / "guarded")!r}, "/tmp/{shared.name}-link")
read = {{}}
for secret in {secrets!r}:
    try:
        read[secret] = open(secret).read()
    except OSError:
        read[secret] = None
limits = [resource.getrlimit(r)[0] for r in (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_NPROC,
                                             resource.RLIMIT_FSIZE)]
with open({str(shared / "open" / "seen.json")!r}, "w") as f:
    json.dump({{"uid": os.getuid(), "cwd": os.getcwd(), "files": os.listdir("."), "env": dict(os.environ),
               "limits": limits, "interfaces": [line.split(":")[0].strip() for line in open("/proc/net/dev")][2:],
               "read": read, "planted": [os.path.exists(p) for p in {planted!r}],
               "status": dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines())}}, f)
""" + source


def _detaching(fifo: Path) -> str:
    """A right split_heads whose module double-forks a process that leaves the session and holds ``fifo`` open.
    The import returns only once that process holds it: on a busy machine the check could otherwise end, and the
    sandbox with it, before the process opened the FIFO, and a FIFO no writer ever opened never reads to its end."""
    return f"""
import os, signal
held, holding = os.pipe()
first = os.fork()
if first == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open({str(fifo)!r}, os.O_WRONLY)
        os.write(fd, b"started\\n")
        os.write(holding, b"held")
        while True:
            signal.pause()
    os.close(holding)
    os.read(held, 4)
    os._exit(0)
os.waitpid(first, 0)
""" + RIGHT_SPLIT


def _knocking(path: Path, shmid: int, queue: str | None) -> str:
    """A right split_heads whose module first connects to ``path``, a Unix socket any user may write to, writes
    "knock" into the System V shared memory ``shmid`` and sends it to the POSIX message ``queue`` (by its path, as
    the machine's /dev/mqueue shows it to any namespace), each of mode 0666, and goes on whatever it got."""
    return f"""
import ctypes, os, socket
knock = None  # held until the module ends: the connection stays open while the check runs
try:
    knock = socket.socket(socket.AF_UNIX)
    knock.connect({str(path)!r})
except OSError:
    pass
libc = ctypes.CDLL(None)
libc.shmat.restype = ctypes.c_void_p
address = libc.shmat({shmid}, None, 0)
if address not in (None, 2**64 - 1):  # (void *) -1: no such segment here
    ctypes.memmove(address, b"knock", 5)
if {queue!r}:  # None: no /dev/mqueue on this machine
    try:
        ctypes.CDLL("librt.so.1").mq_send(os.open({queue!r}, os.O_WRONLY | os.O_NONBLOCK), b"knock", 5, 0)
    except OSError:  # no such queue here
        pass
""" + RIGHT_SPLIT


@pytest.fixture(scope="module")
def shared_memory():
    """A System V shared memory segment any user may write to (as a desktop's X11 MIT-SHM segments may be): its id,
    and its address in this process. Marked for removal at once: it goes when the last process detaches."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0, 4096, 0o1666)  # IPC_PRIVATE, IPC_CREAT | 0666: found by its id alone
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    address = libc.shmat(shmid, None, 0)
    libc.shmctl(shmid, 0, None)  # IPC_RMID: Linux still attaches a segment so marked
    yield shmid, address
    libc.shmdt(ctypes.c_void_p(address))


@pytest.fixture(scope="module")
def message_queue():
    """A POSIX message queue any user may send to, where the machine mounts them (systemd: /dev/mqueue); None on a
    machine without that mount."""
    mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    if ["/dev/mqueue", "mqueue"] not in [fields[1:3] for fields in mounts]:
        yield None
        return
    name = f"lesson-test-{os.getpid()}"
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    fd = rt.mq_open(f"/{name}".encode(), os.O_CREAT | os.O_EXCL | os.O_RDONLY, 0o666, None)
    assert fd >= 0, os.strerror(ctypes.get_errno())
    os.close(fd)
    os.chmod(f"/dev/mqueue/{name}", 0o666)  # past the umask
    yield f"/dev/mqueue/{name}"
    rt.mq_unlink(f"/{name}".encode())


def _forging(payload: bytes) -> str:
    """A wrong split_heads whose module writes ``payload`` to every fd it can reach, then waits (so that nothing
    would follow the forgery on a channel it reached)."""
    return f"""
import os, signal
for fd in range(256):
    try:
        os.write(fd, {payload!r})
    except OSError:
        pass
for folder in ("/proc/self/fd", f"/proc/{{os.getppid()}}/fd", "/proc/1/fd"):
    try:
        names = os.listdir(folder)
    except OSError:
        continue
    for name in names:
        try:
            fd = os.open(f"{{folder}}/{{name}}", os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, {payload!r})
            os.close(fd)
        except OSError:
            pass
signal.pause()

def split_heads(x, h):
    return x
"""


@pytest.fixture(scope="module")
def rechecked(tmp_path_factory, shared, secrets, shared_memory, message_queue):
    """One class whose students each stored a 'passed' split_heads, and ONE ``--recheck`` run over it: the sandbox
    is prepared once (it checks the reference solution first) and each student's source runs in a sandbox of its
    own, as in any class. The tests below read their own student's verdict (the sandbox's answer for that source,
    which decides the count) and the CSV's counts. Each student used to get a report of their own: ~2 CPU-s more."""
    folder = tmp_path_factory.mktemp("rechecked")
    marker = folder / "pickle-ran"  # root's alone: only the report's own process could make it
    sources = {"right": RIGHT_SPLIT, "wrong": WRONG_SPLIT, "spying": _spying_on(RIGHT_SPLIT, shared, secrets),
               "importing": IMPORTING + RIGHT_SPLIT, "forged verdict": _forging(b'{"passed": true}\n'),
               "forged pickle": _forging(f"cos\nsystem\n(S'touch {marker}'\ntR.".encode())}
    fifo = shared / "open" / "alive"
    os.mkfifo(fifo, 0o666)
    fifo.chmod(0o666)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # open before the writer: its open() waits for one
    sources["detached"] = _detaching(fifo)
    daemon = socket.socket(socket.AF_UNIX)  # as a daemon's under /run (D-Bus's system bus is 0666 too)
    daemon.bind(str(shared / "daemon.sock"))
    (shared / "daemon.sock").chmod(0o666)
    daemon.listen(8)
    shmid, address = shared_memory
    sources["knocking"] = _knocking(shared / "daemon.sock", shmid, message_queue)
    for student, source in sources.items():
        result = SimpleNamespace(name="split_heads", status="passed", message="…", mistakes=(), source=source)
        Progress(folder / "class" / student / "progress.json").record_exercise(result)
    verdicts = {}
    recheck_with = class_report.recheck_with

    def spied(box):
        confirm = recheck_with(box)

        def record(name, source):
            verdicts[source] = confirm(name, source)
            return verdicts[source]

        return record

    out = folder / "out"
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()) as printed:
        patch.setattr(class_report, "recheck_with", spied)
        status = class_report.main([str(folder / "class"), "--recheck", "--out", str(out)])
    said, closed = b"", False
    try:
        while select.select([reader], [], [], scaled(30))[0]:
            chunk = os.read(reader, 4096)
            if not chunk:  # every writer gone
                closed = True
                break
            said += chunk
    finally:
        os.close(reader)
    knocked = bool(select.select([daemon], [], [], 0)[0])  # a connection waits in its queue: none is accepted
    daemon.close()
    written = ctypes.string_at(address, 5)
    queued = message_queue and Path(message_queue).read_text().split()[0]  # "QSIZE:<bytes queued>"
    counts = {r["measure"]: int(r["count"]) for r in _rows(out) if r["item"] == "split_heads"}
    return SimpleNamespace(status=status, counts=counts, marker=marker, fifo_said=said, fifo_closed=closed,
                           knocked=knocked, written=written, queued=queued,
                           verdict={student: verdicts.get(source) for student, source in sources.items()},
                           printed=printed.getvalue())


@AS_ROOT
def test_recheck_confirms_a_real_pass_and_not_a_wrong_one(rechecked):
    assert rechecked.status == 0
    assert rechecked.verdict["right"] is True and rechecked.verdict["wrong"] is False
    students, refused = len(rechecked.verdict), list(rechecked.verdict.values()).count(False)
    assert (rechecked.counts["tried"], rechecked.counts["passed"]) == (students, students)
    assert rechecked.counts["unconfirmed"] == refused  # the wrong pass and the two forgeries


@AS_ROOT
def test_a_recheck_run_says_how_many_passes_ran_again_as_whom_and_how_many_did_not_repeat(rechecked):
    """The terminal's last line, after the report's: the passes run again, the sandbox's user, the passes that
    did not repeat and their students (one pass each here), the same numbers as the report's."""
    user = pwd.getpwnam("nobody").pw_name  # the default --recheck-user
    line = rechecked.printed.splitlines()[-1]
    refused = list(rechecked.verdict.values()).count(False)
    assert user in line
    numbers = [int(n) for n in re.findall(r"\d+", line.replace(user, ""))]
    assert numbers == [rechecked.counts["passed"], rechecked.counts["unconfirmed"], refused]


@AS_ROOT
@pytest.mark.parametrize("user", ["no-such-user-here", "root"])
def test_recheck_with_a_user_it_cannot_use_stops_before_reading_a_file(planted_class, tmp_path, user, monkeypatch):
    read = []
    monkeypatch.setattr(class_report, "build", lambda *a, **k: read.append(a))
    out = tmp_path / "report"
    assert class_report.main([str(planted_class), "--recheck", "--recheck-user", user, "--out", str(out)]) == 2
    assert read == [] and not out.exists()


@AS_ROOT
def test_a_students_code_runs_as_nobody_with_limits_in_an_empty_folder(rechecked, shared):
    assert rechecked.verdict["spying"] is True  # it ran, and passed
    assert not (shared / "guarded" / "planted.txt").exists()  # root's folder: not written
    assert (shared / "open" / "planted.txt").stat().st_uid != 0  # written, but not as root
    got = json.loads((shared / "open" / "seen.json").read_text("utf-8"))
    assert got["uid"] != 0 and got["files"] == [] and not Path(got["cwd"]).exists()  # empty, then removed
    assert set(got["env"]) <= {"PATH", "LANG", "PYTHONPATH", "HOME", "TMPDIR", "OPENBLAS_NUM_THREADS",
                               "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LC_CTYPE"}
    assert got["env"]["HOME"] == got["cwd"] and got["env"]["PYTHONPATH"] == str(ROOT)
    assert -1 not in got["limits"]  # RLIM_INFINITY: each of the four is limited
    assert got["interfaces"] == ["lo"]  # a network namespace of its own
    assert (got["status"]["NoNewPrivs"], got["status"]["Seccomp"]) == ("1", "2")  # setuid raises nothing; filtered


@AS_ROOT
def test_what_a_students_code_writes_to_tmp_stays_in_the_sandbox(rechecked, shared):
    """It wrote /tmp, /var/tmp and /dev/shm, and planted a link in /tmp (what a root-run report with --out in /tmp
    could write through): each a tmpfs of the sandbox's own, gone with it."""
    got = json.loads((shared / "open" / "seen.json").read_text("utf-8"))
    assert got["planted"] == [True, True, True]  # written, in there
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not os.path.lexists(f"{folder}/{shared.name}")
    assert not os.path.lexists(f"/tmp/{shared.name}-link")


@AS_ROOT
def test_a_right_pass_that_imports_the_stdlib_is_confirmed(rechecked):
    """The stdlib may sit where nobody can enter (/root/.pyenv): the sandbox binds it back read-only."""
    assert rechecked.verdict["importing"] is True


@AS_ROOT
def test_a_students_code_reads_no_home(rechecked, shared, secrets):
    got = json.loads((shared / "open" / "seen.json").read_text("utf-8"))
    assert got["read"] == {secret: None for secret in secrets}


@AS_ROOT
def test_recheck_refuses_when_the_sandboxs_user_cannot_import_the_stdlib(planted_class, tmp_path, monkeypatch):
    """The preflight imports a stdlib module the supervisor never loaded: with the stdlib hidden and not bound back,
    the reference solution no longer passes and --recheck stops, before an honest student is marked unconfirmed."""
    sandbox = class_report._sandbox_module()
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    needed, hidden = sandbox.needed, sandbox.hidden
    monkeypatch.setattr(sandbox, "needed", lambda: [p for p in needed() if p != stdlib])
    monkeypatch.setattr(sandbox, "hidden", lambda keep: sandbox.outermost({*hidden(keep), stdlib}))
    read = []
    monkeypatch.setattr(class_report, "build", lambda *a, **k: read.append(a))
    assert class_report.main([str(planted_class), "--recheck", "--out", str(tmp_path / "report")]) == 2
    assert read == []
    with pytest.raises(sandbox.Refused) as refused:
        sandbox.prepare(None, 5.0)
    assert refused.value.reason == "readable"  # the stdlib, not seccomp nor the namespaces


def _refusing(step: str) -> list:
    """What the supervisor writes when the machine refuses ``step`` (its own step(), on a pipe)."""
    sandbox = class_report._sandbox_module()
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as verdict, pytest.raises(SystemExit):
        with sandbox.step(verdict, step):
            raise OSError(errno.EINVAL, "refused")  # as prctl on a kernel without seccomp filters
    with os.fdopen(read_end, "rb") as said:
        return [json.loads(line) for line in said.read().splitlines()]


@pytest.mark.parametrize("machine, reason", [
    ({"steps": "seccomp"}, "seccomp"), ({"steps": "user"}, "user"), ({"steps": "namespaces"}, "namespaces"),
    ({"unshare": 1}, "namespaces"), ({"lines": [{"ready": True}, {"passed": False}]}, "readable"),
    ({"lines": []}, "silent")])  # fmt: skip
def test_recheck_names_the_requirement_this_machine_lacks(planted_class, tmp_path, monkeypatch, capsys, machine,
                                                          reason):
    """The preflight runs the reference solution in the sandbox: a kernel without seccomp filters, a container
    that forbids namespaces or a user switch, a user who cannot read the stdlib, a supervisor that never starts:
    each is named as itself (one line, exit 2, no file read), never blamed on another."""
    sandbox = class_report._sandbox_module()
    _as_root_on_x86(monkeypatch)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=machine.get("unshare", 0)))
    said = _refusing(machine["steps"]) if "steps" in machine else machine.get("lines")
    monkeypatch.setattr(sandbox, "run", lambda box, job: said)
    read = []
    monkeypatch.setattr(class_report, "build", lambda *a, **k: read.append(a))
    assert class_report.main([str(planted_class), "--recheck", "--out", str(tmp_path / "report")]) == 2
    assert read == [] and len(capsys.readouterr().err.splitlines()) == 1
    with pytest.raises(sandbox.Refused) as refused:
        sandbox.prepare(None, 5.0)
    assert refused.value.reason == reason


def test_recheck_starts_when_the_reference_passes(monkeypatch):
    sandbox = class_report._sandbox_module()
    _as_root_on_x86(monkeypatch)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=0))
    monkeypatch.setattr(sandbox, "run", lambda box, job: [{"ready": True}, {"passed": True}])
    assert sandbox.prepare(None, 5.0).uid == 65534


def _as_root_on_x86(monkeypatch) -> None:
    """Root, on a machine the seccomp filter knows, with a user nobody (uid 65534): only the probes vary."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "uname", lambda: SimpleNamespace(machine="x86_64"))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: SimpleNamespace(pw_uid=65534, pw_gid=65534, pw_name=name))


@pytest.mark.parametrize("flags", [["--recheck"], ["--recheck", "--recheck-user", "nobody"],
                                   ["--recheck-user", "nobody"]])
def test_recheck_as_another_user_than_root_is_refused_before_anything_runs(planted_class, tmp_path, flags,
                                                                          monkeypatch, capsys):
    """Not root, the students' code could only run with the caller's own rights (their home, their keys): one line,
    exit 2, no sandbox started, no file read."""
    sandbox = class_report._sandbox_module()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    started, read = [], []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a))
    monkeypatch.setattr(class_report, "build", lambda *a, **k: read.append(a))
    out = tmp_path / "report"
    assert class_report.main([str(planted_class), *flags, "--out", str(out)]) == 2
    assert (started, read) == ([], []) and not out.exists()
    assert len(capsys.readouterr().err.splitlines()) == 1
    with pytest.raises(ValueError):
        sandbox.prepare(None, 5.0)  # called directly, too
    assert started == []


def test_recheck_on_a_machine_whose_syscall_numbers_it_lacks_is_refused(planted_class, tmp_path, monkeypatch,
                                                                         capsys):
    """The seccomp filter names socket(2) by its number, known on x86_64 and aarch64: elsewhere the student's code
    could reach the machine's Unix sockets, so nothing runs (one line, exit 2)."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "uname", lambda: SimpleNamespace(machine="riscv64"))
    started, read = [], []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a))
    monkeypatch.setattr(class_report, "build", lambda *a, **k: read.append(a))
    out = tmp_path / "report"
    assert class_report.main([str(planted_class), "--recheck", "--out", str(out)]) == 2
    assert (started, read) == ([], []) and not out.exists()
    assert "riscv64" in capsys.readouterr().err  # the line names the machine


@pytest.mark.parametrize("euid", [0, 1000])
def test_recheck_user_without_recheck_is_refused_before_anything_is_read(planted_class, tmp_path, euid,
                                                                         monkeypatch, capsys):
    """--recheck-user alone would change nothing: as root too, it is refused (one line, exit 2), never a report
    written without the recheck the instructor seemed to ask for."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    started, read = [], []
    monkeypatch.setattr(class_report._sandbox_module(), "prepare", lambda *a, **k: started.append(a))
    monkeypatch.setattr(class_report, "build", lambda *a, **k: read.append(a))
    out = tmp_path / "report"
    assert class_report.main([str(planted_class), "--recheck-user", "nobody", "--out", str(out)]) == 2
    assert (started, read) == ([], []) and not out.exists()
    assert len(capsys.readouterr().err.splitlines()) == 1


@AS_ROOT
def test_a_detached_process_does_not_outlive_the_report(rechecked):
    """The planted code double-forks a process that leaves the session and holds a FIFO open for writing: the
    FIFO reads to its end (every writer gone) once the report has returned."""
    assert rechecked.fifo_closed, "the planted process still holds the FIFO after the report ended"
    assert rechecked.fifo_said == b"started\n"  # it did start


@AS_ROOT
def test_a_students_code_connects_to_no_unix_socket(rechecked):
    """A daemon's socket under /run that any user may write to (as D-Bus's system bus and CUPS's are): the student's
    code tried to connect, then passed (it ran); the listener got no connection."""
    assert rechecked.verdict["knocking"] is True
    assert not rechecked.knocked


@AS_ROOT
def test_a_students_code_writes_no_shared_memory_of_the_machine(rechecked):
    """System V IPC (a segment of mode 0666) is the machine's unless the sandbox has its own IPC namespace: the
    same student's code wrote into one by its id, then passed; the segment holds nothing."""
    assert rechecked.verdict["knocking"] is True
    assert rechecked.written == bytes(5)


@AS_ROOT
def test_a_students_code_sends_to_no_message_queue_of_the_machine(rechecked):
    """POSIX message queues are reached by path too, where the machine mounts them: the sandbox's /dev/mqueue is an
    empty tmpfs of its own. The same student's code sent to one (mode 0666), then passed; the queue holds nothing."""
    if rechecked.queued is None:
        pytest.skip("no mqueue file system mounted at /dev/mqueue on this machine: nothing to reach there")
    assert rechecked.verdict["knocking"] is True
    assert rechecked.queued == "QSIZE:0"


@AS_ROOT
@pytest.mark.parametrize("forged", ["verdict", "pickle"])
def test_forged_answers_on_every_fd_neither_run_nor_confirm(rechecked, forged):
    """A wrong function whose module writes a forged JSON verdict, or a crafted pickle, to every fd it can reach,
    then waits (so that nothing would follow the forgery on a channel it reached)."""
    assert rechecked.verdict[f"forged {forged}"] is False
    assert not rechecked.marker.exists()


# ------------------------------------------------------------------------------------- what a real class hands in
def _retried_class(folder: Path) -> None:
    """3 forget the transpose, then fix it; 2 pass, then run the stub again (Restart & Run All, or a fresh copy);
    1 never passes. The interview: one ticks a point of the rubric and a text of their own."""
    for i in range(6):
        progress = Progress(folder / f"s{i}" / "progress.json")
        if i < 3:
            _exercise(progress, "split_heads", "wrong", ["transpose"])
            _exercise(progress, "split_heads", "passed")
        elif i < 5:
            _exercise(progress, "split_heads", "passed")
            _exercise(progress, "split_heads", "todo")
        else:
            _exercise(progress, "split_heads", "wrong", ["strided"])


def test_a_mistake_fixed_later_is_counted_once_per_student_and_a_pass_stays(tmp_path):
    _retried_class(tmp_path)
    report = class_report.build([str(tmp_path)])
    ex = report.exercises["split_heads"]
    assert (ex.tried, ex.first_right, ex.later_right, ex.failing) == (6, 2, 3, 1)
    assert (ex.mistakes["transpose"], ex.mistakes["strided"]) == (3, 1)
    assert (3, "split_heads", "transpose") in [m[:3] for m in report.misconceptions]
    assert [row.passed for row in report.students] == [1, 1, 1, 1, 1, 0]


def test_only_the_rubrics_own_points_are_counted(tmp_path):
    points = [p.name for p in questions.question("面试").key.points]
    progress = Progress(tmp_path / "s" / "progress.json")
    progress.record(quiz.assess("面试", points[:1]), "…", of=len(points))
    data = json.loads(progress.path.read_text("utf-8"))
    data["interview"]["attempts"][-1]["covered"].append("我自己加的一点")  # ticked text the rubric never had
    q1 = questions.question("Q1")
    progress.path.write_text(json.dumps(data), "utf-8")
    other = Progress(tmp_path / "t" / "progress.json")
    other.record(quiz.assess("Q1", [q1.key.points[0].name]), "…", of=len(q1.key.points))
    data = json.loads(other.path.read_text("utf-8"))
    data["questions"]["Q1"]["attempts"][-1]["covered"].append("不是要点")
    other.path.write_text(json.dumps(data), "utf-8")
    report = class_report.build([str(tmp_path)])
    assert report.interview == (1, {points[0]: 1})
    assert dict(report.questions["Q1"].covered) == {q1.key.points[0].name: 1}


def test_answers_to_an_earlier_version_kept_in_format_3_are_counted_apart_never_right(tmp_path):
    path = tmp_path / "s" / "progress.json"
    progress = Progress(path)
    progress.record(dataclasses.replace(quiz.check("Q2", RIGHT_Q2), version="an-old-version"), "32")
    progress.record(quiz.check("Q2", WRONG_Q2), "64")  # the question changed: the right answer is an earlier one's
    assert json.loads(path.read_text("utf-8"))["earlier"]["Q2"][0]["solved"]
    q2 = class_report.build([str(path)]).questions["Q2"]
    assert (q2.answered, q2.first_right, q2.later_right, q2.never, q2.old) == (1, 0, 0, 1, 1)


FIXTURES = Path(__file__).parent / "fixtures"


def test_every_format_the_lesson_has_written_is_read(tmp_path):
    v1 = {"format": "day11-progress", "version": 1, "questions": {"Q2": {"answer": "32", "attempts": 1,
          "solved": True, "last": "right", "history": [["32", "right"]]}},
          "exercises": {"split_heads": {"status": "passed", "message": "全部通过！", "checks": 1}}, "interview": {}}
    (tmp_path / "v1.json").write_text(json.dumps(v1), "utf-8")
    (tmp_path / "v2.json").write_bytes((FIXTURES / "progress-v2.json").read_bytes())  # the lesson's own, 41abdf7
    _answer(Progress(tmp_path / "v3" / "progress.json"), "Q2", RIGHT_Q2)
    report = class_report.build([str(tmp_path)], warn=pytest.fail)
    assert report.n == 3 and report.exercises["split_heads"].passed == 2
    assert report.questions["Q2"].old + report.questions["Q2"].answered == 3  # v1's answer: an earlier version's


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _malformed() -> dict[str, bytes]:
    """File name -> content: each a student's file with one field of the wrong type or size."""
    base = {"format": "day11-progress", "version": 3, "questions": {}, "exercises": {}, "interview": {}}
    attempt = {"answer": "32", "verdict": "right", "mistake": None, "question_version": None}
    item = {"attempts": [attempt], "n_attempts": 1, "question_version": None, "first_try": "right",
            "final": "right", "solved": True, "answer": "32"}  # fmt: skip
    check = {"checks": [{"result": "passed", "mistakes": []}], "n_checks": 1, "passed": True, "result": "passed",
             "message": "", "mistakes": [], "source": None, "passed_source": None}  # fmt: skip
    bad = {
        "number-for-list": {"questions": {"Q2": {**item, "attempts": 5}}},
        "list-for-string": {"questions": {"Q2": {**item, "attempts": [{**attempt, "verdict": ["right"]}]}}},
        "huge-string": {"exercises": {"split_heads": {**check, "mistakes": ["x" * 1_000_000]}}},
        "lone-surrogate": {"questions": {"Q2": {**item, "attempts": [{**attempt, "mistake": "d_k=\ud800"}]}}},
        "v2-number-for-list": {"version": 2, "exercises": {"split_heads": {"result": "wrong", "checks": 1,
                                                                           "mistakes": 7}}},
        "bool-for-count": {"exercises": {"split_heads": {**check, "n_checks": True}}},
        "earlier-not-a-list": {"earlier": {"Q2": item}},
    }
    out = {name: json.dumps({**base, **fields}) for name, fields in bad.items()}
    out["deep"] = json.dumps(base)[:-1] + f', "x": {_deep(100_000)}}}'  # RecursionError in json.loads
    out["root-is-a-list"] = "[]"
    out = {name: text.encode() for name, text in out.items()}
    out["not-utf8"] = b'{"format": "day11-progress", "version": 3, "x": "\xff"}'
    return out


def test_each_malformed_file_is_one_line_and_the_rest_are_counted(planted_class, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name, content in _malformed().items():
        (bad / f"{name}.json").write_bytes(content)
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), str(bad), "--out", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    named = [[name for name in _malformed() if str(bad / f"{name}.json") in line] for line in lines]
    assert sorted(names[0] for names in named) == sorted(_malformed()) and all(len(n) == 1 for n in named)
    assert (out / "class-report.html").exists() and _rows(out)  # the page and the CSV, for the rest
    report = class_report.build([str(planted_class), str(bad)])
    assert report.n == 12 and report.questions["Q2"].answered == 10


# ------------------------------------------------------------------------------------- writing the report safely
def test_a_link_in_the_output_folder_is_replaced_never_written_through(planted_class, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("not the report's", "utf-8")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "class-report.html")
    os.symlink(victim, out / "class-report.csv")
    assert class_report.main([str(planted_class), "--out", str(out)]) == 0
    assert victim.read_text("utf-8") == "not the report's"
    assert not (out / "class-report.html").is_symlink() and _rows(out)
    assert sorted(p.name for p in out.iterdir()) == ["class-report.csv", "class-report.html"]  # no temp file left


def test_an_output_folder_that_is_a_link_or_a_file_is_refused(planted_class, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "linked")
    a_file = sorted(planted_class.rglob("progress.json"))[0]
    before = a_file.read_bytes()
    for out in (tmp_path / "linked", a_file):
        capsys.readouterr()
        assert class_report.main([str(planted_class), "--out", str(out)]) != 0
        assert len(capsys.readouterr().err.splitlines()) == 1  # one line, no traceback
    assert list(elsewhere.iterdir()) == [] and a_file.read_bytes() == before


SOME_ERRNOS = (errno.EACCES, errno.ENOENT, errno.EROFS, errno.ENOSPC, errno.EISDIR, errno.ENOTDIR)


def test_an_unreadable_file_says_why_in_its_own_words_never_the_oses(planted_class, monkeypatch):
    """Root reads anything, so the refusal is planted: each errno its own reason, none the OS's English."""
    real_open = os.open
    target = sorted(planted_class.rglob("progress.json"))[0]
    said = {}
    for code in SOME_ERRNOS:
        def refusing(path, *a, code=code, **k):
            if Path(path) == target:
                raise OSError(code, os.strerror(code))
            return real_open(path, *a, **k)

        monkeypatch.setattr(os, "open", refusing)
        report = class_report.build([str(planted_class)])
        assert report.n == 11 and len(report.skipped) == 1  # the others are counted
        said[code] = report.skipped[0]
    assert not any(os.strerror(code) in line for code, line in said.items())
    assert len(set(said.values())) == len(SOME_ERRNOS)


def test_a_folder_it_cannot_list_is_one_line_never_skipped_silently(planted_class, monkeypatch):
    real_scandir = os.scandir
    hidden = sorted(planted_class.iterdir())[0]

    def refusing(path="."):
        if Path(path) == hidden:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    report = class_report.build([str(planted_class)])
    assert report.n == 11 and len(report.skipped) == 1 and str(hidden) in report.skipped[0]
    assert os.strerror(errno.EACCES) not in report.skipped[0]


def test_an_output_folder_it_cannot_make_or_write_says_why_in_its_own_words(planted_class, tmp_path,
                                                                          monkeypatch, capsys):
    said = {}
    for code in SOME_ERRNOS:
        def refusing(*a, code=code, **k):
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(Path, "mkdir", refusing)
        capsys.readouterr()
        assert class_report.main([str(planted_class), "--out", str(tmp_path / "new")]) == 3
        said[code] = capsys.readouterr().err.strip()
        assert "\n" not in said[code] and said[code]  # one line
    assert not any(os.strerror(code) in line for code, line in said.items())
    assert len(set(said.values())) == len(SOME_ERRNOS)


@pytest.mark.skipif(os.geteuid() != 0, reason="只在以 root 运行时才拒绝别人的文件夹")
def test_as_root_an_output_folder_another_user_owns_is_refused(planted_class, tmp_path):
    out = tmp_path / "theirs"
    out.mkdir()
    os.chown(out, 65534, 65534)  # as if a student's code had made it
    assert class_report.main([str(planted_class), "--out", str(out)]) != 0
    assert list(out.iterdir()) == []
    assert class_report.main([str(planted_class), "--out", str(tmp_path / "new")]) == 0  # a folder it makes: root's


@pytest.mark.skipif(os.geteuid() != 0, reason="只有 root 能把文件夹交给另一个用户")
def test_under_sudo_a_new_output_folder_and_its_files_are_the_admins(planted_class, tmp_path, monkeypatch):
    """README runs the report with sudo into a new folder in the admin's home: what it makes is theirs (they can
    delete it without sudo); a folder that was there already is never given away."""
    monkeypatch.setenv("SUDO_UID", "54321")
    monkeypatch.setenv("SUDO_GID", "54322")
    new = tmp_path / "made" / "报告"
    assert class_report.main([str(planted_class), "--out", str(new)]) == 0
    made = [new.parent, new, new / "class-report.html", new / "class-report.csv"]
    assert [(os.lstat(p).st_uid, os.lstat(p).st_gid) for p in made] == [(54321, 54322)] * 4
    assert os.lstat(tmp_path).st_uid == 0  # it was there: still root's
    assert class_report.main([str(planted_class), "--out", str(new)]) == 0  # again, into the admin's own folder
    assert os.lstat(new / "class-report.html").st_uid == 54321
    there = tmp_path / "there"
    there.mkdir()
    assert class_report.main([str(planted_class), "--out", str(there)]) == 0
    assert {os.lstat(p).st_uid for p in (there, *there.iterdir())} == {0}


def test_under_sudo_the_admins_own_trial_file_is_no_student_unless_asked(planted_class, monkeypatch, capsys):
    """On a hub the default files are every home's; the admin who tried the lesson out (SUDO_UID) has one too."""
    monkeypatch.setattr(class_report, "HUB_GLOB", str(planted_class / "*" / "progress.json"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("SUDO_UID", "54321")
    monkeypatch.setenv("SUDO_GID", "54322")
    monkeypatch.delenv("LESSON_PROGRESS_FILE", raising=False)  # the tests' own file: none here
    own = planted_class / "home03"
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_dir=str(own)) if uid == 54321 else None)
    report = class_report.build([])
    assert report.n == 11 and report.skipped == []
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and str(own / "progress.json") in said[0] and "--include-mine" in said[0]
    assert class_report.build([], mine=True).n == 12
    monkeypatch.delenv("SUDO_UID")
    assert class_report.build([]).n == 12  # not under sudo: nobody's file is left out


# ------------------------------------------------------------------------------------- what a file holds
def test_the_optional_labs_answers_are_listed_apart_from_the_cores(tmp_path):
    progress = Progress(tmp_path / "s" / "progress.json")
    for qid in ("S7", "S3d", "S2", "L6a"):
        answer = questions.question("L6a").key.answer if qid == "L6a" else next(
            a for q, a, right in _answers() if q == qid and right)
        _answer(progress, qid, answer)
    report = class_report.build([str(tmp_path)])
    assert {qid for qid, row in report.labs.items() if row.answered} == {"S7", "S3d", "L6a"}
    assert set(report.labs) == set(questions.lab_ids()) and "Q3" in report.labs
    assert not set(report.labs) & set(report.questions)
    assert (report.students[0].answered, report.students[0].labs) == (1, 3)  # the core's count: S2 only
    assert report.stopped == {class_report.asked_in()["S2"]: 1}  # a lab's answer moves no one's last section
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "s"), "--out", str(out)]) == 0
    labs = {r["item"] for r in _rows(out) if r["kind"] == "lab_question" and r["measure"] == "answered"
            and r["count"] == "1"}  # fmt: skip
    assert labs == {"S7", "S3d", "L6a"}


def _table_of(page: str, ids) -> dict[str, dict]:
    """The page's table whose rows start with exactly ``ids``: {id: {column name: cell}}, in the page's order."""
    for table in _dom(page).find_all("table"):
        head = [th.get_text() for th in table.find_all("th")]
        rows = [[td.get_text() for td in tr.find_all("td")] for tr in table.tbody.find_all("tr")]
        if sorted(row[0] for row in rows) == sorted(ids):
            return {row[0]: dict(zip(head, row)) for row in rows}
    raise AssertionError(f"no table lists {sorted(ids)}")


def test_a_question_never_graded_shows_its_answers_and_no_right_or_wrong_count(tmp_path):
    """A self-explanation (Q1) is never judged: its right/wrong columns hold no number on the page and have no row
    in the CSV (a 0 reads as "nobody got it right"); its answers are counted, in the students' table too."""
    ungraded = [qid for qid in questions.question_ids() if questions.question(qid).kind == "self"]
    for i in range(2):
        progress = Progress(tmp_path / "class" / f"s{i}" / "progress.json")
        _answer(progress, "Q2", RIGHT_Q2)
        for qid in ungraded:
            _answer(progress, qid, "单头只有一组权重，多个头能同时看不同的关系。")
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "class"), "--out", str(out)]) == 0
    rows = _table_of((out / "class-report.html").read_text("utf-8"), questions.question_ids())
    said = class_report.CSV_MEASURES["question"]  # the page's column names
    judged = {said[m] for m in class_report.JUDGED}
    measures = {qid: set() for qid in questions.question_ids()}
    for r in _rows(out):
        if r["kind"] == "question":
            measures[r["item"]].add(r["measure"])
    for qid in ungraded:
        assert rows[qid][said["answered"]] == "2"
        assert not any(rows[qid][column].isdigit() for column in judged)
        assert measures[qid] & set(class_report.JUDGED) == set() and "answered" in measures[qid]
    assert all(rows["Q2"][column].isdigit() for column in judged) and set(class_report.JUDGED) <= measures["Q2"]
    students = class_report.build([str(tmp_path / "class")]).students
    assert [(s.answered, s.first_right) for s in students] == [(1 + len(ungraded), 1)] * 2


def test_each_question_is_listed_where_and_when_the_notebook_asks_it(tmp_path, monkeypatch):
    """The question table follows the notebook (asked_in's order: Q2, asked in the review, after §7's S7b) and
    says in which section each is asked; with a notebook that asked them the other way round, so would the page."""
    _answer(Progress(tmp_path / "s" / "progress.json"), "Q2", RIGHT_Q2)
    core = set(questions.question_ids())
    notebook = class_report.asked_in()
    backwards = {item: 9000 + i for i, item in enumerate(reversed(notebook))}  # no other cell says these
    for asked in (notebook, backwards):
        monkeypatch.setattr(class_report, "asked_in", lambda asked=asked: asked)
        rows = _table_of(class_report.page(class_report.build([str(tmp_path)])), core)
        assert list(rows) == [item for item in asked if item in core]
        for qid, row in rows.items():  # the section it is asked in is one of its cells
            assert asked[qid] in [int(n) for cell in row.values() for n in re.findall(r"\d+", cell)]


def test_each_lab_is_named_by_its_title_as_its_notebook_shows_it(tmp_path):
    progress = Progress(tmp_path / "s" / "progress.json")
    _answer(progress, "L6a", questions.question("L6a").key.answer)
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "s"), "--out", str(out)]) == 0
    titles = {}
    for lab in set(class_report.lab_of().values()):  # the stored notebook's first heading: what a learner opens
        cells = json.loads((ROOT / "notebooks" / f"{lab}.ipynb").read_text("utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        titles[lab] = re.search(r"^#\s+(.+?)\s*$", text, re.M).group(1)
    rows = _table_of((out / "class-report.html").read_text("utf-8"), questions.lab_ids())
    for qid, lab in class_report.lab_of().items():  # the lab's title in its row, never its file's name
        assert titles[lab] in rows[qid].values() and not any(lab in cell for cell in rows[qid].values())
    details = {r["item"]: r["detail"] for r in _rows(out) if r["kind"] == "lab_question"}
    assert details == {qid: titles[lab] for qid, lab in class_report.lab_of().items()}  # the CSV says the same


def test_the_readmes_lab_table_names_every_question_each_lab_asks():
    readme = (ROOT / "README.md").read_text("utf-8")
    rows = {line.split("|")[1].strip(" `").removesuffix(".ipynb"): line for line in readme.splitlines()
            if line.startswith("| `lab_")}  # fmt: skip
    asked = class_report.lab_of()
    assert set(asked) == set(questions.lab_ids())
    for qid, lab in asked.items():
        assert re.search(rf"(?<![A-Za-z0-9]){qid}(?![A-Za-z0-9])", rows[lab]), qid


def test_a_pass_not_confirmed_is_shown_against_its_student(tmp_path, monkeypatch):
    for i in range(3):
        _exercise(Progress(tmp_path / f"s{i}" / "progress.json"), "split_heads", "passed")
    confirms = iter([True, False, True])  # the second student's pass does not repeat
    monkeypatch.setattr(class_report, "recheck_with", lambda box: lambda name, source: next(confirms))
    report = class_report.build([str(tmp_path)], recheck=object())
    assert [row.unconfirmed for row in report.students] == [[], ["split_heads"], []]
    out = tmp_path / "out"
    class_report.write(report, out)
    got = {(r["item"], r["measure"]): (r["count"], r["detail"]) for r in _rows(out) if r["kind"] == "student"}
    second = report.students[1].label
    assert got[(second, "unconfirmed")] == ("1", "split_heads")
    table = _dom((out / "class-report.html").read_text("utf-8")).find_all("table")[-1]
    cells = [[td.get_text() for td in tr.find_all("td")] for tr in table.tbody.find_all("tr")]
    assert [row[0] for row in cells if "split_heads" in row[-1]] == [second]


def _exercise_cells(out: Path, name: str) -> list[str]:
    """The page's row for exercise ``name`` (the exercise table's; the student table never starts with it)."""
    page = _dom((out / "class-report.html").read_text("utf-8"))
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in page.select("tbody tr")]
    return next(row for row in rows if row[0] == name)


@pytest.mark.parametrize("recheck", [False, True])
def test_unconfirmed_is_counted_only_when_the_passes_were_run_again(tmp_path, monkeypatch, recheck):
    """Without --recheck nothing was confirmed: no unconfirmed count (a 0 would read as "all confirmed")."""
    for i in range(2):
        _exercise(Progress(tmp_path / f"s{i}" / "progress.json"), "split_heads", "passed")
    monkeypatch.setattr(class_report, "recheck_with", lambda box: lambda name, source: True)
    out = tmp_path / "out"
    class_report.write(class_report.build([str(tmp_path)], recheck=object() if recheck else None), out)
    measures = {r["measure"] for r in _rows(out) if r["kind"] == "exercise"}
    assert ("unconfirmed" in measures) == recheck and "passed" in measures
    cells = _exercise_cells(out, "split_heads")
    assert cells[1] == "2" and cells[5].isdigit() == recheck  # no count where nothing was run again


def test_each_kind_of_unreadable_file_has_its_own_reason_and_no_exception_name(tmp_path):
    files = {"deep": _deep(100_000).encode(), "cut": b'{"format": "day11-progress", "ver',
             "latin1": b'{"format": "day11-progress", "x": "\xe9"}', "huge": b"1" * 5000}  # fmt: skip
    for name, content in files.items():
        (tmp_path / f"{name}.json").write_bytes(content)
    report = class_report.build([str(tmp_path)])
    reasons = {line.split("：", 1)[1] for line in report.skipped}
    assert len(report.skipped) == len(reasons) == 4
    assert not any(re.search(r"[A-Z][a-z]+Error", line) for line in report.skipped)


def _with_entries(path: Path, **parts) -> None:
    data = json.loads(path.read_text("utf-8"))
    for kind, entries in parts.items():
        data[kind].update(entries)
    path.write_text(json.dumps(data), "utf-8")


def test_a_file_with_bad_or_unknown_entries_keeps_the_rest_and_says_which(tmp_path):
    path = tmp_path / "s" / "progress.json"
    progress = Progress(path)
    _answer(progress, "Q2", RIGHT_Q2)
    _exercise(progress, "split_heads", "passed")
    data = json.loads(path.read_text("utf-8"))
    entry, check = data["questions"]["Q2"], data["exercises"]["split_heads"]
    _with_entries(path, questions={"S3": {**entry, "attempts": 5}, "Q99": entry},
                  exercises={"no_such_exercise": check})  # one malformed, two this course does not have
    lines = []
    report = class_report.build([str(path)], warn=lines.append)
    assert report.n == 1 and report.skipped == [] and len(report.partial) == 1 and lines == report.partial
    assert (report.questions["Q2"].answered, report.exercises["split_heads"].passed) == (1, 1)
    assert "S3" in lines[0] and str(path) in lines[0]  # the course's own id is named
    assert "Q99" not in lines[0] and "no_such_exercise" not in lines[0]  # a file's own ids are only counted
    numbers = lines[0].replace(str(path), "").replace("S3", "")
    assert sorted(map(int, re.findall(r"\d+", numbers))) == [1, 2]  # 1 malformed, 2 unknown
    path.write_text(json.dumps({**json.loads(path.read_text("utf-8")), "version": "<b>HOSTILE</b>"}), "utf-8")
    lines.clear()
    assert class_report.build([str(path)], warn=lines.append).n == 0
    assert len(lines) == 1 and "HOSTILE" not in lines[0]  # a version not a number is not quoted either


def test_a_mistake_is_described_by_the_lesson_never_by_a_students_text(tmp_path):
    path = tmp_path / "s" / "progress.json"
    progress = Progress(path)
    _answer(progress, "Q2", WRONG_Q2)
    _exercise(progress, "split_heads", "wrong", ["transpose"])
    data = json.loads(path.read_text("utf-8"))
    data["questions"]["Q2"]["attempts"][0]["mistake"] = "d_k=64;d_k=A-STUDENTS-OWN-TEXT;option=Z;made_up"
    check = data["exercises"]["split_heads"]
    check["checks"][0]["mistakes"] = ["transpose", "invented"]
    check["mistakes"], check["message"] = ["invented"], "A-STUDENTS-OWN-TEXT"
    path.write_text(json.dumps(data), "utf-8")
    report = class_report.build([str(path)])
    rows = {(item, m): (count, said) for count, item, m, said, _ in report.misconceptions}
    assert set(rows) == {("Q2", "d_k=64"), ("split_heads", "transpose"), ("Q2", class_report.OTHER),
                         ("split_heads", class_report.OTHER)}  # fmt: skip
    others = {item: (count, _numbers(said)) for (item, m), (count, said) in rows.items() if m == class_report.OTHER}
    assert others == {"Q2": (1, [3]), "split_heads": (1, [1])}  # 1 student; 3 and 1 ids the course lacks
    assert [m for _, _, m, _, _ in report.misconceptions][-2:] == [class_report.OTHER] * 2  # after the course's
    assert "A-STUDENTS-OWN-TEXT" not in class_report.page(report)


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


HOSTILE = ("<script>alert('HOSTILE-1')</script>", "@SUM(1+1)*cmd|' /C calc'!A0 HOSTILE-2",
           "HOSTILE-3 " + "你这个老师什么都不懂" * 24)  # fmt: skip


def test_ids_the_course_lacks_are_counted_in_one_row_per_item_and_never_shown(tmp_path):
    """Three students type their own mistake ids (markup, a spreadsheet formula, a 240-character insult) into a
    question's and an exercise's entries, and one an unknown question id: none of the text reaches the page or
    the CSV; each item has one row counting the students and the ids, after the course's own mistakes."""
    handed = tmp_path / "in"
    for i in range(3):
        path = handed / f"s{i}.json"
        progress = Progress(path)
        _answer(progress, "Q2", WRONG_Q2)
        _exercise(progress, "split_heads", "wrong", ["transpose"])
        data = json.loads(path.read_text("utf-8"))
        wrapped = "d_k=我觉得是 64 吧 老师"  # the box reads 64 in it; the checker never writes it so
        data["questions"]["Q2"]["attempts"][0]["mistake"] = ";".join(["d_k=64", wrapped, *HOSTILE[: i + 1]])
        data["exercises"]["split_heads"]["checks"][0]["mistakes"] = ["transpose", HOSTILE[i]]
        if i == 0:
            data["questions"][HOSTILE[0][:90]] = data["questions"]["Q2"]  # an id the course lacks: left out
        path.write_text(json.dumps(data), "utf-8")
    out = tmp_path / "out"
    assert class_report.main([str(handed), "--names", "--out", str(out)]) == 0
    for written in ("class-report.html", "class-report.csv"):
        content = (out / written).read_bytes()
        assert not any(tell.encode() in content for tell in ("HOSTILE", "script", "calc", "老师")), written
    rows = {(r["kind"], r["item"], r["measure"]): r for r in _rows(out)}
    other = class_report.OTHER
    assert int(rows[("misconception", "Q2", "d_k=64")]["count"]) == 3  # the course's own still counted
    said = {kind: [(item, int(r["count"]), _numbers(r["detail"])) for (k, item, m), r in rows.items()
                   if k == kind and m == other] for kind in ("misconception", "exercise_mistake")}  # fmt: skip
    assert said["misconception"] == [("Q2", 3, [4]), ("split_heads", 3, [3])]  # 3 students; 4 and 3 ids
    assert said["exercise_mistake"] == [("split_heads", 3, [3])]
    page = _dom((out / "class-report.html").read_text("utf-8"))
    cells = [td.get_text() for td in page.find_all("td", attrs={"data-label": "具名错误（人数）"})]
    named = next(cell for cell in cells if cell.startswith(class_report.exercise_mistake("transpose")))
    assert _numbers(named.removeprefix(class_report.exercise_mistake("transpose"))) == [3, 3, 3]  # 3 then 3 (3)


def test_a_box_or_shape_id_is_the_courses_only_in_the_form_its_checker_writes():
    """A box reads a number past words around it, and \\d matches any script's digits: such ids in a file are
    not the checker's, and would put the file's own text on the page inside the course's description."""
    shape = next(qid for qid in questions.question_ids() if getattr(questions.question(qid).key, "whole", None))
    made = {m for a, right in [(a, r) for q, a, r in _answers() if q == shape] if not right
            for m in quiz.check(shape, a).mistakes if m.startswith("shape=(") and "/" not in m}  # fmt: skip
    key = questions.question(shape).key
    assert made and all(class_report.describe_mistake(key, m) for m in made)  # the checker's own: described
    forged = {m.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")) for m in made}
    forged |= {m.replace(")", ", 1)") for m in made}  # another script's digits, a box too many
    assert [m for m in forged if class_report.describe_mistake(key, m)] == []
    assert class_report.describe_mistake(questions.question("Q2").key, "d_k=我觉得是 64 吧") == ""


def test_of_two_identical_files_the_plain_name_is_kept(planted_class, tmp_path):
    first = sorted(planted_class.rglob("progress.json"))[0]
    handed = tmp_path / "in"
    handed.mkdir()
    shutil.copy(first, handed / "bob (1).json")
    shutil.copy(first, handed / "bob.json")
    for given in ([handed], [handed / "bob (1).json", handed / "bob.json"]):  # a folder, or a shell's in/*.json
        report = class_report.build([str(p) for p in given], names=True)
        assert report.names == ["bob"] and len(report.skipped) == 1 and "bob (1).json" in report.skipped[0]


def test_a_file_name_never_forges_a_terminal_line(planted_class, tmp_path, capsys):
    handed = tmp_path / "in"
    handed.mkdir()
    first = sorted(planted_class.rglob("progress.json"))[0]
    for name in ("a\n跳过 nothing.json", "\x1b]0;pwned\x07", "\u202eevil"):
        (handed / f"{name}.json").write_bytes(first.read_bytes())  # the same content: skipped, named
    (handed / "first.json").write_bytes(first.read_bytes())
    assert class_report.main([str(handed), "--out", str(tmp_path / "o\x1b[2J")]) == 0
    said = capsys.readouterr()
    lines = said.err.splitlines()
    assert len(lines) == 3 and all(line.startswith("跳过 ") for line in lines)
    assert not re.search(r"[\x00-\x1f\x7f\u202e]", said.err.replace("\n", "") + said.out.rstrip("\n"))


def test_a_file_name_or_a_mistake_with_control_characters_reaches_the_page_and_csv_escaped(tmp_path):
    """With --names a hand-in's file name is a student's label, and a mistake id is the file's own text: each is
    written escaped (as the terminal shows it), the name still read back whole from its escapes."""
    handed = tmp_path / "in"
    stem = "ctl\x1b[31mred\nfake line\x07"
    path = handed / f"{stem}.json"
    _answer(Progress(path), "Q2", WRONG_Q2)
    data = json.loads(path.read_text("utf-8"))
    data["questions"]["Q2"]["attempts"][0]["mistake"] = "d_k=64;d_k=\x1b[2J\x07\r\x7f"
    path.write_text(json.dumps(data), "utf-8")
    out = tmp_path / "out"
    assert class_report.main([str(handed), "--names", "--out", str(out)]) == 0
    for written in ("class-report.html", "class-report.csv"):  # the CSV's rows end in \r\n (RFC 4180)
        content = (out / written).read_bytes().replace(b"\r\n", b"\n")
        assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", content), written
    labels = {r["item"] for r in _rows(out) if r["kind"] == "student"}
    assert [label.encode("ascii").decode("unicode_escape") for label in labels] == [stem]  # nothing lost
    page = _dom((out / "class-report.html").read_text("utf-8"))
    assert page.find_all("table")[-1].tbody.td.get_text() == labels.pop()  # the page's label is the CSV's
    assert {r["measure"] for r in _rows(out) if r["kind"] == "misconception"} == {"d_k=64", class_report.OTHER}


def test_a_file_of_which_nothing_is_left_is_skipped_not_counted_as_a_student_who_did_nothing(tmp_path):
    path = tmp_path / "s" / "progress.json"
    _answer(Progress(path), "Q2", RIGHT_Q2)
    data = json.loads(path.read_text("utf-8"))
    data["questions"] = {"Q99": data["questions"]["Q2"], "Q2": {"attempts": 5}}  # unknown, malformed
    path.write_text(json.dumps(data), "utf-8")
    report = class_report.build([str(path)])
    assert (report.n, len(report.skipped), report.partial) == (0, 1, [])


def _checkboxes() -> tuple[str, list[str]]:
    """A core checkbox question with at least two right options, and those options."""
    for qid in questions.question_ids():
        q = questions.question(qid)
        if q.kind == "multi" and len(q.key.answer) >= 2:
            return qid, sorted(q.key.answer)
    raise AssertionError("no core question has two right options")


def test_a_left_out_option_is_named_with_how_many_left_it_out(tmp_path):
    """Three students leave out the first right option (one of them later fixes it), one the second (typed): the
    "missing" misconception says which options, with 3 and 1 students (each once, at any try)."""
    qid, right = _checkboxes()
    planted = {right[0]: 3, right[1]: 1}
    for i, left in enumerate([right[0], right[0], right[0], right[1]]):
        progress = Progress(tmp_path / "class" / f"s{i}" / "progress.json")
        ticked = set(right) - {left}  # as the checkboxes give it (kept as a list of keys) ...
        _answer(progress, qid, ticked if i < 3 else "".join(sorted(ticked)))  # ... or typed
        if i == 0:
            _answer(progress, qid, "、".join(right))  # typed with a separator: right now
    report = class_report.build([str(tmp_path / "class")])
    assert report.questions[qid].missed == planted
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "class"), "--out", str(out)]) == 0
    row = next(r for r in _rows(out) if r["kind"] == "misconception" and (r["item"], r["measure"]) == (qid, "missing"))
    labels = {key: label for key, label, _ in questions.question(qid).key.options}  # as the data words them
    said = {key: int(re.search(re.escape(labels[key]) + r"\D*(\d+)", row["detail"])[1]) for key in planted}
    assert (int(row["count"]), said) == (4, planted)


def test_a_question_never_graded_has_its_dashes_aligned_as_the_numbers(tmp_path):
    """Q1's 「—」 in the right/wrong columns sit where the numbers do (right-aligned), not left as text; so do the
    exercises' 「—」 for passes not run again (no --recheck)."""
    ungraded = [qid for qid in questions.question_ids() if questions.question(qid).kind == "self"]
    progress = Progress(tmp_path / "class" / "s0" / "progress.json")
    for qid in ungraded:
        _answer(progress, qid, "单头只有一组权重，多个头能同时看不同的关系。")
    out = tmp_path / "out"
    assert class_report.main([str(tmp_path / "class"), "--out", str(out)]) == 0
    page = _dom((out / "class-report.html").read_text("utf-8"))
    table = next(t for t in page.find_all("table") if t.find("td", string=ungraded[0]))
    head = [th.get_text() for th in table.find_all("th")]
    said = class_report.CSV_MEASURES["question"]
    unconfirmed = class_report.CSV_MEASURES["exercise"]["unconfirmed"]
    for tr in table.tbody.find_all("tr"):
        cells = dict(zip(head, tr.find_all("td")))
        for column in ("answered", *class_report.JUDGED, "old"):
            assert cells[said[column]].get("class") == ["num"], (cells[head[0]].get_text(), column)
    exercises = next(t for t in page.find_all("table") if t.find("th", string=unconfirmed))
    column = [th.get_text() for th in exercises.find_all("th")].index(unconfirmed)
    assert all(tr("td")[column].get("class") == ["num"] for tr in exercises.tbody("tr"))


def test_the_sections_to_go_over_count_each_student_once(planted_class, tmp_path):
    """The first 7 gave d_k = 64 in Q2, the first 3 also forgot split_heads' transpose: the top of the page
    names the sections to go over with the students each would reach (a student once per section), which the
    misconceptions' table (7 + 3 rows) cannot say."""
    report = class_report.build([str(planted_class)])
    where = {item: section for _, item, _, _, section in report.misconceptions}
    reach = {}
    for i in range(12):
        for item in (["Q2"] if i < 7 else []) + (["split_heads"] if i < 3 else []):
            reach.setdefault(where[item], set()).add(i)
    out = tmp_path / "out"
    assert class_report.main([str(planted_class), "--out", str(out)]) == 0
    page = _dom((out / "class-report.html").read_text("utf-8"))
    shown = page.find("ol", class_="top")("li")
    expected = sorted(((report.titled(at), len(who)) for at, who in reach.items()), key=lambda t: -t[1])
    assert [int(li.strong.get_text().split()[0]) for li in shown] == [n for _, n in expected]
    assert all(li.get_text().startswith(title) for li, (title, _) in zip(shown, expected))
