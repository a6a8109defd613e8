"""What the Dagster UI shows of each definition's description: it renders them as markdown, where a bare
``<property>`` is an HTML tag and vanishes. Rendered here with markdown-it (CommonMark, HTML allowed, as
the UI's renderer), every ``<word>`` of a description must come out as text."""

from __future__ import annotations

import re

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
