"""Where reports live: ``<root>/<property>/<night>/`` and ``<root>/_overview/``, the root being
``RECON_HOME/reports`` unless the command that renders them is given another (``--out``).

A property id comes from the PMS and ends up in a path, so a folder is only ever built from a validated
property id and night, and the resolved folder (symlinks followed) must still lie inside the root;
anything else is a ValueError before a byte is written. The overview folder starts with ``_``, which no
valid property id can, so it never collides with a property's folder.
"""

from __future__ import annotations

from pathlib import Path

from recon_pipeline.config import recon_home
from recon_pipeline.keys import parse_night, validate_property_id

REPORTS_FOLDER = "reports"
OVERVIEW_FOLDER = "_overview"
# The files of a property-night's folder by format (``--format``), in the order they are written; and those
# of the overview folder. Here, not beside the renderer, so the CLI names them without importing pandas.
CSV, PARQUET, HTML = "csv", "parquet", "html"
FILE_NAMES = {CSV: "discrepancies.csv", PARQUET: "discrepancies.parquet", HTML: "report.html"}
FORMATS = tuple(FILE_NAMES)
OPEN_CSV = "open_discrepancies.csv"
ORPHANS_CSV = "orphaned_payments.csv"


def reports_root(home: Path | None = None) -> Path:
    """``<home>/reports`` (``home`` defaults to RECON_HOME), resolved: the default root."""
    return ((home or recon_home()) / REPORTS_FOLDER).resolve()


def night_folder(property_id: str, night: str, root: Path | None = None) -> Path:
    """The report folder of one property-night under ``root`` (default :func:`reports_root`); raises
    ValueError for unsafe keys or an escaping path."""
    validate_property_id(property_id)
    parse_night(night)
    return _inside(root, Path(property_id, night))


def overview_folder(root: Path | None = None) -> Path:
    """The folder of the cross-night overviews under ``root`` (default :func:`reports_root`)."""
    return _inside(root, Path(OVERVIEW_FOLDER))


def _inside(root: Path | None, relative: Path) -> Path:
    base = (root or reports_root()).resolve()
    folder = (base / relative).resolve()
    if not folder.is_relative_to(base) or folder == base:
        raise ValueError(f"report folder {folder} is not inside {base}")
    return folder
