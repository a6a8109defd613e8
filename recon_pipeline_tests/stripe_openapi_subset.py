"""Regenerate ``data/stripe_openapi_subset.json``: the part of Stripe's published OpenAPI description that the
simulator's Stripe flavour serves, for ``test_simulator_strict.py`` to validate every response against.

Run: ``python -m recon_pipeline_tests.stripe_openapi_subset SPEC3_JSON`` (a ``spec3.json`` of stripe/openapi;
the committed subset came from ``git show e0123a38b40c8d840b4c0469ac0ee1650b6bfea3:openapi/spec3.json`` of
https://github.com/stripe/openapi, the newest description whose file could be had here).

That description is of API version 2020-08-27; the client pins 2022-11-15
(``providers/stripe/api_version.py``), whose upgrade notes change two things among the objects served here,
applied below (``apply_pinned_changes``):
a PaymentIntent no longer has ``charges`` but has ``latest_charge`` (an id, expandable to the charge), and a
charge's ``refunds`` is no longer included unless expanded. Everything else is Stripe's text as published.

Trimmed: only the GET operations of ``SERVED_PATHS`` (their query parameters by name, their 200 and error
responses), and the component schemas those reach. An expandable field (``x-expansionResources``) that
points at an object the simulator does not serve keeps only its id form (the simulator never expands it),
so the subset does not drag in customers, invoices and the like. ``description`` texts are dropped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SUBSET_PATH = Path(__file__).parent / "data" / "stripe_openapi_subset.json"
SOURCE = {
    "repository": "https://github.com/stripe/openapi",
    "commit": "e0123a38b40c8d840b4c0469ac0ee1650b6bfea3",
    "path": "openapi/spec3.json",
    "published_version": "2020-08-27",
}
PINNED_VERSION = "2022-11-15"
# GET endpoints of the simulator and of routes being added to it (their schemas come along).
SERVED_PATHS = (
    "/v1/charges",
    "/v1/charges/{charge}",
    "/v1/refunds",
    "/v1/refunds/{refund}",
    "/v1/payment_intents",
    "/v1/payment_intents/{intent}",
    "/v1/events",
    "/v1/events/{id}",
    "/v1/disputes",
    "/v1/disputes/{dispute}",
    "/v1/payouts",
    "/v1/payouts/{payout}",
    "/v1/balance_transactions",
    "/v1/balance_transactions/{id}",
)
SERVED_OBJECTS = frozenset(
    {"charge", "refund", "payment_intent", "event", "balance_transaction", "dispute", "payout", "error"}
)
_LATEST_CHARGE = {
    "anyOf": [{"maxLength": 5000, "type": "string"}, {"$ref": "#/components/schemas/charge"}],
    "nullable": True,
    "x-expansionResources": {"oneOf": [{"$ref": "#/components/schemas/charge"}]},
}


def apply_pinned_changes(schemas: dict[str, Any]) -> None:
    """The 2022-11-15 changes to the served objects (Stripe's upgrade notes for that version)."""
    intent = schemas["payment_intent"]
    del intent["properties"]["charges"]
    intent["properties"]["latest_charge"] = _LATEST_CHARGE
    charge = schemas["charge"]
    charge["properties"]["refunds"] = {**charge["properties"]["refunds"], "nullable": True}
    charge["required"] = [name for name in charge["required"] if name != "refunds"]


def _schema_name(ref: str) -> str:
    return ref.rsplit("/", 1)[1]


def _trimmed(node: Any, in_properties: bool = False) -> Any:
    """``node`` without description texts, its unserved expansions reduced to their id form."""
    if isinstance(node, list):
        return [_trimmed(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "x-expansionResources" in node and "anyOf" in node:
        kept = [
            option
            for option in node["anyOf"]
            if "$ref" not in option or _schema_name(option["$ref"]) in SERVED_OBJECTS
        ]
        node = {key: value for key, value in node.items() if key != "x-expansionResources"}
        node["anyOf"] = kept
    return {
        key: _trimmed(value, in_properties=key == "properties")
        for key, value in node.items()
        if in_properties or not (key == "description" and isinstance(value, str))
    }


def _references(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        if "$ref" in node:
            found.add(_schema_name(node["$ref"]))
        for value in node.values():
            _references(value, found)
    elif isinstance(node, list):
        for value in node:
            _references(value, found)


def subset(spec: dict[str, Any]) -> dict[str, Any]:
    """The served part of ``spec`` (a whole spec3.json) as a self-contained OpenAPI document."""
    if spec["info"]["version"] != SOURCE["published_version"]:
        version, expected = spec["info"]["version"], SOURCE["published_version"]
        raise ValueError(f"spec is of version {version}, expected {expected}")
    schemas = json.loads(json.dumps(spec["components"]["schemas"]))
    apply_pinned_changes(schemas)
    paths: dict[str, Any] = {}
    for path in SERVED_PATHS:
        operation = spec["paths"][path]["get"]
        paths[path] = {
            "get": {
                "parameters": [
                    {"name": p["name"], "in": "query", "required": p.get("required", False)}
                    for p in operation.get("parameters", [])
                    if p["in"] == "query"
                ],
                "responses": _trimmed(operation["responses"]),
            }
        }
    wanted: set[str] = set()
    _references(paths, wanted)
    pending, kept = set(wanted), {}
    while pending:
        name = pending.pop()
        kept[name] = _trimmed(schemas[name])
        found: set[str] = set()
        _references(kept[name], found)
        pending |= found - kept.keys()
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": "Stripe API (the subset the simulator serves)",
            "version": PINNED_VERSION,
            "x-provenance": {**SOURCE, "changes": "2022-11-15 upgrade notes: see stripe_openapi_subset.py"},
        },
        "paths": paths,
        "components": {"schemas": dict(sorted(kept.items()))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec3_json", type=Path)
    args = parser.parse_args()
    document = subset(json.loads(args.spec3_json.read_text(encoding="utf-8")))
    SUBSET_PATH.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{SUBSET_PATH}: {len(document['components']['schemas'])} schemas")


if __name__ == "__main__":
    main()
