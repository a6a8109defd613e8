"""Runs that reconcile a batch of properties of one night: the plan (pure), the work, the outcomes."""
