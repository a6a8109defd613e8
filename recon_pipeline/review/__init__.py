"""People's decisions: acknowledging, resolving and reopening findings (``store``), approving and rejecting
adjustments (``adjustments``), confirming, rejecting and pairing matches (``matches``). Pure rules (``rules``,
``limits``, ``render``) apart from the decisions, which write through ``storage/``; the `recon findings`
commands, the desk and the asset checks are thin callers of both.
"""
