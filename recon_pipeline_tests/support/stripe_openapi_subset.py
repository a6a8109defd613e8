"""Regenerate ``data/stripe_openapi_subset.json``: the part of Stripe's published OpenAPI description that the
simulator's Stripe flavour serves, for ``test_simulator_strict.py`` to validate every response against; and
``recon_pipeline/providers/stripe/documented_requests.json``: what the requests to those endpoints may say
(their query parameters as spelled on the wire, and every expandable field of every object type an
expansion from their objects can reach), which ``providers/stripe/documented.py`` judges requests by.

Run: ``python -m recon_pipeline_tests.support.stripe_openapi_subset SPEC3_JSON`` (a ``spec3.json`` of
stripe/openapi; the committed subset came from
``git show e0123a38b40c8d840b4c0469ac0ee1650b6bfea3:openapi/spec3.json`` of
https://github.com/stripe/openapi, the newest description whose file could be had here).

That description is of API version 2020-08-27; the client pins 2022-11-15
(``providers/stripe/api_version.py``), whose upgrade notes change two things among the objects served here,
applied below (``apply_pinned_changes``):
a PaymentIntent no longer has ``charges`` but has ``latest_charge`` (an id, expandable to the charge, and
among its ``x-expandableFields`` in place of ``charges``), and a
charge's ``refunds`` is no longer included unless expanded. Everything else is Stripe's text as published,
but for one backward-compatible addition Stripe made after that description (``apply_later_additions``):
a card charge's ``payment_method_details.card.authorization_code`` (the issuer's authorization code, a
nullable string), which Stripe's changelog lists under 2024-09-30.acacia ("Displays authorization_code for
Charges") and its published ``openapi/fixtures3.json`` carries on the charge fixture since 2024-08-16
(stripe/openapi commit a559b609b676220126ef4bc797db8c3e6a5bb53f). Stripe counts a new response property
as backward-compatible (its "API upgrades" page); the spec3.json of those commits could not be had here,
so the property is written as Stripe writes ``card_present.receipt.authorization_code`` in this one.

Trimmed: only the GET operations of ``SERVED_PATHS`` (their query parameters by name, their 200 and error
responses), and the component schemas those reach. An expandable field (``x-expansionResources``) that
points at an object the simulator does not serve keeps only its id form (the simulator never expands it),
so the subset does not drag in customers, invoices and the like. ``description`` texts are dropped.
The requests table keeps no schema at all: per endpoint its object type, whether it lists, its parameters'
wire names (a deep object ``created`` as ``created[gte]``…, an array ``expand`` as ``expand[]``), and per
object type each ``x-expandableFields`` entry with the types its ``x-expansionResources`` name (none for a
field that is always an inline object), for every type reachable from the served objects.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from recon_pipeline.providers.stripe.documented import TABLE_PATH

SUBSET_PATH = Path(__file__).parents[1] / "data" / "stripe_openapi_subset.json"
SOURCE = {
    "repository": "https://github.com/stripe/openapi",
    "commit": "e0123a38b40c8d840b4c0469ac0ee1650b6bfea3",
    "path": "openapi/spec3.json",
    "published_version": "2020-08-27",
}
PINNED_VERSION = "2022-11-15"
GENERATOR = "python -m recon_pipeline_tests.support.stripe_openapi_subset SPEC3_JSON"
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
    expandable = [name for name in intent["x-expandableFields"] if name != "charges"]
    intent["x-expandableFields"] = sorted([*expandable, "latest_charge"])
    charge = schemas["charge"]
    charge["properties"]["refunds"] = {**charge["properties"]["refunds"], "nullable": True}
    charge["required"] = [name for name in charge["required"] if name != "refunds"]


_AUTHORIZATION_CODE = {"maxLength": 5000, "nullable": True, "type": "string"}


def apply_later_additions(schemas: dict[str, Any]) -> None:
    """The backward-compatible additions to the served objects made after the published description (the
    module's docstring): a card charge's ``authorization_code``."""
    card = schemas["payment_method_details_card"]["properties"]
    card["authorization_code"] = dict(_AUTHORIZATION_CODE)
    schemas["payment_method_details_card"]["properties"] = dict(sorted(card.items()))


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


def pinned_schemas(spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of the component schemas of ``spec`` (a whole spec3.json) in the pinned version."""
    if spec["info"]["version"] != SOURCE["published_version"]:
        version, expected = spec["info"]["version"], SOURCE["published_version"]
        raise ValueError(f"spec is of version {version}, expected {expected}")
    schemas: dict[str, Any] = json.loads(json.dumps(spec["components"]["schemas"]))
    apply_pinned_changes(schemas)
    apply_later_additions(schemas)
    return schemas


def subset(spec: dict[str, Any]) -> dict[str, Any]:
    """The served part of ``spec`` (a whole spec3.json) as a self-contained OpenAPI document."""
    schemas = pinned_schemas(spec)
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
            "x-provenance": {
                **SOURCE,
                "changes": "2022-11-15 upgrade notes, and a card charge's authorization_code: see "
                "stripe_openapi_subset.py",
            },
        },
        "paths": paths,
        "components": {"schemas": dict(sorted(kept.items()))},
    }


def wire_names(parameter: dict[str, Any]) -> list[str]:
    """How a published query parameter is spelled on the wire: an array as ``name[]`` (an item may also be
    sent indexed, ``name[0]``), a deep object as ``name[key]`` per key (and bare ``name`` when a plain
    value is an alternative: ``created=…`` or ``created[gte]=…``), any other as its name."""
    name, schema = parameter["name"], parameter.get("schema", {})
    if parameter.get("style") != "deepObject":
        return [name]
    if schema.get("type") == "array":
        return [f"{name}[]"]
    alternatives = schema.get("anyOf", [schema])
    keys = sorted(key for option in alternatives for key in option.get("properties", {}))
    plain = any(option.get("type") not in ("object", None) for option in alternatives)
    return [*([name] if plain else []), *(f"{name}[{key}]" for key in keys)]


def _object_of(response: dict[str, Any]) -> tuple[str, bool]:
    """The object type an endpoint's 200 answer carries, and whether it is a list of them."""
    schema = response["content"]["application/json"]["schema"]
    if "$ref" in schema:
        return _schema_name(schema["$ref"]), False
    return _schema_name(schema["properties"]["data"]["items"]["$ref"]), True


def expandable_fields(schemas: dict[str, Any], roots: set[str]) -> dict[str, dict[str, list[str]]]:
    """Per object type reachable from ``roots`` through expansions: each ``x-expandableFields`` entry and
    the types its ``x-expansionResources`` says it can hold (none: an inline object, nothing under it)."""
    table: dict[str, dict[str, list[str]]] = {}
    pending = set(roots)
    while pending:
        name = pending.pop()
        schema = schemas[name]
        fields = {}
        for field_name in schema.get("x-expandableFields", []):
            resources = schema["properties"][field_name].get("x-expansionResources", {}).get("oneOf", [])
            fields[field_name] = sorted(_schema_name(option["$ref"]) for option in resources)
            pending |= set(fields[field_name]) - table.keys() - {name}
        table[name] = fields
    return dict(sorted(table.items()))


def documented_requests(spec: dict[str, Any]) -> dict[str, Any]:
    """The requests table (module docstring) of ``SERVED_PATHS`` in the pinned version."""
    schemas = pinned_schemas(spec)
    endpoints: dict[str, dict[str, Any]] = {}
    roots: set[str] = set()
    for path in SERVED_PATHS:
        operation = spec["paths"][path]["get"]
        object_type, listed = _object_of(operation["responses"]["200"])
        roots.add(object_type)
        query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        endpoints[path] = {
            "object": object_type,
            "list": listed,
            "parameters": sorted(name for p in query for name in wire_names(p)),
        }
    return {
        "x-provenance": {**SOURCE, "version": PINNED_VERSION, "generator": GENERATOR},
        "endpoints": endpoints,
        "expandable": expandable_fields(schemas, roots),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec3_json", type=Path)
    args = parser.parse_args()
    spec = json.loads(args.spec3_json.read_text(encoding="utf-8"))
    document = subset(spec)
    SUBSET_PATH.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{SUBSET_PATH}: {len(document['components']['schemas'])} schemas")
    table = documented_requests(spec)
    TABLE_PATH.write_text(json.dumps(table, indent=0) + "\n", encoding="utf-8")
    print(f"{TABLE_PATH}: {len(table['endpoints'])} endpoints, {len(table['expandable'])} object types")


if __name__ == "__main__":
    main()
