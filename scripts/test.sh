#!/usr/bin/env bash
# Run every test: lint, notebook drift check, unit and property tests, strict nbval on the lesson,
# the offline run and the real-browser flow.   bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-open
. .venv/bin/activate
export MPLBACKEND=Agg

echo "==> ruff"
ruff check .
echo "==> notebook source vs stored notebook"
python scripts/build_notebook.py --check
echo "==> pytest (unit, property, strict nbval, offline, browser)"
python -m pytest -p no:cacheprovider \
  --nbval notebooks/day11_multi_head_attention.ipynb \
  --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
  tests "$@"
