"""scripts/test.sh and .ci/run: their check for the Chinese fonts reports what is installed, every time.

Each script's own ``have_cjk_fonts`` function (its exact lines) is run by bash under the scripts' ``set -euo
pipefail``. The former ``fc-list | grep -q`` reported installed fonts missing in about half the runs (grep exits at
the first match, fc-list dies of SIGPIPE, pipefail fails the pipe), so one run proves nothing: it runs many times.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import require

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["scripts/test.sh", ".ci/run"]
RUNS = 20  # the old pipe failed 8 of 20 runs here: 20 passes in a row would be chance with odds below 1e-4


def _font_check(script: str) -> str:
    """The script's ``have_cjk_fonts() { … }``, as written in it."""
    text = (ROOT / script).read_text(encoding="utf-8")
    assert re.search(r"^(if ! )?have_cjk_fonts( \|\||;)", text, re.M), f"{script} does not use have_cjk_fonts"
    found = re.search(r"^have_cjk_fonts\(\) \{\n.*?^\}\n", text, re.M | re.S)
    assert found, f"{script} defines no have_cjk_fonts function"
    return found.group(0)


def _run_check(script: str, runs: int, env=None) -> list[str]:
    program = (f"set -euo pipefail\n{_font_check(script)}"
               f"for _ in $(seq {runs}); do if have_cjk_fonts; then echo present; else echo missing; fi; done\n")
    done = subprocess.run([shutil.which("bash"), "-c", program], capture_output=True, text=True, check=True, env=env)
    return done.stdout.split()


def _fonts_installed() -> bool:
    fc_list = shutil.which("fc-list")
    listing = subprocess.run([fc_list], capture_output=True, text=True).stdout if fc_list else ""
    return "noto sans cjk" in listing.lower()


@pytest.mark.parametrize("script", SCRIPTS)
def test_installed_fonts_are_reported_present_every_time(script):
    require(_fonts_installed(), "没有装中文字体，请运行 sudo apt-get install fonts-noto-cjk fontconfig / "
            "the Chinese fonts are not installed: sudo apt-get install fonts-noto-cjk fontconfig")
    assert _run_check(script, RUNS) == ["present"] * RUNS


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("listing", [None, "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf: DejaVu Sans:style=Book"])
def test_missing_fonts_or_fc_list_are_reported_missing(script, listing, tmp_path):
    """No fc-list at all, or one that lists no CJK font: the script installs the fonts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if listing is not None:
        fake = bin_dir / "fc-list"
        fake.write_text(f"#!/bin/sh\necho '{listing}'\n", encoding="utf-8")
        fake.chmod(0o755)
    for tool in ("seq", "grep"):  # what the check and its loop need, and nothing else from the system
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = dict(os.environ, PATH=str(bin_dir))
    assert _run_check(script, 2, env=env) == ["missing"] * 2
