#!/usr/bin/env bash
# Regenerate the constraints files from the requirement files (maintainers only; needs uv: pip install uv).
#   constraints.txt         the newest versions allowed, for every Python >= 3.10 and platform (markers split them):
#                           what scripts/test.sh and scripts/setup.sh install, so a new upstream release cannot
#                           turn the suite red (with benchmarks/classroom-requirements.txt, the hub tools the
#                           suite installs). After regenerating, run the whole suite before committing.
#   constraints-lowest.txt  every direct requirement at its floor, on Python 3.10 (LESSON_DEPS=lowest):
#                           the floors in the requirement files are true only while that run passes.
set -euo pipefail
cd "$(dirname "$0")/.."
uv=${UV:-uv}
common=(--no-emit-package lesson-lib --no-annotate --custom-compile-command "bash scripts/lock.sh" requirements-dev.txt)
# constraints.txt also pins the hub tools scripts/test.sh installs (jupyterhub, nbgitpuller, repo2docker).
"$uv" pip compile --universal --python-version 3.10 "${common[@]}" benchmarks/classroom-requirements.txt \
  -o constraints.txt
"$uv" pip compile --resolution lowest-direct --python-version 3.10 --python-platform x86_64-manylinux_2_28 \
  "${common[@]}" -o constraints-lowest.txt
