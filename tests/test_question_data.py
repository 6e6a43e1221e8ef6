"""The questions as data: the move from Python builders keeps every question's version (a progress file saved
before the move reads with every answer intact)."""

import json
import shutil
from pathlib import Path

from lesson_lib.practice import questions
from lesson_lib.practice.progress import Progress, current_version

FIXTURES = Path(__file__).parent / "fixtures"
SAVED_BEFORE_THE_MOVE = FIXTURES / "progress-v3-questions.json"  # tests/fixtures/make_progress_v3.py at f08f78d


def test_a_progress_file_saved_before_the_move_reads_with_every_answer_current(tmp_path):
    path = tmp_path / "progress.json"
    shutil.copy(SAVED_BEFORE_THE_MOVE, path)
    stored = json.loads(SAVED_BEFORE_THE_MOVE.read_text(encoding="utf-8"))["questions"]
    progress = Progress(path)
    assert progress.data["earlier"] == {}
    assert set(stored) == {*questions.question_ids(), *questions.lab_ids()}
    for qid, saved in stored.items():
        entry = progress.entry(qid)
        assert entry["question_version"] == saved["question_version"] == current_version(qid), qid
        assert entry["attempts"] == saved["attempts"], qid
        assert entry["final"] == saved["final"], qid
