#!/usr/bin/env bash
# lesson_lib's size: Python lines, lesson code against machinery (the split is by file, as listed), checks.py, data files.   bash scripts/size_report.sh
cd "$(dirname "$0")/.."
total=$(find lesson_lib -name '*.py' | xargs cat | wc -l)
# lesson code: the kernel, what sections compute/draw/print, the models they run, the exercises' content (the
# questions are data files now, counted apart)
lesson=$(find lesson_lib/attention.py lesson_lib/costs.py lesson_lib/head_stats.py lesson_lib/paper.py \
  lesson_lib/sections lesson_lib/models \
  -name '*.py' 2>/dev/null | xargs cat | wc -l)
echo "lesson_lib: $total lines of Python in $(find lesson_lib -name '*.py' | wc -l) files"
echo "  lesson code (kernel, costs, head_stats, paper, sections with their exercises, models): $lesson"
echo "  machinery (checks, runtime, show, and practice/: the engine that reads the questions data): $((total - lesson))"
echo "  checks.py: $(wc -l < lesson_lib/checks.py)"
echo "  non-Python files in lesson_lib: $(git ls-files lesson_lib | grep -v '\.py$' | xargs -r cat | wc -l) lines ($(git ls-files lesson_lib | grep -v '\.py$' | tr '\n' ' '))"
for d in lesson_lib/*/; do case "$d" in *__pycache__*) continue;; esac; printf '  %-28s %s\n' "$d" "$(find "$d" -name '*.py' | xargs cat | wc -l)"; done
