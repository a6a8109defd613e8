"""Pull a batch's nights from the provider: once per account group (properties that share a provider
account and the night window), by a bounded pool over one process-wide client whose rate bound is the
deployment's, the pull split by attribution in each property's night."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime

import pandas as pd
from sqlalchemy import Engine

from recon_pipeline.batches.plan import packed
from recon_pipeline.batches.property_nights import NightInput, PmsInput, Target
from recon_pipeline.ledger.queries import load_payment_order_owners
from recon_pipeline.providers.attribution import unclaimed_payment_ids
from recon_pipeline.providers.interface import ProviderClient
from recon_pipeline.providers.objects import PropertyAccount


def pull_all(
    engine: Engine,
    client: ProviderClient,
    targets: Sequence[Target],
    pms: PmsInput | BaseException,
    workers: int,
) -> list[tuple[Target, NightInput | BaseException]]:
    """Each target's night input, or its error: its account group's pull (by a pool of at most ``workers``)
    and the owners of the pulls' payments that name no property, read in one statement for them all (should
    the database fail that read, every target fails with it); when the batch's PMS read failed, its error
    for every target, nothing pulled."""
    if isinstance(pms, BaseException):
        return [(target, pms) for target in targets]
    groups = _pull_groups(targets)
    with ThreadPoolExecutor(max_workers=min(workers, len(groups) or 1)) as pool:
        pulls = list(pool.map(_pull(client), groups))
    owners = _payment_owners(engine, [pulled for pulled in pulls if not isinstance(pulled, BaseException)])
    return [
        (target, pulled if isinstance(pulled, BaseException) else _input(target, pms, pulled, owners))
        for group, pulled in zip(groups, pulls, strict=True)
        for target in group
    ]


def _input(
    target: Target, pms: PmsInput, claimed: pd.DataFrame, owners: dict[str, str] | BaseException
) -> NightInput | BaseException:
    """The target's night input from its group's pull, or the error that kept the owners unread."""
    return owners if isinstance(owners, BaseException) else NightInput(target, pms, claimed, owners)


def _payment_owners(engine: Engine, pulls: Sequence[pd.DataFrame]) -> dict[str, str] | BaseException:
    """Who ``payment_orders`` says owns the pulls' payments that name no property (a shared account's), or
    the error that kept it unread."""
    unclaimed = [payment_id for claimed in pulls for payment_id in unclaimed_payment_ids(claimed)]
    if not unclaimed:
        return {}
    try:
        with engine.connect() as connection:
            return load_payment_order_owners(connection, unclaimed)
    except Exception as error:
        return error


def _pull(client: ProviderClient) -> Callable[[list[Target]], pd.DataFrame | BaseException]:
    """One account group's pull; an incomplete pull is the error of every property it serves."""

    def pull(group: list[Target]) -> pd.DataFrame | BaseException:
        try:
            return client.pull_claimed(_pull_scope(group), group[0].window.start, group[0].window.end)
        except Exception as error:
            return error

    return pull


def pull_chunks(targets: Sequence[Target], size: int) -> list[list[Target]]:
    """The targets in chunks of at most ``size``, in order, a pull's group never cut (a larger one alone):
    what the batch computes at once while the next chunk is being pulled. The last ``size`` targets come
    in smaller chunks (``packed``'s taper): the last chunk's computing is the one no pull overlaps, and a
    night's runs, of one size, all reach it at once, leaving the provider's rate idle."""
    return packed(_pull_groups(targets), size, taper=True)


def _pull_groups(targets: Sequence[Target]) -> list[list[Target]]:
    """Targets that one pull serves: same provider account and same window (a shared account's window is
    read once); a property alone on its account is its own group."""
    groups: dict[tuple[str | None, datetime, datetime], list[Target]] = {}
    for target in targets:
        key = (target.account.provider_account, target.window.start, target.window.end)
        groups.setdefault(key, []).append(target)
    return list(groups.values())


def _pull_scope(group: Sequence[Target]) -> PropertyAccount:
    """The account scope of one shared pull: the group's first property, serving all of them."""
    first = group[0].account
    return replace(first, pulled_for=tuple(t.row.property_id for t in group) if len(group) > 1 else ())
