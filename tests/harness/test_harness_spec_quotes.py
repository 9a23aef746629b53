"""The quote check itself: what it lets through, what it refuses, and when it may skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_quotes import normalise, spec_text, unquoted_pieces

TEXT = normalise("""Every request from a client to the server follows this format:

  \u2022 Frame 0: command name (string)
  \u2022 Frame 1: request body (JSON string)

Command names are case-insensitive. The server replies \u201c400\u201d \u2013 bad request.
KIND(1)|ENCODING(1)|PAYLOAD?(...)
""")


def test_whitespace_and_line_breaks_are_ignored() -> None:
    assert unquoted_pieces("follows this format: \u2022 Frame 0: command name (string) \u2022 Frame 1:", TEXT) == []


def test_a_quote_is_checked_to_its_last_character() -> None:
    # the first 40 characters match; only the end differs
    quote = "Every request from a client to the server follows this format: Frame 0: command name"
    assert unquoted_pieces(quote, TEXT) == [quote]


def test_case_and_words_must_match() -> None:
    assert unquoted_pieces("command names are case-insensitive.", TEXT) != []
    assert unquoted_pieces("Command names are case-sensitive.", TEXT) != []


def test_typographic_quotes_and_dashes_compare_as_ascii() -> None:
    assert unquoted_pieces('The server replies "400" - bad request.', TEXT) == []


def test_elided_pieces_must_each_match_in_order() -> None:
    assert unquoted_pieces("Every request from a client ... Command names are case-insensitive.", TEXT) == []
    assert unquoted_pieces("Command names are case-insensitive. ... Every request from a client", TEXT) == [
        "Every request from a client"]


def test_an_ellipsis_without_spaces_is_literal_text() -> None:
    assert unquoted_pieces("KIND(1)|ENCODING(1)|PAYLOAD?(...)", TEXT) == []
    assert unquoted_pieces("KIND(1)|ENCODING(1)|PAYLOAD?(..)", TEXT) != []


def test_absent_spec_texts_skip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        spec_text("stmp.txt", tmp_path / "absent")


def test_absent_spec_texts_fail_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        spec_text("stmp.txt", tmp_path / "absent")


def test_a_missing_spec_file_is_an_error_not_a_skip(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        spec_text("nonexistent.txt", tmp_path)
