"""Runs that reconcile a batch of properties of one night: the plan (pure) and the work, which writes
through ``storage/`` (each property's outcome: ``storage/night_outcomes.py``)."""
