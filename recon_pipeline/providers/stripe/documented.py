"""Which GET requests Stripe documents: per endpoint its query parameters, and which ``expand[]`` paths.

The rule is Stripe's published OpenAPI description, reduced to ``documented_requests.json`` (regenerate it
with ``python -m recon_pipeline_tests.support.stripe_openapi_subset SPEC3_JSON``; it came from the spec3.json
of https://github.com/stripe/openapi at commit e0123a38b40c8d840b4c0469ac0ee1650b6bfea3, with the
2022-11-15 changes the client pins: a PaymentIntent's ``latest_charge`` in place of ``charges``):

- a query parameter is one the endpoint publishes, spelled as on the wire (``created[gte]``, ``expand[]``
  or ``expand[0]``);
- an expansion path's first segment is in the object's ``x-expandableFields`` (a list's paths start with
  ``data.`` and apply to its items), each next segment expandable on the type the previous one reached;
- through a polymorphic field (several ``x-expansionResources``: a balance transaction's ``source`` may be a
  charge, a refund, a dispute, a payout, …) a nested segment is valid only when EVERY type the field can hold
  has it: ``data.source.charge`` is refused, as a charge has no ``charge``. Whether Stripe skips such a path
  on the sources that lack it is nowhere stated, so it is never relied on. Stripe documents no mapping from
  a list filter (``type=``) to the source's object type, so no filter narrows a field here;
- at most four levels (``data.invoice.subscription.default_source`` is Stripe's own deepest example).

The simulator refuses by this rule (``simulation/stripe/api.py``), with Stripe's wording as far as it is
known, and the tests hold every request the client sends to it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recon_pipeline.providers import documented as provider_rule
from recon_pipeline.providers.documented import Refusal, expand_values, unknown_parameter

Expandable = Mapping[str, Mapping[str, Sequence[str]]]  # type -> expandable field -> the types it holds
TABLE_PATH = Path(__file__).with_name("documented_requests.json")
MAX_EXPANSION_DEPTH = 4


@functools.cache
def _table() -> dict[str, Any]:
    table: dict[str, Any] = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    return table


def endpoint_of(path: str) -> str:
    """The published endpoint a concrete request path is (``/v1/charges/ch_1`` is ``/v1/charges/{charge}``);
    ValueError naming the path when Stripe documents none here."""
    return provider_rule.endpoint_of(_table()["endpoints"], path, "Stripe")


def parameters(endpoint: str) -> frozenset[str]:
    """The query parameters ``endpoint`` publishes, as spelled on the wire (arrays as ``name[]``)."""
    return frozenset(_endpoint(endpoint)["parameters"])


def refusal(endpoint: str, query: Sequence[tuple[str, str]]) -> Refusal | None:
    """Why Stripe would refuse ``GET endpoint?query`` (its items in the order sent), None when the endpoint
    documents every parameter and expansion of it."""
    unknown = unknown_parameter(parameters(endpoint), query)
    if unknown is not None:
        return Refusal(f"Received unknown parameter: {unknown}", unknown, "parameter_unknown")
    return expansion_refusal(endpoint, query)


def expansion_refusal(endpoint: str, query: Sequence[tuple[str, str]]) -> Refusal | None:
    """The refusal of the first ``expand[]`` path of ``query`` that ``endpoint`` does not document."""
    described = _endpoint(endpoint)
    for index, name, path in expand_values(query):
        param = f"expand[{index}]" if name == "expand[]" else name
        if path.count(".") >= MAX_EXPANSION_DEPTH:
            return Refusal(
                f"You cannot expand more than {MAX_EXPANSION_DEPTH} levels of a property. Property: {path}",
                param,
            )
        refused = unexpandable(described["object"], described["list"], path)
        if refused is not None:
            return Refusal(f"This property cannot be expanded ({refused}).", param)
    return None


def unexpandable(
    object_type: str, listed: bool, path: str, expandable: Expandable | None = None
) -> str | None:
    """The first segment of the expansion ``path`` (on an ``object_type``, or a list of them) that cannot be
    expanded on every type it may be reached on; None when the whole path can. ``expandable``: the table's
    (Stripe's), unless given."""
    segments = path.split(".")
    if listed:
        if segments[0] != "data" or len(segments) == 1:
            return segments[0]
        segments = segments[1:]
    expandable = _table()["expandable"] if expandable is None else expandable
    types: Sequence[str] = [object_type]
    for segment in segments:
        if not types or any(segment not in expandable.get(t, {}) for t in types):
            return segment
        types = sorted({held for t in types for held in expandable[t][segment]})
    return None


def _endpoint(endpoint: str) -> dict[str, Any]:
    described = _table()["endpoints"].get(endpoint)
    if described is None:
        raise ValueError(f"no documented Stripe GET endpoint {endpoint!r}")
    result: dict[str, Any] = described
    return result
