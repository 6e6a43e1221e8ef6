"""scripts/phrase_scan.py: the suite holds at most 15 Chinese phrases, and the scan finds the kinds it names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCAN = ROOT / "scripts" / "phrase_scan.py"

SAMPLE = '''
import re
import pytest

WORD = "头数"
PATTERN = re.compile("请改写")


def message():
    return f"第 {1} 行"


def mentions(text, *fragments):
    for fragment in fragments:
        assert fragment in text


@pytest.mark.parametrize("typed, verdict", [("八个", "wrong")])
def test_sample(typed, verdict):
    text = run(typed)
    assert "缺少" in text                        # 1: a literal
    assert WORD in text                          # 2: a module constant
    assert PATTERN.search(text)                  # 3: a compiled pattern
    assert message() == text                     # 4: a helper's return value
    mentions(text, "冒号")                        # 5: a helper's asserted parameter
    with pytest.raises(ValueError, match="不能"):  # 6: raises(match=)
        run(None)
    assert check("九个") == verdict              # not a finding: the code's input
    assert typed in text                         # an echo: listed, not counted
    assert "请" in text  # phrase kept: the sample's reason
'''


def scan(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCAN), str(folder)], capture_output=True, text=True)


def total(out: str) -> int:
    return int(re.search(r"^total: (\d+)", out, re.M).group(1))


def test_the_scan_finds_each_kind_and_lists_echoes_and_kept_reasons(tmp_path):
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    done = scan(folder)
    assert done.returncode == 0, done.stderr
    assert total(done.stdout) == 7
    lines = {int(m) for m in re.findall(r"^tests/test_sample\.py:(\d+): test_sample:", done.stdout, re.M)}
    body = SAMPLE.splitlines()
    expected = {i + 1 for i, line in enumerate(body) if re.search(r"# \d: |phrase kept", line)}
    assert lines == expected
    assert "the sample's reason" in done.stdout
    assert re.search(r"echoes .*: 1$", done.stdout, re.M)


def test_the_suite_keeps_at_most_15_phrases():
    done = scan(ROOT / "tests")
    assert total(done.stdout) <= 15, done.stdout
    assert done.returncode == 0
