"""What the Dagster UI shows of each definition's description: it renders them as markdown, where a bare
``<property>`` is an HTML tag and vanishes. Rendered here with markdown-it (CommonMark, HTML allowed, as
the UI's renderer), every ``<word>`` of a description must come out as text."""

from __future__ import annotations

import re
import warnings

import dagster as dg
import pytest
from markdown_it import MarkdownIt

from recon_pipeline.definitions import build_definitions

_TAG_LIKE = re.compile(r"<([A-Za-z][\w-]*)>")


def descriptions() -> dict[str, str]:
    defs = build_definitions()
    # A live instance: resolving definitions reads Dagster's defs-state storage, which an earlier
    # test's (closed) test instance may still be registered as.
    with dg.instance_for_test():
        specs = defs.resolve_all_asset_specs()
    found = {str(spec.key): spec.description for spec in specs}
    for checks in defs.asset_checks or []:
        found.update({str(spec.key): spec.description for spec in checks.check_specs})
    for job in [*(defs.jobs or []), *(defs.sensors or []), *(defs.schedules or [])]:
        found[getattr(job, "name", str(job))] = getattr(job, "description", None)
    return {name: text for name, text in found.items() if text}


@pytest.mark.parametrize(("name", "text"), sorted(descriptions().items()))
def test_no_description_loses_tag_like_text(name: str, text: str) -> None:
    rendered = MarkdownIt("commonmark").render(text)
    for word in _TAG_LIKE.findall(text):
        assert f"<{word}>" not in rendered and f"&lt;{word}&gt;" in rendered, (name, word)


_VARIABLE = re.compile(r"\b(?:RECON|DAGSTER)_[A-Z_]+\b")


def test_every_schedule_sensor_and_check_says_plainly_what_it_does() -> None:
    """The UI's automation and check pages show these to an operator: each has a description, and none
    names an environment variable (docs/configuration.md does)."""
    defs = build_definitions()
    with dg.instance_for_test():
        texts = {s.name: s.description for s in [*(defs.schedules or []), *(defs.sensors or [])]}
        for checks in defs.asset_checks or []:
            texts.update({spec.name: spec.description for spec in checks.check_specs})
    assert len(texts) >= 12
    assert {name for name, text in texts.items() if not text} == set()
    named = {name: _VARIABLE.findall(text or "") for name, text in texts.items()}
    assert {name: found for name, found in named.items() if found} == {}


def test_loading_the_code_location_warns_of_nothing_in_beta() -> None:
    """Dagster's copies of each sensor warned that its `owners` parameter is in beta, at every load."""
    with warnings.catch_warnings(record=True) as caught, dg.instance_for_test():
        warnings.simplefilter("always")
        defs = build_definitions()
        defs.get_repository_def()
    assert [str(w.message) for w in caught if issubclass(w.category, dg.BetaWarning)] == []
