"""Report folders come from validated keys only: no property id can lead outside the reports root
(RECON_HOME/reports, or the folder given with --out)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from recon_pipeline.reports.exports import write_csv
from recon_pipeline.reports.paths import OVERVIEW_FOLDER, night_folder, overview_folder, reports_root

NIGHT = "2026-11-30"
TRAVERSALS = [
    "..",
    "../outside",
    "../../etc",
    "lisbon/../../x",
    "a..b",
    "/etc/passwd",
    "lisbon/2026-11-30",
    "lisbon\\..\\x",
    ".hidden",
    "lisbon\x00",
    "",
    OVERVIEW_FOLDER,  # reserved: a property can never write into the overview folder
    "x" * 65,
]


def test_a_valid_night_folder_lies_under_the_reports_root(tmp_path: Path) -> None:
    folder = night_folder("kyoto-gion", NIGHT, tmp_path / "out")
    assert folder == tmp_path.resolve() / "out" / "kyoto-gion" / NIGHT
    assert overview_folder(tmp_path / "out") == tmp_path.resolve() / "out" / OVERVIEW_FOLDER
    assert reports_root(tmp_path) == tmp_path.resolve() / "reports"
    assert not folder.exists()  # building a path writes nothing


@pytest.mark.parametrize("property_id", TRAVERSALS)
def test_unsafe_property_ids_are_rejected(tmp_path: Path, property_id: str) -> None:
    with pytest.raises(ValueError, match="invalid property_id"):
        night_folder(property_id, NIGHT, tmp_path / "reports")
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("night", ["../2026-11-30", "2026-11-30/..", "2026-13-01", "2026-02-30", "..", ""])
def test_unsafe_nights_are_rejected(tmp_path: Path, night: str) -> None:
    with pytest.raises(ValueError, match="night"):
        night_folder("kyoto-gion", night, tmp_path)


def test_a_symlink_out_of_the_reports_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    reports_root(tmp_path).mkdir(parents=True)
    (reports_root(tmp_path) / "lisbon-riverside").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="is not inside"):
        night_folder("lisbon-riverside", NIGHT, reports_root(tmp_path))
    assert list(outside.iterdir()) == []


def test_the_root_defaults_to_recon_home_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECON_HOME", str(tmp_path / "home"))
    assert overview_folder() == tmp_path.resolve() / "home" / "reports" / OVERVIEW_FOLDER
    path = write_csv(pd.DataFrame({"a": [1]}), night_folder("kyoto-gion", NIGHT) / "x.csv")
    assert path == tmp_path.resolve() / "home" / "reports" / "kyoto-gion" / NIGHT / "x.csv"
    assert path.read_text() == '"a"\n"1"\n'  # every cell quoted (reports.exports)
