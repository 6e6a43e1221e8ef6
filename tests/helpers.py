"""Checks the unit tests share: ``from helpers import …`` (pytest puts tests/ on sys.path for these files)."""

import re

CJK = re.compile(r"[\u4e00-\u9fff]")  # one Chinese character is enough to tell a Chinese message from an English one


def assert_chinese_message(message: str, *fragments) -> str:
    """``message`` is Chinese and contains ``str(fragment)`` for every fragment; returns it."""
    assert CJK.search(message), f"message is not Chinese: {message!r}"
    for fragment in fragments:
        assert str(fragment) in message, (fragment, message)
    return message
