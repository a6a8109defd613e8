"""The Stripe API version every request of the client pins (``Stripe-Version``).

Without the header Stripe answers in the account's default version, which can be years old and changes
object shapes: before 2022-11-15 a PaymentIntent has no ``latest_charge`` (it carries a ``charges`` list),
and the processor, which reads ``latest_charge``, would find no charge behind any succeeded payment.

2022-11-15 is the first version with ``latest_charge``; every field the client reads (charges, refunds,
balance transactions, PaymentIntents, events) has kept its shape in the versions after it, and it is the
version whose published schema the simulator's responses are validated against (``recon_pipeline_tests/
support/stripe_openapi_subset.py``). The stripe-python SDK pins its own, newer version; this client does not
use the SDK, so it pins the version its tests prove.
"""

from __future__ import annotations

API_VERSION = "2022-11-15"
VERSION_HEADER = "Stripe-Version"
