"""The simulated world, in a wing of its own: what stands in for the outside world in tests, benchmarks and
``recon demo``, and is never part of a production run.

``host/`` is the provider simulator (a Starlette app over a seeded store, with fault switches); each
provider's simulated API lives in its own folder (``stripe/``, ``razorpay/``, ``adyen/``) and is found by
name through ``registry.py``; ``pms/`` simulates the PMS the postings outbox writes to; ``demo/`` builds a
deterministic world and runs ``recon demo`` over it.

Production code never imports from here (a fast test holds it): only the cli's ``simulator`` and ``demo``
commands do, lazily. This wing may import anything below it.
"""
