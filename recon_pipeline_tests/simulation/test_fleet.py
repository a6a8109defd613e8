"""The benchmark fleet (``recon_pipeline/simulation/demo/fleet.py``): valid, spread over eight night
windows with a share on the platform account, and a demo world of about 40 provider records per
property-night whose payment orders agree with the refunds the provider holds."""

from __future__ import annotations

from datetime import date

from benchmarks.worlds import night_record_count
from recon_pipeline.batches.plan import plan_batches
from recon_pipeline.simulation.demo.fleet import FLEET_ZONES, fleet_properties, fleet_thresholds, fleet_world
from recon_pipeline.simulation.demo.world import order_key

NIGHT = date(2026, 11, 30)


def test_fleet_is_valid_deterministic_and_spread_over_zones_and_accounts() -> None:
    fleet = fleet_properties(400)
    assert fleet == fleet_properties(400) and fleet != fleet_properties(400, seed=1)
    assert all(prop.validated() == prop for prop in fleet)
    assert len({prop.property_id for prop in fleet}) == 400
    assert {prop.timezone for prop in fleet} == {zone for zone, _currency in FLEET_ZONES}
    platform = sum(prop.provider_account is None for prop in fleet)
    assert 60 <= platform <= 140  # about a quarter
    own = [prop.provider_account for prop in fleet if prop.provider_account is not None]
    assert len(set(own)) == len(own)  # every other property alone on its account
    # Eight UTC offsets, two cutoffs: sixteen windows, each at least one batch.
    assert len({batch.window_start for batch in plan_batches(fleet, NIGHT, 100, one_window_each=True)}) == 16


def test_fleet_world_has_about_forty_records_per_property_night_and_consistent_orders() -> None:
    fleet = fleet_properties(16)
    world = fleet_world(fleet, NIGHT)
    counts = [night_record_count(world, prop, NIGHT) for prop in fleet]
    # ~40, plus on some properties the capture of an earlier night's authorization (a checkout)
    assert all(35 <= count <= 48 for count in counts), counts
    assert 38 <= sum(counts) / len(counts) <= 45, counts
    assert {prop for prop, _night, _category in world.expected} == {p.property_id for p in fleet}
    orders = {order["provider_payment_id"]: order for order in world.payment_orders}
    refunded = [charge for charge in world.store.charges if charge["amount_refunded"]]
    assert refunded
    for charge in refunded:
        assert orders[order_key(charge)]["amount_refunded_minor"] == charge["amount_refunded"]


def test_fleet_thresholds_follow_the_demo_per_currency() -> None:
    fleet = fleet_properties(16)
    thresholds = fleet_thresholds(fleet)
    assert set(thresholds) == {prop.property_id for prop in fleet}
    by_currency = {prop.currency: thresholds[prop.property_id] for prop in fleet}
    assert by_currency["INR"] == 50_000_000 and by_currency["USD"] == by_currency["AUD"] == 1_000_000


def test_no_posting_without_an_id_has_the_amount_of_a_charge_its_night_left_unbooked() -> None:
    """The posting planted as missing at the provider (no provider id) never has the amount of one of the
    charges the night left unbooked: of the same amount, within the night, the matcher rightly suggests
    them as one movement, and the world would plant two discrepancies where there is one look-alike
    (fleet00576 and fleet01268 of the 2,000-property fleet drew such a pair)."""
    fleet = fleet_properties(1_300)
    world = fleet_world(fleet, NIGHT)
    booked = {entry["provider_record_id"] for entry in world.ledger_entries if entry["kind"] == "payment"}
    for prop in ("fleet00576", "fleet01268"):
        unbooked = {
            charge["amount"]
            for charge in world.store.charges
            if charge["id"].startswith(f"ch_{prop}")  # the world tags its ids with the property
            and charge["status"] == "succeeded"
            and charge["id"] not in booked
        }
        bare = [
            entry["amount_minor"]
            for entry in world.ledger_entries
            if (entry["property_id"], entry["provider_record_id"], entry["kind"]) == (prop, None, "payment")
        ]
        assert unbooked and bare and not unbooked & set(bare), (prop, unbooked, bare)
