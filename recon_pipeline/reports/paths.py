"""Where reports live: ``RECON_HOME/reports/<property>/<night>/`` and ``RECON_HOME/reports/_overview/``.

A property id comes from the PMS and ends up in a path, so a folder is only ever built from a validated
property id and night, and the resolved folder (symlinks followed) must still lie inside the reports
root; anything else is a ValueError before a byte is written. The overview folder starts with ``_``,
which no valid property id can, so it never collides with a property's folder.
"""

from __future__ import annotations

from pathlib import Path

from recon_pipeline.config import recon_home
from recon_pipeline.keys import parse_night, validate_property_id

REPORTS_FOLDER = "reports"
OVERVIEW_FOLDER = "_overview"


def reports_root(home: Path | None = None) -> Path:
    """``<home>/reports`` (``home`` defaults to RECON_HOME), resolved."""
    return ((home or recon_home()) / REPORTS_FOLDER).resolve()


def partition_folder(property_id: str, night: str, home: Path | None = None) -> Path:
    """The report folder of one property-night; raises ValueError for unsafe keys or an escaping path."""
    validate_property_id(property_id)
    parse_night(night)
    return _inside_root(Path(property_id, night), home)


def overview_folder(home: Path | None = None) -> Path:
    """The folder of the cross-night overviews."""
    return _inside_root(Path(OVERVIEW_FOLDER), home)


def _inside_root(relative: Path, home: Path | None) -> Path:
    root = reports_root(home)
    folder = (root / relative).resolve()
    if not folder.is_relative_to(root) or folder == root:
        raise ValueError(f"report folder {folder} is not inside {root}")
    return folder
