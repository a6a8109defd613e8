"""Headless Chromium for the tests that check what a person sees: Debian's /usr/bin/chromium driven by
Playwright (``.ci/run`` installs it; Playwright never downloads a browser here).

Every wait is bounded: the browser launch, each navigation and each locator wait have their own timeout.
A page records what it logged as an error, its uncaught exceptions and every URL it requested, so a test
can assert that a report is self-contained. Screenshots go to ``$RECON_TEST_ARTIFACTS`` (default
``<repo>/test-artifacts/``), where CI can pick them up.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Error, Page, Request, sync_playwright

from recon_pipeline_tests.support.dagster_processes import REPO_ROOT

CHROMIUM = Path("/usr/bin/chromium")
# No sandbox (CI runs as root), no GPU, and none of Chromium's own traffic to Google's services.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
LAUNCH_TIMEOUT_MS = 30_000
NAVIGATION_TIMEOUT_MS = 30_000
WAIT_TIMEOUT_MS = 20_000
VIEWPORT_WIDTH, VIEWPORT_HEIGHT = 1920, 1200
LAPTOP_VIEWPORT = (1366, 768)  # the analyst's laptop: every desk page must fit its width (issue 27)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def artifacts_dir() -> Path:
    """Where screenshots go: ``$RECON_TEST_ARTIFACTS`` or ``<repo>/test-artifacts/`` (git-ignored)."""
    path = Path(os.environ.get("RECON_TEST_ARTIFACTS") or REPO_ROOT / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class WatchedPage:
    """A Playwright page plus what it did: console errors, uncaught exceptions, requested URLs."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requested_urls: list[str] = field(default_factory=list)

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)

    def _on_page_error(self, error: Error) -> None:
        self.page_errors.append(str(error))

    def _on_request(self, request: Request) -> None:
        self.requested_urls.append(request.url)

    def screenshot(self, name: str, full_page: bool = False) -> Path:
        """The viewport (or the whole scrollable page) as ``<artifacts>/<name>.png``."""
        path = artifacts_dir() / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


@contextmanager
def chromium_page(
    name: str, viewport: tuple[int, int] = (VIEWPORT_WIDTH, VIEWPORT_HEIGHT)
) -> Iterator[WatchedPage]:
    """A fresh page of ``viewport`` (width, height) in a fresh headless Chromium; skips when Debian's
    chromium is not installed.

    If the block raises, the page is first saved as ``<artifacts>/<name>-failure.png``."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} missing: install Debian's chromium (.ci/run does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS), timeout=LAUNCH_TIMEOUT_MS
        )
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
            page.set_default_timeout(WAIT_TIMEOUT_MS)
            watched = WatchedPage(page)
            page.on("console", watched._on_console)
            page.on("pageerror", watched._on_page_error)
            page.on("request", watched._on_request)
            try:
                yield watched
            except Exception:
                with suppress(Error):
                    watched.screenshot(f"{name}-failure")
                raise
        finally:
            browser.close()


def png_dimensions(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; raises if ``path`` is not a PNG."""
    head = path.read_bytes()[:24]
    if head[:8] != PNG_SIGNATURE or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)
