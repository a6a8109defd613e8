"""The README's two commands of the review desk's demo, as a person runs them: `recon demo --desk-users`
(twice: the re-run resets the demo users' password and still passes its checks; then a plain `recon demo`
passes them too, the lowered threshold being four-eyes' own), then `recon review serve` on a free loopback
port, signed in over HTTP as the demo analyst and an approver."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from recon_pipeline import cli
from recon_pipeline.providers.settings import DEFAULT_FLAVOUR
from recon_pipeline.simulation.demo.desk import DEMO_USERS
from recon_pipeline.simulation.demo.properties import DEMO_THRESHOLDS_MINOR, demo_properties
from recon_pipeline_tests.support.dagster_processes import free_port
from recon_pipeline_tests.support.desk_fixtures import sign_in, wait_for_desk
from recon_pipeline_tests.support.loopback import loopback_client

README = Path(__file__).resolve().parents[2] / "README.md"
PASSWORD_LINE = re.compile(r"^demo password \(shown once; [^)]*\): (\S+)$", re.MULTILINE)
FOUR_EYES_LINE = re.compile(
    r"^four-eyes: (\S+)'s four-eyes threshold is now .*?: (adj_[0-9a-f]{24}) ", re.MULTILINE
)
CHOSEN_PASSWORD = "a demo passphrase of our own"


def readme_commands() -> list[str]:
    """The command lines between the README's ``desk-demo`` markers."""
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- desk-demo -->", 1)[1].split("<!-- /desk-demo -->", 1)[0]
    return [line for line in block.strip().splitlines() if line.strip() and not line.startswith("```")]


def demo_env(tmp_path: Path) -> dict[str, str]:
    """No RECON_/DAGSTER_ setting but a fresh RECON_HOME; this environment's `recon` and `python3` first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "DAGSTER_"))}
    env["RECON_HOME"] = str(tmp_path / "home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_shell(command: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow  # three demos and a server process
def test_the_readmes_two_commands_serve_the_demo_to_its_demo_users(tmp_path: Path) -> None:
    demo, serve = readme_commands()
    assert demo.startswith("recon demo --desk-users") and "recon review serve" in serve
    env = demo_env(tmp_path)

    first = run_shell(demo, env, tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "review desk users added: demo-analyst, demo-approver, demo-approver2" in first.stdout
    [generated] = PASSWORD_LINE.findall(first.stdout)
    [(four_eyes_property, big_adjustment)] = FOUR_EYES_LINE.findall(first.stdout)

    # The re-run passes its checks (four eyes has its own threshold), and the users are reset.
    second = run_shell(demo, {**env, "RECON_NEW_USER_PASSWORD": CHOSEN_PASSWORD}, tmp_path)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "review desk users reset (role, properties, password): demo-analyst" in second.stdout
    assert "demo password: the one in RECON_NEW_USER_PASSWORD" in second.stdout
    assert CHOSEN_PASSWORD not in second.stdout
    assert FOUR_EYES_LINE.findall(second.stdout) == [(four_eyes_property, big_adjustment)]
    plain = run_shell(demo.replace(" --desk-users", ""), env, tmp_path)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert "review desk users" not in plain.stdout and "four-eyes" not in plain.stdout

    database = tmp_path / "home" / "recon.sqlite"
    with sqlite3.connect(database) as connection:
        users = connection.execute("SELECT name, role, properties FROM review_users ORDER BY name").fetchall()
        [(threshold,)] = connection.execute(
            "SELECT four_eyes_above_minor FROM approval_thresholds WHERE property_id = ?",
            (four_eyes_property,),
        ).fetchall()
        [(unexplained,)] = connection.execute(
            "SELECT unexplained_threshold_minor FROM discrepancy_thresholds WHERE property_id = ?",
            (four_eyes_property,),
        ).fetchall()
        [(status, amount)] = connection.execute(
            "SELECT status, amount_minor FROM adjustments WHERE adjustment_id = ?", (big_adjustment,)
        ).fetchall()
    seeded = demo_properties(DEFAULT_FLAVOUR)  # the keyed ones and the hotel-style one
    demo_ids = ",".join(sorted(p.property_id for p in seeded))
    assert users == sorted((name, role, demo_ids) for name, role in DEMO_USERS)
    assert status == "proposed" and abs(amount) > threshold
    assert unexplained == DEMO_THRESHOLDS_MINOR[four_eyes_property]  # the blocking check's: untouched

    port = free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            ["bash", "-c", f"{serve} --port {port}"],
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: ended whole below
        )
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_for_desk(base_url, log_path)
        with loopback_client(base_url=base_url, timeout=10) as client:
            assert sign_in(client, "demo-analyst", generated).status_code == 401  # reset by the re-run
            assert sign_in(client, "demo-analyst", CHOSEN_PASSWORD).status_code == 303
            findings = client.get("/findings")
            assert findings.status_code == 200
            for prop in seeded:
                assert prop.property_id in findings.text
            assert "missing_in_ledger" in findings.text
        with loopback_client(base_url=base_url, timeout=10) as client:
            assert sign_in(client, "demo-approver2", CHOSEN_PASSWORD).status_code == 303
            assert client.get("/findings").status_code == 200
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_a_too_short_demo_password_stops_the_demo_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RECON_DATABASE_URL", raising=False)
    monkeypatch.setenv("RECON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RECON_NEW_USER_PASSWORD", "short")
    assert cli.main(["demo", "--desk-users"]) == 2
    assert capsys.readouterr().err == "error: RECON_NEW_USER_PASSWORD: password must be 12-1024 characters\n"
    assert not (tmp_path / "home").exists()
