"""The errors every floor raises and every command reads: one module, so raising one needs no import of
the layer that happens to catch it.

Each class says what the caller does about it: a ``ConfigError`` exits 2 with its one-line reason, a
``ServiceUnavailable`` exits 1, a ``ReviewError`` refuses a reviewer's action with its reason.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad or missing configuration: commands print it as a one-line reason and exit 2."""


class ServiceUnavailable(RuntimeError):
    """A service the configuration names (the database) did not answer: commands exit 1 with one line."""


class ReviewError(ValueError):
    """A review the finding's status does not allow, or a malformed reviewer or note."""
