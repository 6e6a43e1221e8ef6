"""The class report on a real JupyterHub (the classroom benchmark's, on loopback): 12 scripted students answer
through the lesson's own API in their own kernels, and the report counts exactly what was planted.

Each student's server is started by the hub (home ``<tmp>/home/<name>``); in its kernel the student answers as the
notebook's widgets do (``quiz.check`` then ``default_progress().record``) and submits exercises through
``exercises.check``, so every progress file lands where the lesson puts it on a hub. Then the instructor's command
reads ``<tmp>/home/*/.local/share/day11-multi-head-attention/progress.json``; its CSV must hold the planted counts,
and its page must pass axe-core (0 serious or critical) in light and dark. The report's time is printed, never
asserted. Screenshots: artifacts/class-report/<time>-<pid>/{light,dark}.png.
"""

from __future__ import annotations

import asyncio
import csv
import glob
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from helpers import load_factor, scaled

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import classroom  # noqa: E402

pytestmark = pytest.mark.slow
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
NEEDED = [m for m in classroom.missing_tools(Path(sys.executable).parent) if not m.startswith(("nbgitpuller", "git"))]
if NEEDED and not IN_CI:
    pytest.skip(f"班级报告的 Hub 测试缺少：{'; '.join(NEEDED)}", allow_module_level=True)

from lesson_lib.practice import questions, quiz  # noqa: E402
from lesson_lib.practice.progress import APP_NAME  # noqa: E402
from lesson_lib.sections.exercises import EXERCISES  # noqa: E402

STUDENTS = 12
PROGRESS_GLOB = f"home/*/.local/share/{APP_NAME}/progress.json"
AXE_VERSION = "4.14.1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",  # e2e's flags
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]  # fmt: skip
# A loaded machine stretches every wait (servers, kernels): helpers.scaled reads the load when the wait starts, not
# when this file was collected. Nothing here is a timing claim.

RIGHT_Q2 = {"d_k": "32", "params": "不变"}
WRONG_Q2 = {"d_k": "64", "params": "不变"}  # h = 8's d_k given for h = 16

PRELUDE = textwrap.dedent('''
    import json
    from lesson_lib.practice import questions, quiz
    from lesson_lib.sections import exercises
    from lesson_lib.practice.progress import default_progress
    from lesson_lib.practice.widgets import stored_answer
    verdicts = []

    def answer(qid, value):  # what a question widget's 提交 does
        fb = quiz.check(qid, value)
        default_progress().record(fb, stored_answer(questions.question(qid), value))
        verdicts.append([qid, fb.verdict])

    def explain(qid, text, ticked):  # a self-explanation: 提交, then 记录自评 with the ticked points
        fb = quiz.check(qid, text)
        default_progress().record(fb, text)
        points = questions.question(qid).key.points
        default_progress().record(quiz.assess(qid, [points[i].name for i in ticked]), text, of=len(points))
        verdicts.append([qid, "self"])
''')

FORGETS_TRANSPOSE = textwrap.dedent('''
    def my_split_heads(x, h):
        n, d_model = x.shape
        return x.reshape(n, h, d_model // h)  # 忘了 transpose：停在 (n, h, d_k)
    verdicts.append(["split_heads", exercises.check("split_heads", my_split_heads).status])
''')

SPLITS_RIGHT = textwrap.dedent('''
    def my_split_heads(x, h):
        n, d_model = x.shape
        return x.reshape(n, h, d_model // h).transpose(1, 0, 2)
    verdicts.append(["split_heads", exercises.check("split_heads", my_split_heads).status])
''')

STUB = textwrap.dedent('''
    def my_split_heads(x, h):  # Restart & Run All with the edit not saved: the starter cell again
        """把 (n, d_model) 切成 (h, n, d_k)。"""
        raise NotImplementedError("请实现")
    verdicts.append(["split_heads", exercises.check("split_heads", my_split_heads).status])
''')

REPORT = 'print(json.dumps({"verdicts": verdicts, "file": str(default_progress().path)}))'


def _right_choice(qid: str):
    """The right answer to a choice question, found through the checker itself."""
    q = questions.question(qid)
    keys = [k for k, _ in q.choices]
    if q.kind == "single":
        return next(k for k in keys if quiz.check(qid, k).verdict == "right")
    subsets = (set(c) for r in range(1, len(keys) + 1) for c in itertools.combinations(keys, r))
    return next(s for s in subsets if quiz.check(qid, s).verdict == "right")


def plan(i: int) -> tuple[str, list[list[str]]]:
    """Student i's cell, and the verdicts it must produce.

    All 12 answer S2 (§2), S3b (§3) and S5 (§5); 4 first pick S3b's option B; 3 forget the transpose in split_heads,
    then fix it; 3 pass it at once, 2 of them then run the stub again; the last 2 stop after §5; of the 10 who go on
    to the review, 7 first answer Q2 with 64 at h = 16;
    5 write Q1's self-explanation and tick its first point (2 of them the second too)."""
    s2, s5 = _right_choice("S2"), _right_choice("S5")
    lines, want = [PRELUDE, f"answer('S2', {s2!r})"], [["S2", "right"]]
    if i < 4:
        lines.append("answer('S3b', 'B')")
        want.append(["S3b", "wrong"])
    lines.append("answer('S3b', 'C')")
    want.append(["S3b", "right"])
    if i < 3:
        lines.append(FORGETS_TRANSPOSE)
        want.append(["split_heads", "wrong"])
    if i < 6:
        lines.append(SPLITS_RIGHT)
        want.append(["split_heads", "passed"])
    if i in (3, 4):
        lines.append(STUB)
        want.append(["split_heads", "todo"])
    lines.append(f"answer('S5', {s5!r})")
    want.append(["S5", "right"])
    if i < 10:
        if i < 7:
            lines.append(f"answer('Q2', {WRONG_Q2!r})")
            want.append(["Q2", "wrong"])
        lines.append(f"answer('Q2', {RIGHT_Q2!r})")
        want.append(["Q2", "right"])
        if i < 5:
            ticked = [0, 1] if i < 2 else [0]
            lines.append(f"explain('Q1', '单头只有一组权重，输出是加权平均，线索混在一起。', {ticked})")
            want.append(["Q1", "self"])
    return "\n".join([*lines, REPORT]), want


# --------------------------------------------------------------------------------------------- the hub
async def _kernel(api: classroom.Api, name: str):
    """A new kernel in the student's server and a channel to it: (its model, the websocket, the channel)."""
    from tornado.websocket import websocket_connect

    kernel = await api.call("POST", f"/user/{name}/api/kernels", {"name": "python3"}, timeout=scaled(120))
    session = uuid.uuid4().hex
    ws = await websocket_connect(api.ws_request(f"/user/{name}/api/kernels/{kernel['id']}/channels"
                                                f"?session_id={session}"))
    return kernel, ws, classroom.KernelChannel(ws, session)


async def _student(api: classroom.Api, name: str, code: str) -> dict:
    """Start the student's server, run ``code`` in a fresh kernel there, stop both; the kernel's JSON line."""
    from tornado.websocket import WebSocketClosedError

    await api.call("POST", f"/hub/api/users/{name}/server")
    await api.wait_for_server(name, timeout=scaled(180))
    for attempt in range(3):
        kernel, ws, channel = await _kernel(api, name)
        try:
            await channel.request("kernel_info_request", {}, timeout=scaled(120))
            break
        # Kernels started at once on one machine pick free ports, then bind them: another may bind one first
        # (ZMQError: Address already in use); that kernel never answers. A new kernel, as a student would start.
        except (WebSocketClosedError, classroom.ClassroomError):
            ws.close()
            await api.call("DELETE", f"/user/{name}/api/kernels/{kernel['id']}", timeout=scaled(60))
            if attempt == 2:
                raise
    try:
        reply, outputs = await channel.request(
            "execute_request", {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                                "allow_stdin": False, "stop_on_error": True}, timeout=scaled(180))
    finally:
        ws.close()
    errors = [f"{c.get('ename')}: {c.get('evalue')}" for kind, c in outputs if kind == "error"]
    assert reply.get("status") == "ok" and not errors, f"{name}: {errors or reply}"
    text = "".join(c.get("text", "") for kind, c in outputs if kind == "stream" and c.get("name") == "stdout")
    await api.call("DELETE", f"/user/{name}/api/kernels/{kernel['id']}", timeout=scaled(60))
    await api.call("DELETE", f"/hub/api/users/{name}/server", timeout=scaled(60))
    return json.loads(text.strip().splitlines()[-1])


async def _class(hub: classroom.Hub, codes: dict[str, str]) -> dict[str, dict]:
    api = classroom.Api(hub)
    try:
        await api.call("POST", "/hub/api/users", {"usernames": list(codes)})
        done = {}
        names, size = list(codes), 4 if load_factor() < 2 else 2  # a few at a time: the machine may be shared
        for start in range(0, len(names), size):
            group = names[start:start + size]
            for name, out in zip(group, await asyncio.gather(*(_student(api, n, codes[n]) for n in group))):
                done[name] = out
            hub.remember_processes()
        return done
    finally:
        api.close()


@pytest.fixture(scope="module")
def hub_class():
    """The hub's tmp folder after 12 students answered, and what each kernel said; the hub is stopped."""
    assert not NEEDED, f"CI must install: {NEEDED}"
    tmp = Path(tempfile.mkdtemp(prefix="class-report-hub-"))
    names = [f"student{i + 1:02d}" for i in range(STUDENTS)]
    plans = {name: plan(i) for i, name in enumerate(names)}
    leftovers = []
    for attempt in range(3):  # another suite on this machine may take a free port before the hub or its proxy binds
        hub = classroom.Hub(tmp, Path(sys.executable).parent)
        try:
            hub.start(timeout=scaled(90))
            break
        except classroom.ClassroomError:
            hub.stop()
            if attempt == 2 or "already in use" not in hub.log_tail().lower():
                raise
    try:
        start = time.perf_counter()
        said = asyncio.run(asyncio.wait_for(_class(hub, {n: code for n, (code, _) in plans.items()}),
                                            scaled(900)))
        print(f"\n{STUDENTS} students answered on the hub in {time.perf_counter() - start:.1f} s "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    finally:
        leftovers = hub.stop()
    assert leftovers == [], f"processes left by the hub: {getattr(hub, 'leftover_names', leftovers)}"
    yield tmp, said, {n: want for n, (_, want) in plans.items()}
    shutil.rmtree(tmp, ignore_errors=True)


def _deep(n: int) -> str:
    return "[" * n + "]" * n


MALFORMED = {  # a student's file with one field of the wrong type or size: each is one line, the rest counted
    "number-for-list": '{"format": "day11-progress", "version": 3, "questions": {"Q2": {"attempts": 5}}}',
    "list-for-string": '{"format": "day11-progress", "version": 2, "exercises": {"split_heads": {"result": ["a"], '
                       '"checks": 1}}}',
    "deep": '{"format": "day11-progress", "version": 3, "x": ' + _deep(100_000) + "}",
    "lone-surrogate": '{"format": "day11-progress", "version": 2, "exercises": {"split_heads": {"result": "wrong", '
                      '"checks": 1, "mistakes": ["\\ud800"]}}}',
    "root-is-a-list": "[]",
}  # fmt: skip


@pytest.fixture(scope="module")
def report(hub_class, tmp_path_factory):
    """The instructor's command over the students' progress files, one of them handed in twice (the same bytes
    under another name) and 5 malformed files: its output folder, its CSV as a dict, and what it said."""
    tmp, _, _ = hub_class
    files = sorted(glob.glob(str(tmp / PROGRESS_GLOB)))
    handed = tmp_path_factory.mktemp("handed-in")
    shutil.copyfile(files[6], handed / "student07 (1).json")
    for name, text in MALFORMED.items():
        (handed / f"{name}.json").write_text(text, "utf-8")
    files.append(str(handed))
    out = tmp_path_factory.mktemp("class-report")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(classroom.PROGRESS_ENV, None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "class_report.py"), *files, "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=scaled(300))
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    print(f"\nclass_report.py over {len(files)} students' files: {elapsed:.2f} s wall, process start included; "
          f"it says: {done.stdout.strip()}")
    with open(out / "class-report.csv", encoding="utf-8-sig") as f:
        rows = {(r["类别"], r["项目"], r["指标"], r["说明"]): int(r["数值"]) for r in csv.DictReader(f)}
    return out, rows, done.stderr


# --------------------------------------------------------------------------------------------- the tests
def test_every_student_answered_as_planted(hub_class):
    tmp, said, wanted = hub_class
    assert sorted(said) == sorted(wanted)
    for name, out in said.items():
        assert out["verdicts"] == wanted[name], name
        # The lesson's own default on a hub (no LESSON_PROGRESS_FILE): the student's data folder in their home.
        assert out["file"] == str(tmp / "home" / name / ".local" / "share" / APP_NAME / "progress.json")
    assert len(glob.glob(str(tmp / PROGRESS_GLOB))) == STUDENTS


def test_the_report_counts_exactly_what_was_planted(report):
    _, detailed, stderr = report
    for name in MALFORMED:  # each malformed file is named in one line
        assert sum(f"{os.sep}{name}.json" in line for line in stderr.splitlines()) == 1, stderr
    rows, by_kind, details = {}, {}, {}  # read by the CSV's Chinese header and names (the page's words)
    for (kind, item, measure, detail), c in detailed.items():
        rows[(kind, item, measure)] = c
        by_kind.setdefault(kind, []).append(c)
        details.setdefault((kind, item, measure), {})[detail] = c
    assert [rows[("题目", "Q2", m)] for m in ("作答", "一次答对", "后来答对", "一直没对")] == [10, 3, 7, 0]
    assert rows[("误解", "Q2", "d_k=64")] == 7
    assert [rows[("题目", "S3b", m)] for m in ("作答", "一次答对", "后来答对")] == [12, 8, 4]
    assert rows[("误解", "S3b", "option=B")] == 4
    measures = ("提交过", "通过", "一次通过", "后来通过", "一直没过")
    assert [rows[("代码练习", "split_heads", m)] for m in measures] == [6, 6, 3, 3, 0]  # the stub re-runs: passed
    assert rows[("练习的具名错误", "split_heads", "transpose")] == 3  # made, then fixed: still counted
    assert rows[("学生停在哪里", "第 5 节", "人数")] == 2
    assert rows[("学生停在哪里", "第 10 节", "人数")] == 10
    assert sum(by_kind["学生停在哪里"]) == STUDENTS
    assert sorted(by_kind["误解"]) == [3, 4, 7]
    points = [p.name for p in questions.question("Q1").key.points]
    ticked = details[("题目", "Q1", "勾选的要点")]
    assert ticked == {points[0]: 5, points[1]: 2}  # counted, never graded


def test_the_page_names_the_section_to_go_over_first_with_the_students_it_reaches(report):
    """Q2's 64 (7), S3b's B (4) and split_heads' transpose (3) are all taught in §3, by the same first 7 students:
    the list above the misconceptions' table names §3 first, with 7 students (not 14) and all three items."""
    out, _, _ = report
    page = (out / "class-report.html").read_text("utf-8")
    first = page.split("<ol", 1)[1].split("</ol>", 1)[0].split("<li>")[1]
    assert re.findall(r"<strong>(\d+)\D*</strong>", first) == ["7"]
    assert "Q2" in first and "S3b" in first and "split_heads" in first
    assert "student0" not in page  # anonymous: numbered, never a home folder's name


def test_recheck_confirms_the_passes_from_the_code_the_kernels_stored(hub_class, tmp_path):
    """--recheck runs each stored pass again in the sandbox (scripts/recheck_sandbox.py), as root too: the six
    real passes repeat."""
    tmp, _, _ = hub_class
    files = sorted(glob.glob(str(tmp / PROGRESS_GLOB)))
    kept = [json.loads(Path(f).read_text("utf-8"))["exercises"].get("split_heads", {}) for f in files]
    assert sum("transpose(1, 0, 2)" in (e.get("passed_source") or "") for e in kept) == 6  # the code that passed
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "class_report.py"), *files, "--recheck",
                           "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=scaled(300))
    if os.geteuid() != 0:  # the students' code would run with this user's rights: the report refuses
        assert done.returncode == 2 and not (tmp_path / "class-report.csv").exists()
        pytest.skip("--recheck runs only as root (CI runs as root)")
    assert done.returncode == 0, done.stderr  # the sandbox runs them as nobody
    print(f"\n--recheck: {done.stdout.strip()}")
    with open(tmp_path / "class-report.csv", encoding="utf-8-sig") as f:
        rows = {(r["项目"], r["指标"]): int(r["数值"]) for r in csv.DictReader(f)}  # its Chinese header
    assert (rows[("split_heads", "通过")], rows[("split_heads", "通过但未确认")]) == (6, 0)
    checked = sum(rows[(name, "通过")] for name in EXERCISES)  # every exercise's passes
    said = done.stdout.splitlines()[-1]  # the line after the report's
    assert "nobody" in said  # the sandbox's user
    assert [int(n) for n in re.findall(r"\d+", said.replace("nobody", ""))] == [checked, 0]  # none unconfirmed


# --------------------------------------------------------------------------------------------- the browser
def _axe() -> Path:
    cache = ROOT / ".cache" / "e2e"
    script = cache / f"axe-core-{AXE_VERSION}" / "package" / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is needed once to fetch axe-core") if IN_CI else pytest.skip("npm 不在，取不到 axe-core")
        cache.mkdir(parents=True, exist_ok=True)
        packed = subprocess.run([npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", str(cache), "--silent"],
                                check=True, capture_output=True, text=True, timeout=scaled(300))
        name = packed.stdout.strip().splitlines()[-1]
        with tarfile.open(cache / name) as tar:
            tar.extractall(script.parents[1], filter="data")
    return script


def test_the_page_passes_axe_in_light_and_dark(report):
    out, _, _ = report
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is missing") if IN_CI else pytest.skip("没有 playwright")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is missing") if IN_CI else pytest.skip("没有 chromium")
    shots = ROOT / "artifacts" / "class-report" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"  # one per session
    shots.mkdir(parents=True, exist_ok=True)
    axe, found = _axe(), {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)  # a fresh profile
        try:
            for scheme in ("light", "dark"):
                context = browser.new_context(color_scheme=scheme, viewport={"width": 960, "height": 900},
                                              locale="zh-CN")  # fmt: skip
                page = context.new_page()
                outside = []
                page.on("request", lambda r, seen=outside: r.url.startswith("file://") or seen.append(r.url))
                page.goto((out / "class-report.html").as_uri())
                page.add_script_tag(path=str(axe))
                result = page.evaluate("async () => await axe.run(document)")
                found[scheme] = [(v["id"], v["impact"], len(v["nodes"])) for v in result["violations"]]
                page.screenshot(path=str(shots / f"{scheme}.png"), full_page=True)
                assert outside == [], f"the page fetched {outside}"
                context.close()
        finally:
            browser.close()
    print(f"\naxe-core {AXE_VERSION} violations: {found}")
    for scheme, violations in found.items():
        assert [v for v in violations if v[1] in ("serious", "critical")] == [], scheme
