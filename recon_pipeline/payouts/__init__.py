"""Payouts and the bank: payouts traced to property-nights, their deposit checked against bank statements.

Pure rules (``trace.py``, ``deposit.py``, ``findings.py``, ``camt.py``) apart from the database
(``store.py``) and the night's orchestration (``night.py``); Dagster wraps ``night.py``.
"""
