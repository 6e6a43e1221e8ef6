"""The questions as data: the move from Python builders lost no answer of a progress file saved before it, and a
question nobody has changed since keeps its version."""

import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from lesson_lib.practice import questions
from lesson_lib.practice.checkers import CHECKERS
from lesson_lib.practice.progress import Progress, current_version

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
SAVED_BEFORE_THE_MOVE = FIXTURES / "progress-v3-questions.json"  # tests/fixtures/make_progress_v3.py, bf99d1e
RECORD = FIXTURES / "question-blocks.json"  # {id: {"block", "version"}}: python tests/test_question_data.py
INTERVIEW = "面试"  # §8's, a question of the bank outside the quiz's count
NOT_ASKED = ("right_answers", "wrong_answers", "picture")  # a question's tests and a note: no learner sees them

# Asked differently since the fixture was saved (a course update): their answers must stay, as an earlier version's.
CHANGED_SINCE_THE_MOVE = {
    "Q5": "asked inside §6 now: its prompt no longer points to §6 from outside (cold read)",
    "Q3": "its single-head box reads h = 1, d_k = d_model: a note (h=8) there was accepted, (h=1) refused",
    "Q6": "its cache box says 个, not 个数, and lost a hint the full-cache hint always shadowed; "
          "its prompt glosses 键值缓存",
    "Q7": "option B reworded: the head cannot tell which token is the previous one (cold read)",
}


def block_digests(folder: Path = questions.SECTIONS) -> dict[str, str]:
    """{id: a digest of what the question's file says it asks}: the file's [values] and the question's own table,
    less NOT_ASKED; read as TOML, so a comment or a line break changes nothing."""
    digests = {}
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for raw in data["questions"]:
            asked = {field: value for field, value in raw.items() if field not in NOT_ASKED}
            text = json.dumps([data.get("values", {}), asked], ensure_ascii=False, sort_keys=True)
            digests[raw["id"]] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return digests


def test_a_progress_file_saved_before_the_move_loses_no_answer_and_unchanged_questions_keep_their_version(tmp_path):
    """Every answer of the stored file is kept: as the current version's when its version is still current, else
    as an earlier version's. Whether a question changed is read from its file, not from the versions: RECORD holds,
    for each question, the digest of its TOML block (block_digests) and its version when the record was made; a
    question whose block still has that digest must still have that version, so a change to how versions are
    computed shows here, while an instructor's edit of a question (README「改编这节课」) only moves its answers to
    earlier. The record's versions are the stored file's, but for CHANGED_SINCE_THE_MOVE. After rewording a
    question on purpose, rewrite the record: python tests/test_question_data.py."""
    path = tmp_path / "progress.json"
    shutil.copy(SAVED_BEFORE_THE_MOVE, path)
    saved_file = json.loads(SAVED_BEFORE_THE_MOVE.read_text(encoding="utf-8"))
    progress = Progress(path)
    for qid, saved in saved_file["questions"].items():
        if saved["question_version"] == current_version(qid):
            entry = progress.entry(qid)
            assert (entry["attempts"], entry["final"]) == (saved["attempts"], saved["final"]), qid
        else:
            (kept,) = progress.data["earlier"][qid]
            assert kept["attempts"] == saved["attempts"], qid
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    # phrase kept: question ids (the dict's values are reasons, never compared)
    stored = saved_file["questions"]
    moved = {qid for qid, saved in stored.items() if record[qid]["version"] != saved["question_version"]}
    assert moved == set(CHANGED_SINCE_THE_MOVE)
    blocks = block_digests()
    unchanged = [qid for qid in record if blocks.get(qid) == record[qid]["block"]]
    assert len(unchanged) * 2 > len(record), "most questions changed since the record: rewrite it (see above)"
    for qid in unchanged:
        assert current_version(qid) == record[qid]["version"], qid
    if INTERVIEW in unchanged:  # §8's, moved to data too; kept in a field of its own
        assert progress.entry(INTERVIEW) == saved_file["interview"]
        assert saved_file["interview"]["question_version"] == record[INTERVIEW]["version"]


# ------------------------------------------------------------------------------------------ the loader
GOOD = '''
[values]
d_model = { call = "paper.base_d_model" }
h = 16

[[questions]]
id = "X1"
kind = "single"
section = "第 5 节"
prompt = "X1　d_model = {d_model}、h = {h}：每个头几维？"
explanation = "解析：{d_model} / {h} = {d_k}。"
answer = "B"
right_answers = ["B"]
wrong_answers = ["A"]
values = { d_k = { call = "attention.head_width", d_model = "d_model", h = "h" } }
options = [{ key = "A", label = "{d_model}", why = "那是 d_model。" }, { key = "B", label = "{d_k}" }]

[[questions]]
id = "X2"
kind = "form"
section = "第 4 节"
prompt = "X2　一个头打分几次？"
explanation = "解析。"
right_answers = [["{d_model}n^2", "{scores}"]]
wrong_answers = [["{d_model}n^2", "{h}"]]
values = { scores = "d_model * 4" }

[[questions.boxes]]
kind = "expression"
name = "poly"
label = "式子"
target = "d_model * n^2"
hints = [{ value = "2 * d_model * n^2", says = "两步合计了。" }]

[[questions.boxes]]
name = "count"
label = "次数"
target = "scores"
symbols = { d_model = "d_model" }
hints = [{ value = "h", says = "那是头数。" }]
'''


def _file(tmp_path, text, name="s05_test.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_reads_and_its_questions_are_checked_by_the_engine(tmp_path):
    x1, x2 = questions.read_file(_file(tmp_path, GOOD))
    assert x1.choices == (("A", "512"), ("B", "32")) and x1.key.answer == {"B"}
    assert CHECKERS["single"](x1, "B").correct
    wrong = CHECKERS["single"](x1, "A")
    assert wrong.mistakes == ("option=A",)
    assert CHECKERS["form"](x2, x2.right_answers[0]).correct
    slip = CHECKERS["form"](x2, ["1024n^2", "16"])
    assert dict(slip.parts) == {"poly": "wrong", "count": "wrong"}
    assert slip.mistakes == ("poly=1024n²", "count=16")  # both hints name the mistake
    assert x2.values["scores"] == 2048


BAD = {  # what is wrong -> (the change to GOOD, the question and the field the error names)
    "unknown field": (('id = "X1"', 'id = "X1"\ncolour = "red"'), "X1", "colour"),
    "missing field": (('prompt = "X1　d_model = {d_model}、h = {h}：每个头几维？"\n', ""), "X1", "prompt"),
    "wrong type": (('answer = "B"', "answer = 2"), "X1", "answer"),
    "unknown function": (('call = "attention.head_width"', 'call = "attention.width"'), "X1", "values.d_k.call"),
    "unknown argument": (('h = "h" }', 'heads = "h" }'), "X1", "values.d_k.heads"),  # the argument it names
    "an extra argument": (('h = "h" }', 'h = "h", x = 1 }'), "X1", "values.d_k.x"),
    "an argument to a function with none": (('"paper.base_d_model" }', '"paper.base_d_model", h = 8 }'), "",
                                             "values.d_model.h"),
    "unknown checker": (('kind = "expression"', 'kind = "expression"\nexplain = "guess"'), "X2",
                        "boxes[0].explain"),
    "unknown placeholder": (("解析：{d_model}", "解析：{d_ff}"), "X1", "explanation"),
    "duplicate id": (('id = "X2"', 'id = "X1"'), "X1", "id"),
    "a wrong option without why": ((', why = "那是 d_model。"', ""), "X1", "options"),
    "an answer not an option": (('answer = "B"', 'answer = "C"'), "X1", "answer"),
    "a key of two characters": (('{ key = "B", label', '{ key = "BB", label'), "X1", "options"),
    "a bad expression": (('target = "scores"', 'target = "scores +"'), "X2", "boxes[1].target"),
    "a missing argument": ((', h = "h" }', " }"), "X1", "values.d_k.h"),
    "an unclosed placeholder": (("解析：{d_model}", "解析：{d_model"), "X1", "explanation"),
    "a lone closing brace": (("解析：{d_model}", "解析：d_model}"), "X1", "explanation"),
    "an empty placeholder": (("解析：{d_model}", "解析：{}"), "X1", "explanation"),
    "a bad format": (("解析：{d_model}", "解析：{d_model:,.q}"), "X1", "explanation"),
    "a function written as a value": (('{ call = "attention.head_width", d_model = "d_model", h = "h" }',
                                       '"attention.head_width"'), "X1", "values.d_k"),
    "a file value with no function": (('{ call = "paper.base_d_model" }', '{ call = "paper.d_model" }'), "",
                                      "values.d_model.call"),
    "a list as the kind": (('kind = "single"', 'kind = ["single"]'), "X1", "kind"),
    "a list as the function": (('call = "paper.base_d_model"', 'call = ["paper.base_d_model"]'), "",
                               "values.d_model.call"),
    "an unknown per": (('target = "scores"', 'target = "scores"\nper = ["head", "heads"]'), "X2", "boxes[1].per"),
    "a per not a list": (('target = "scores"', 'target = "scores"\nper = "head"'), "X2", "boxes[1].per"),
    "a list in per": (('target = "scores"', 'target = "scores"\nper = [["head"]]'), "X2", "boxes[1].per"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_a_bad_file_names_its_file_question_and_field(tmp_path, case):
    (old, new), qid, field = BAD[case]
    assert old in GOOD
    path = _file(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(questions.QuestionDataError) as err:
        questions.read_file(path)
    # phrase kept: the error's file, question id and field name, not words
    assert (err.value.file, err.value.question, err.value.field) == (path, qid, field)


@pytest.mark.parametrize("bad", ["hi = twelve", "[[questions]"])
def test_a_toml_syntax_error_names_the_file_line_and_column(tmp_path, bad):
    text = GOOD.replace('id = "X1"', f'id = "X1"\n{bad}', 1)
    path = _file(tmp_path, text, "bad.toml")  # no digit in the name: the message's first are the place
    with pytest.raises(questions.QuestionDataError) as err:
        questions.read_file(path)
    assert (err.value.file, err.value.question, err.value.field) == (path, "", "")
    line = text.splitlines().index(bad) + 1
    assert re.findall(r"\d+", str(err.value))[0] == str(line)
    # phrase kept: the message must quote the learner's own line as typed
    assert f"「{bad}」" in str(err.value)  # the line quoted as typed


@pytest.mark.parametrize("text, named, quoted", [("{}", "d_model", "{}"), ("d_model}", "{d_model}", "}"),
                                                 ("{d_model:,.q}", "{d_model:,}", "{d_model:,.q}"),
                                                 ("{dk} 维", "{d_model}", "{dk}")])
def test_a_placeholder_error_shows_this_files_own_names(tmp_path, text, named, quoted):
    """It names the file's own values and quotes the placeholder that does not fill, as written."""
    path = _file(tmp_path, GOOD.replace("解析：{d_model}", f"解析：{text}", 1))
    with pytest.raises(questions.QuestionDataError) as err:
        questions.read_file(path)
    assert named in str(err.value) and quoted in str(err.value)


@pytest.mark.parametrize(("old", "kind", "field"), [('answer = "B"\n', "single", "answer"),
                                                   ('explanation = "解析。"\n', "form", "explanation"),
                                                   ('target = "d_model * n^2"\n', "expression", "boxes[0].target"),
                                                   ('target = "scores"\n', "kind", "boxes[1].target")])
def test_a_missing_field_names_the_kind_that_needs_it(tmp_path, old, kind, field):
    """「single 题必须有 answer」: the kind of question (or box) is named beside the missing field; a box whose kind
    was left out is said to have none (its author never wrote number), so the message names the field kind."""
    path = _file(tmp_path, GOOD.replace(old, "", 1))
    with pytest.raises(questions.QuestionDataError) as err:
        questions.read_file(path)
    assert err.value.field == field and re.search(rf"\b{kind}\b", str(err.value)), err.value


@pytest.mark.parametrize(("kind", "answer", "unknown"), [("multi", "BF", ["F"]), ("single", "C", ["C"]),
                                                      ("single", "AB", [])])
def test_an_answer_names_the_key_that_is_no_option(tmp_path, kind, answer, unknown):
    """「AF」 on a multi question names F, the key no option has (not the single-choice rule); two keys on a single
    question name none: both keys are options."""
    text = GOOD.replace('kind = "single"', f'kind = "{kind}"', 1).replace('answer = "B"', f'answer = "{answer}"', 1)
    with pytest.raises(questions.QuestionDataError) as err:
        questions.read_file(_file(tmp_path, text))
    keys = set(re.findall(r"(?<![\w.])[A-Z](?![\w.])", str(err.value)))  # the one-letter keys it names
    assert err.value.field == "answer" and sorted(keys - {"A", "B"}) == unknown, err.value


def test_an_argument_to_a_function_with_none_is_quoted_to_be_deleted(tmp_path):
    path = _file(tmp_path, GOOD.replace('"paper.base_d_model" }', '"paper.base_d_model", h = 8 }', 1))
    with pytest.raises(questions.QuestionDataError) as err:
        questions.read_file(path)
    assert err.value.field == "values.d_model.h" and "h = 8" in str(err.value), err.value


@pytest.mark.parametrize(("text", "quoted"), [("d_model} x", "} x / {h} = "), ("{d_model x", "{d_model x /"),
                                             ("{d_model} { x", "{ x / {h} = ")])
def test_an_unpaired_brace_is_quoted_and_not_taken_for_a_wrong_name(tmp_path, text, quoted):
    """A lone brace is quoted from where it stands (12 characters); the file's value names, which only a placeholder
    needs, are not offered for it: X1's d_k is offered to a wrong name ({dk}), not to a brace."""
    said = []
    for written in (text, "{dk} x"):
        with pytest.raises(questions.QuestionDataError) as err:
            questions.read_file(_file(tmp_path, GOOD.replace("{d_model} /", f"{written} /", 1)))
        assert err.value.field == "explanation"
        said.append(str(err.value))
    brace, name = said
    assert quoted in brace and "d_k" not in brace and "d_k" in name, said


def test_an_id_in_two_files_is_refused(tmp_path, monkeypatch):
    _file(tmp_path, GOOD, "s04_a.toml")
    second = _file(tmp_path, GOOD.replace('id = "X2"', 'id = "X3"'), "s05_b.toml")
    monkeypatch.setattr(questions, "SECTIONS", tmp_path)
    questions._bank.cache_clear()
    try:
        with pytest.raises(questions.QuestionDataError) as err:
            questions.question_ids()
    finally:
        monkeypatch.undo()
        questions._bank.cache_clear()
    assert (err.value.file, err.value.question, err.value.field) == (second, "X1", "id")


def test_every_section_file_is_packaged():
    """An installed lesson_lib (the hub image) finds its question files: pyproject ships *.toml."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "*.toml" in pyproject["tool"]["setuptools"]["package-data"]["*"]
    assert {p.parent for p in questions.SECTIONS.glob("*.toml")} == {questions.SECTIONS}


def test_a_question_s_picture_is_the_last_one_drawn_before_it_is_asked():
    """Q5 names the §6 function and arguments that draw the map it reads; §6 draws exactly that before asking."""
    src = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "notebooks" / "src").glob("*.md")))
    pictured = [qid for qid in questions.question_ids() if questions.question(qid).picture]
    assert "Q5" in pictured
    for qid in pictured:
        picture = dict(questions.question(qid).picture)
        function = picture.pop("draw").rsplit(".", 1)[1]
        before = src.split(f'ask("{qid}")')[0]
        drawn = re.findall(rf"\b{function}\(([^)]*)\)", before)[-1]
        assert drawn.endswith(", ".join(f"{k}={v}" for k, v in picture.items())), (qid, drawn)


if __name__ == "__main__":  # rewrite RECORD from the question files as they are now
    record = {qid: {"block": block, "version": current_version(qid)} for qid, block in block_digests().items()}
    RECORD.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {RECORD} ({len(record)} questions)")
