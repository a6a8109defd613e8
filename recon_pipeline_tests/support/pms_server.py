"""The Apaleo-shaped PMS simulator served on a real loopback server, and its API key."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from recon_pipeline.postings.http_adapter import HttpPostingAdapter
from recon_pipeline.simulation.pms.app import build_pms_app
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.shared_servers import serving

API_KEY = "pms_secret_key_4f1c"


@dataclass
class Pms:
    base_url: str
    control: httpx.Client

    def faults(self, **settings: Any) -> None:
        self.control.post("/_simulator/faults", json=settings).raise_for_status()

    def stats(self) -> dict[str, Any]:
        return dict(self.control.get("/_simulator/stats").json())

    def adapter(self, **kwargs: Any) -> HttpPostingAdapter:
        return HttpPostingAdapter(self.base_url, API_KEY, **kwargs)


@contextmanager
def serve_pms() -> Iterator[Pms]:
    """The PMS simulator on 127.0.0.1 and a client for its control endpoints."""
    with serving(build_pms_app(API_KEY)) as server, loopback_client(base_url=server.base_url) as control:
        yield Pms(server.base_url, control)
