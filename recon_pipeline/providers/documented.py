"""What a provider documents of its GET requests, in the words every provider's rule shares: an endpoint's
query parameters as spelled on the wire, the ``expand[]`` values it takes, and the refusal of anything
else (``Refusal``: the provider's message and the offending parameter).

Each provider states its own rule beside its client (``stripe/documented.py``: derived from Stripe's
published OpenAPI description, expansions judged per object type; ``razorpay/documented.py`` and
``adyen/documented.py``: tables from their API references). The simulators refuse by that rule, and the
tests hold every request the clients send to it: a client that depends on a leniency the provider never
promised fails here, not in production.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_INDEXED = re.compile(r"\[\d+\]$")
_TEMPLATE_PART = re.compile(r"\{[a-z_]+\}")


@dataclass(frozen=True)
class Refusal:
    """Why the provider would refuse a request: its message, the offending ``param``, and its ``code``."""

    message: str
    param: str
    code: str | None = None


@dataclass(frozen=True)
class DocumentedEndpoint:
    """One endpoint as its provider documents it: its query parameters (wire names, arrays as ``name[]``)
    and the values its ``expand[]`` takes (none: it expands nothing)."""

    parameters: frozenset[str]
    expansions: frozenset[str] = frozenset()


def array_name(name: str) -> str:
    """A query parameter's name with an array index made plain: ``expand[0]`` is ``expand[]``."""
    return _INDEXED.sub("[]", name)


def endpoint_of(endpoints: Iterable[str], path: str, provider: str) -> str:
    """The documented endpoint (a path template: ``/v1/payments/{id}``) a concrete request ``path`` is; a
    literal endpoint wins over a template (``/v1/settlements/recon/combined``). ValueError naming the path
    when ``provider`` documents none."""
    templates = list(endpoints)
    if path in templates:
        return path
    for endpoint in templates:
        if re.fullmatch(_TEMPLATE_PART.sub("[^/]+", endpoint), path):
            return endpoint
    raise ValueError(f"no documented {provider} GET endpoint is {path!r}")


def unknown_parameter(parameters: frozenset[str], query: Sequence[tuple[str, str]]) -> str | None:
    """The first (by name) query parameter not among ``parameters`` (an array item indexed or not)."""
    unknown = sorted(name for name, _ in query if array_name(name) not in parameters)
    return unknown[0] if unknown else None


def expand_values(query: Sequence[tuple[str, str]]) -> list[tuple[int, str, str]]:
    """The ``expand[]`` items of ``query`` in the order sent: (index among them, name as sent, path)."""
    items = [(name, value) for name, value in query if array_name(name) == "expand[]"]
    return [(index, name, value) for index, (name, value) in enumerate(items)]


def table_refusal(
    endpoints: Mapping[str, DocumentedEndpoint],
    endpoint: str,
    query: Sequence[tuple[str, str]],
) -> tuple[str | None, tuple[int, str] | None]:
    """For a provider whose rule is a table (``DocumentedEndpoint`` per endpoint): the first parameter
    ``endpoint`` does not take, and the first ``expand[]`` value it does not (its index and value); each
    None when there is none. ValueError for an endpoint the table lacks."""
    described = endpoints.get(endpoint)
    if described is None:
        raise ValueError(f"no documented GET endpoint {endpoint!r}")
    refused = [
        (index, value) for index, _, value in expand_values(query) if value not in described.expansions
    ]
    return unknown_parameter(described.parameters, query), (refused[0] if refused else None)
