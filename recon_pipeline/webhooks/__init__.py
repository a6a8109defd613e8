"""The webhook receiver: the Starlette app that stores every provider's events (each provider checks its
own signatures, ``providers/<name>/webhook.py``)."""
