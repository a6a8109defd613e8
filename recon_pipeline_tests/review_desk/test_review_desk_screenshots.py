"""The screenshot maker of ``docs/desk/`` (``screenshots.py``) on the analyst's night: one PNG per page, each
exactly a laptop's window (1,366 x 768)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recon_pipeline_tests.review_desk.screenshots import analyst_desk, desk_pages, save_screenshots
from recon_pipeline_tests.support.browser import LAPTOP_VIEWPORT, png_dimensions


@pytest.mark.slow  # drives Chromium
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_every_page_is_saved_at_a_laptops_size(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with analyst_desk(database_url, monkeypatch) as desk:
        written = save_screenshots(desk, tmp_path / "desk")
        names = list(desk_pages(desk.engine))
    assert written == [tmp_path / "desk" / f"{name}.png" for name in names]
    assert {name: png_dimensions(path) for name, path in zip(names, written, strict=True)} == dict.fromkeys(
        names, LAPTOP_VIEWPORT
    )
