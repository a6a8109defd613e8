"""The webhook receiver: Stripe signature checks (pure) and the Starlette app that stores events."""
