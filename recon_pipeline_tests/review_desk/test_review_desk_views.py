"""Saved views' pure rules: a list's query re-encoded (blanks and the page left out, too long dropped)
and a view's list and name validated."""

from __future__ import annotations

import pytest

from recon_pipeline.review_desk.views import MAX_QUERY_LENGTH, clean_query, validate_view

pytestmark = pytest.mark.fast


def test_a_query_is_re_encoded_so_it_stays_a_query_of_its_path() -> None:
    assert clean_query("status=open&q=&sort=-night&page=3", leave_out=("page",)) == "status=open&sort=-night"
    assert clean_query("q=a b&x=%0d%0aSet-Cookie:1") == "q=a+b&x=%0D%0ASet-Cookie%3A1"
    assert clean_query("https://evil.example/") == ""  # no name=value: nothing kept
    assert clean_query("q=" + "x" * MAX_QUERY_LENGTH) == ""


def test_a_view_names_a_known_list_and_has_a_one_line_name() -> None:
    assert validate_view("findings", "  Open EUR ") == ("findings", "Open EUR")
    for list_name, name, message in (
        ("users", "x", "unknown list 'users'"),
        ("findings", " ", "1-80 characters"),
        ("findings", "x" * 81, "1-80 characters"),
        ("findings", "a\nb", "one line"),
    ):
        with pytest.raises(ValueError, match=message):
            validate_view(list_name, name)
