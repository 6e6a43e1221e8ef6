#!/usr/bin/env bash
# Run every test: lint, notebook drift check, unit and property tests, strict nbval on the lesson,
# the offline and CPU-independence runs, the real-browser flow, the classroom hub, the hub image and the
# README's first command on a fresh clone.   bash scripts/test.sh [extra pytest args]
#   bash scripts/test.sh -m "not slow"        the fast set only (the inner loop; its cost: see the README)
#   bash scripts/test.sh -n 0                 everything in one process (pytest's last -n wins)
# Installs requirements-dev.txt and benchmarks/classroom-requirements.txt at the versions in constraints.txt first
# (scripts/setup.sh --dev), the hub's proxy from npm into the environment (when npm is there), and what only the
# system's package manager has (chromium, fonts-noto-cjk, util-linux, python3-venv) when it may (root or sudo);
# what it cannot install is named with the command to run, and the tests that need it are skipped (a failure in CI).
#   LESSON_DEPS=latest bash scripts/test.sh   the same suite against the newest allowed versions (in .venv-latest)
#   LESSON_DEPS=lowest bash scripts/test.sh   ... against the oldest allowed versions (in .venv-lowest; use Python 3.10)
#   PYTHON=/path/python3.13 LESSON_VENV=.venv-py313 bash scripts/test.sh   another Python, in its own environment
set -euo pipefail
# The last line, whatever happens: the exit status and the wall time of the whole command (CI reads both). The
# script runs itself once more inside, so a step that stops it early still ends with this line.
if [ -z "${LESSON_TEST_INNER:-}" ]; then
  status=0
  LESSON_TEST_INNER=1 bash "$0" "$@" || status=$?
  echo "==> scripts/test.sh: exit $status, total wall time ${SECONDS} s"
  exit "$status"
fi
cd "$(dirname "$0")/.."
case "${LESSON_DEPS:-locked}" in
  locked) default_venv=.venv ;;
  *) default_venv=".venv-${LESSON_DEPS}" ;;
esac
export LESSON_VENV="${LESSON_VENV:-$default_venv}"

# The Chinese fonts (fonts-noto-cjk) are installed? The list is read whole, then matched: `fc-list | grep -q` fails
# under pipefail whenever grep exits at the first match and fc-list dies of SIGPIPE (the fonts "missing" at random).
have_cjk_fonts() {
  local fonts
  command -v fc-list >/dev/null || return 1
  fonts=$(fc-list 2>/dev/null) || return 1
  grep -qi "Noto Sans CJK" <<<"$fonts"
}

# What only the system's package manager has (Debian / Ubuntu names).
apt_need=()
python=${PYTHON:-python3}
if [ ! -x "$LESSON_VENV/bin/python" ] && ! "$python" -c 'import ensurepip' 2>/dev/null; then
  apt_need+=(python3-venv)  # Debian's python3 cannot make a venv without it
fi
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  apt_need+=(chromium)  # the browser test
fi
if ! have_cjk_fonts; then
  apt_need+=(fonts-noto-cjk fontconfig)  # Chinese in the browser test's pages and screenshots
fi
command -v unshare >/dev/null || apt_need+=(util-linux)  # unshare -n: the offline run
if [ "${#apt_need[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo -n"
  if command -v apt-get >/dev/null && { [ -z "$sudo" ] || sudo -n true 2>/dev/null; }; then
    echo "==> 安装系统软件包 / installing system packages: ${apt_need[*]}"
    apt_install="$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends"
    $apt_install "${apt_need[@]}" >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $apt_install "${apt_need[@]}" >/dev/null; }
  else
    echo "缺少 ${apt_need[*]}，用到它们的测试会跳过；Debian / Ubuntu 上请运行 sudo apt-get install ${apt_need[*]} / missing ${apt_need[*]}: the tests that need them are skipped; on Debian/Ubuntu run: sudo apt-get install ${apt_need[*]}" >&2
  fi
fi

bash scripts/setup.sh --no-open --dev
. "$LESSON_VENV/bin/activate"
export MPLBACKEND=Agg

# The hub's proxy (classroom test) comes from npm; it goes into the environment, not the system.
proxy_dir="$LESSON_VENV/npm"
case "$proxy_dir" in /*) ;; *) proxy_dir="$PWD/$proxy_dir" ;; esac
export PATH="$proxy_dir/node_modules/.bin:$PATH"
if ! command -v configurable-http-proxy >/dev/null; then
  if command -v npm >/dev/null; then
    echo "==> npm install configurable-http-proxy ($proxy_dir)"
    npm install --silent --no-fund --no-audit --prefix "$proxy_dir" configurable-http-proxy@5 >/dev/null
  else
    echo "没有 npm，课堂测试会跳过；请先安装 Node.js（sudo apt-get install npm）/ no npm: the classroom test is skipped; install Node.js (sudo apt-get install npm)" >&2
  fi
fi

echo "==> ruff (${SECONDS} s so far)"
ruff check .
echo "==> notebook source vs stored notebook (${SECONDS} s so far)"
python scripts/build_notebook.py --check
echo "==> pytest: unit, property, strict nbval, offline + CPU variants, browser, hub, fresh clone (${SECONDS} s so far)"
# -n: one pytest worker per CPU, at most 2 (more would starve the browser and hub tests of a 2-core machine); each test
# file stays in one worker (--dist loadfile), so a notebook's cells run in order and module fixtures start once.
workers=$(python scripts/cpus.py)  # a hub's share
[ "$workers" -le 2 ] || workers=2
[ "$workers" -gt 1 ] || workers=0
# Bytecode is cached (in git-ignored __pycache__/): the suite starts hundreds of Python processes (kernels, workers,
# CLIs) that import lesson_lib, and compiling it anew in each cost ~13 CPU-s in the fast set alone.
export PYTHONDONTWRITEBYTECODE=  # empty: Python writes bytecode
# --durations: the slowest tests are listed at the end, so a run that grew slower shows where. Exit status 5 (no test
# collected, e.g. a -k or -m that matches nothing) is a failure like any other non-zero status.
# The notebooks run under strict nbval, all in the slow set: the fast set (-m "not slow") leaves nbval unloaded, whose
# import (nbformat, jsonschema's format grammars, jupyter_client) cost ~2.5 CPU-s in pytest and again in each worker.
notebooks=(--nbval notebooks/day11_multi_head_attention.ipynb notebooks/lab_real_heads.ipynb
           notebooks/lab_ablation.ipynb --nbval-sanitize-with notebooks/nbval_sanitize.cfg)
previous=""
for arg in "$@"; do
  [ "$previous" != "-m" ] || [ "$arg" != "not slow" ] || notebooks=(-p no:nbval)
  previous=$arg
done
status=0
python -m pytest -p no:cacheprovider --durations=15 -n "$workers" --dist loadfile "${notebooks[@]}" \
  tests "$@" || status=$?
[ "$status" -ne 5 ] || echo "pytest collected no test (exit 5): that is a failure / 没有收集到任何测试，按失败处理" >&2
exit "$status"
