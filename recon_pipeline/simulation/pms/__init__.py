"""A PMS posting API for tests and benchmarks, modelled on Apaleo's Finance API (issue 15).

Apaleo rather than Mews: Apaleo takes an ``Idempotency-Key`` header on its folio charge posting and
documents replaying the first answer for a repeated key, which is exactly the contract the posting outbox
relies on; its charges carry a ``receipt`` (type, number) that a client can set and later find on the
folio, so an unknown outcome can be looked up by the same key. Mews' ``accountingItems/add`` has neither an
idempotency header nor a client reference a later read can filter on.
"""
