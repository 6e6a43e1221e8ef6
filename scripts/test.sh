#!/usr/bin/env bash
# Run every test: lint, notebook drift check, unit and property tests, strict nbval on the lesson,
# the offline and CPU-independence runs, and the real-browser flow.   bash scripts/test.sh [extra pytest args]
# Installs requirements-dev.txt at the versions in constraints.txt first (scripts/setup.sh --dev).
#   LESSON_DEPS=latest bash scripts/test.sh   the same suite against the newest allowed versions (in .venv-latest)
#   LESSON_DEPS=lowest bash scripts/test.sh   ... against the oldest allowed versions (in .venv-lowest; use Python 3.10)
#   PYTHON=/path/python3.13 LESSON_VENV=.venv-py313 bash scripts/test.sh   another Python, in its own environment
set -euo pipefail
cd "$(dirname "$0")/.."
case "${LESSON_DEPS:-locked}" in
  locked) default_venv=.venv ;;
  *) default_venv=".venv-${LESSON_DEPS}" ;;
esac
export LESSON_VENV="${LESSON_VENV:-$default_venv}"
bash scripts/setup.sh --no-open --dev
. "$LESSON_VENV/bin/activate"
export MPLBACKEND=Agg

echo "==> ruff"
ruff check .
echo "==> notebook source vs stored notebook"
python scripts/build_notebook.py --check
echo "==> pytest (unit, property, strict nbval, offline + CPU variants, browser)"
python -m pytest -p no:cacheprovider \
  --nbval notebooks/day11_multi_head_attention.ipynb \
  --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
  tests "$@"
