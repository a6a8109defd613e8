"""Argument types of every `recon` command: each refuses bad input before anything runs.

These are argparse ``type=`` callables. A refusal raises ``ArgumentTypeError`` with a message that says
what the value must be; the parser prints it as one line naming the option (``recon`` never shows a
usage dump or a traceback for bad input). Keeping them here gives every command, old or new, the same
bounds: a port that cannot be bound, an id the database cannot hold or a night that is not a date never
reaches uvicorn, the driver or Dagster.
"""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import BigInteger, Column, Integer

from recon_pipeline import keys
from recon_pipeline.arguments import bounded_integer
from recon_pipeline.money import MAX_AMOUNT_MINOR

MAX_PORT = 65_535
# Largest values of the SQL integer types (PostgreSQL's; SQLite stores up to the BigInteger bound).
INTEGER_MAX = 2**31 - 1
BIG_INTEGER_MAX = 2**63 - 1


def port(text: str) -> int:
    """A TCP port to listen on: 1-65535 (uvicorn would otherwise bind a port other than the one shown)."""
    return bounded_integer(text, 1, MAX_PORT, "a port")


def count(maximum: int) -> Callable[[str], int]:
    """A positive count of at most ``maximum`` (how many rows, bookings, workers, bytes...)."""
    return lambda text: bounded_integer(text, 1, maximum, "a count")


def database_id(column: Column[Any], name: str | None = None) -> Callable[[str], int]:
    """A positive id that ``column`` (Integer or BigInteger) can hold, so the driver never overflows; errors
    call it ``name`` (the column's name by default)."""
    return lambda text: bounded_integer(text, 1, column_maximum(column), f"a {name or column.name}")


def amount(column: Column[Any]) -> Callable[[str], int]:
    """A non-negative amount of minor units that ``column`` can hold (JPY: yen, EUR: cents)."""
    return lambda text: bounded_integer(text, 0, column_maximum(column), "an amount in minor units")


def signed_amount(text: str) -> int:
    """A signed amount of minor units within the contract's bound (an adjustment reverses with -700)."""
    return bounded_integer(text, -MAX_AMOUNT_MINOR, MAX_AMOUNT_MINOR, "an amount in minor units")


def column_maximum(column: Column[Any]) -> int:
    """The largest value an integer column holds on every supported database."""
    if isinstance(column.type, BigInteger):
        return BIG_INTEGER_MAX
    if isinstance(column.type, Integer):
        return INTEGER_MAX
    raise TypeError(f"{column.name} is not an integer column")


def night(text: str) -> str:
    """A night, 'YYYY-MM-DD' and a real calendar date."""
    try:
        keys.parse_night(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def property_id(text: str) -> str:
    """A property id that is safe in partition keys and paths (``keys.validate_property_id``)."""
    try:
        return keys.validate_property_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def choices_list(choices: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """A comma-separated, non-empty list of ``choices`` (``csv,html``), each once, in ``choices``' order."""

    def parse(text: str) -> tuple[str, ...]:
        given = [item.strip() for item in text.split(",")]
        unknown = [item for item in given if item not in choices]
        if unknown or not text.strip():
            raise argparse.ArgumentTypeError(f"a comma-separated list of {', '.join(choices)}, not {text!r}")
        return tuple(choice for choice in choices if choice in given)

    return parse


def trusted_proxies(text: str) -> str:
    """``*`` or a comma-separated list of IP addresses and networks (``10.0.0.5,10.1.0.0/16``), as uvicorn's
    ``forwarded_allow_ips`` takes it: uvicorn would keep a misspelt address as a literal that matches no
    client, so the proxy's X-Forwarded-For would be ignored without a word."""
    entries = [entry.strip() for entry in text.split(",")]
    if entries == ["*"]:
        return "*"
    for entry in entries:
        try:
            ipaddress.ip_network(entry) if "/" in entry else ipaddress.ip_address(entry)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'*' or comma-separated IP addresses or networks, not {entry!r}"
            ) from None
    return ",".join(entries)
