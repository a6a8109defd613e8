"""Posting approved adjustments to the PMS exactly once (issue 15): the adapter interface, the outbox that
drains approved adjustments through it, and the lookups that resolve an unknown outcome."""
