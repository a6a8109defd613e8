"""`recon` refuses bad arguments, bad configuration and an unusable database in one line: exit code, the
offending name, no traceback, no secret. Each case runs the installed console script in a child process
with a time bound, so a command that wrongly starts serving fails the test instead of hanging it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from recon_pipeline.defs.concurrency import provider_step_retry_policy
from recon_pipeline.defs.partitions import first_night
from recon_pipeline.errors import ConfigError
from recon_pipeline.providers.settings import provider_settings

PASSWORD = "pw-Secret-7781"
API_KEY = "sk_test_Secret-4412"
WEBHOOK_SECRET = "whsec_Secret-9923"
SECRETS = (PASSWORD, API_KEY, WEBHOOK_SECRET)
RECON = Path(sys.executable).with_name("recon")  # the console script installed beside this Python


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unreachable_postgres() -> str:
    return f"postgresql://recon:{PASSWORD}@127.0.0.1:{closed_port()}/recon"


# (argv, extra environment, name the line must carry, exit code)
CASES: list[tuple[list[str], dict[str, str], str, int]] = [
    (["webhooks", "serve", "--port", "70000"], {}, "--port", 2),
    (["webhooks", "serve", "--port", "0"], {}, "--port", 2),
    (["webhooks", "serve", "--workers", "0"], {}, "--workers", 2),
    (["webhooks", "serve", "--max-body-bytes", "99999999999999999999"], {}, "--max-body-bytes", 2),
    (["review", "serve", "--forwarded-allow-ips", "10.0.0.5,proxy.local"], {}, "--forwarded-allow-ips", 2),
    (["review", "serve", "--forwarded-allow-ips", "10.0.0.0/33"], {}, "--forwarded-allow-ips", 2),
    (["simulator", "serve", "--port", "-1"], {}, "--port", 2),
    (["simulator", "serve", "--port", "65536"], {}, "--port", 2),
    (["simulator", "serve", "--bookings", "0"], {}, "--bookings", 2),
    (["demo", "--bookings", "10000000"], {}, "--bookings", 2),
    (["findings", "show", "99999999999999999999"], {}, "finding_id", 2),
    (["findings", "show", "2147483648"], {}, "finding_id", 2),
    (
        ["findings", "ack", "1", "9223372036854775808", "--by", "a", "--note", "n"],
        {},
        "finding_id",
        2,
    ),
    (["findings", "list", "--night", "2026-13-01"], {}, "--night", 2),
    (["findings", "list", "--night", "20261101"], {}, "--night", 2),
    (["findings", "list", "--property", "a,b"], {}, "--property", 2),
    (["findings", "list", "--limit", "0"], {}, "--limit", 2),
    (["findings", "list", "--limit", "99999999999999999999"], {}, "--limit", 2),
    (["findings", "threshold", "../etc"], {}, "property", 2),
    (["findings", "threshold", "p1", "--set", "9223372036854775808"], {}, "--set", 2),
    (["findings", "threshold", "p1", "--set", "-5"], {}, "--set", 2),
    (["adjustments", "four-eyes", "../etc"], {}, "property", 2),
    (["adjustments", "four-eyes", "p1", "--above", "9223372036854775808"], {}, "--above", 2),
    (["adjustments", "four-eyes", "p1", "--above", "5", "--clear"], {}, "--clear", 2),
    (["report", "night", "2026-13-01"], {}, "night", 2),
    (["report", "night", "9999-12-31"], {}, "night '9999-12-31' is not from 0002-01-01 to 9998-12-31", 2),
    (["findings", "list", "--night", "0001-01-01"], {}, "night '0001-01-01' is not from 0002-01-01", 2),
    (["report", "night", "2026-11-01", "--format", "xlsx"], {}, "--format", 2),
    (["report", "night", "2026-11-01", "--property", "a/b"], {}, "--property", 2),
    (["report", "overview"], {"RECON_HOME": "{file}"}, "RECON_HOME", 2),
    (["simulator", "serve"], {"RECON_PROVIDER_FLAVOUR": "paypal"}, "RECON_PROVIDER_FLAVOUR", 2),
    (["webhooks", "serve"], {"RECON_WEBHOOK_MAX_BODY_BYTES": "1e6"}, "RECON_WEBHOOK_MAX_BODY_BYTES", 2),
    (["webhooks", "serve"], {"RECON_WEBHOOK_SECRET": ""}, "RECON_WEBHOOK_SECRET", 2),
    (
        ["db", "init"],
        {"RECON_DATABASE_URL": f"postgresql://recon:{PASSWORD}@h:port/x"},
        "RECON_DATABASE_URL",
        2,
    ),
    (["db", "init"], {"RECON_DATABASE_URL": f"mysql://recon:{PASSWORD}@h/x"}, "RECON_DATABASE_URL", 2),
    (["db", "init"], {"RECON_DATABASE_URL": "sqlite:////proc/no/such/recon.sqlite"}, "RECON_DATABASE_URL", 2),
    (["db", "init"], {"RECON_HOME": "{file}"}, "RECON_HOME", 2),
    # A database that is there but holds no tables yet is a failed command, not bad input.
    (
        ["findings", "list"],
        {"RECON_DATABASE_URL": "sqlite:///{tmp}/empty.sqlite"},
        "RECON_DATABASE_URL",
        1,
    ),
]
UNREACHABLE: list[list[str]] = [
    ["db", "init"],
    ["findings", "list"],
    ["findings", "show", "1"],
    ["findings", "resolve", "1", "--by", "a", "--note", "n"],
    ["findings", "threshold", "p1"],
    ["adjustments", "four-eyes", "p1"],
    ["webhooks", "serve", "--port", "1"],
    ["demo", "--bookings", "1"],
    ["report", "night", "2026-11-01"],
    ["report", "overview"],
]


def assert_one_line(err: str, name: str) -> None:
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("error: ") and name in err, err
    assert "Traceback" not in err and not any(secret in err for secret in SECRETS), err


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Secrets a command could leak, and nothing that points elsewhere."""
    for name in ("RECON_DATABASE_URL", "RECON_PROVIDER", "RECON_PROVIDER_BASE_URL", "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RECON_PROVIDER_API_KEY", API_KEY)
    monkeypatch.setenv("RECON_WEBHOOK_SECRET", WEBHOOK_SECRET)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))


@pytest.mark.parametrize(
    ("argv", "env", "name", "code"), CASES, ids=[" ".join(c[0]) + str(c[1]) for c in CASES]
)
@pytest.mark.slow  # a `recon` process per case
def test_bad_input_is_one_line_naming_it(
    argv: list[str],
    env: dict[str, str],
    name: str,
    code: int,
    tmp_path: Path,
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    done = run_recon(*argv, **{k: v.format(file=tmp_path / "a-file", tmp=tmp_path) for k, v in env.items()})
    assert done.returncode == code
    assert_one_line(done.stderr, name)
    if code == 2 and not name.startswith("RECON_"):
        assert done.stdout == ""  # refused before anything ran: no "serving on ..." for a port it won't use


@pytest.mark.parametrize("argv", UNREACHABLE, ids=" ".join)
@pytest.mark.slow  # a `recon` process per case
def test_unreachable_postgres_is_one_line_without_the_password(argv: list[str]) -> None:
    url = unreachable_postgres()
    done = run_recon(*argv, RECON_DATABASE_URL=url)
    assert done.returncode == 1
    assert_one_line(done.stderr, f"RECON_DATABASE_URL={url.replace(PASSWORD, '***')}")
    assert "Connection refused" in done.stderr  # the driver's reason


def run_recon(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed `recon` script in a child process, bounded in time."""
    return subprocess.run(
        [str(RECON), *argv], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow  # a `recon` process per case
def test_console_script_refuses_a_port_it_would_not_listen_on() -> None:
    done = run_recon("webhooks", "serve", "--port", "70000")
    assert (done.returncode, done.stdout) == (2, "")
    assert_one_line(done.stderr, "--port")
    assert "65535" in done.stderr


@pytest.mark.parametrize("first_night", ["abc", "2026-02-30"])
@pytest.mark.slow  # a `recon` process per case
def test_console_script_names_a_bad_first_night(first_night: str, tmp_path: Path) -> None:
    """RECON_FIRST_NIGHT is read when the Dagster definitions load (a child process loads them afresh)."""
    done = run_recon("demo", "--bookings", "1", RECON_FIRST_NIGHT=first_night, RECON_HOME=str(tmp_path))
    assert done.returncode == 2
    assert_one_line(done.stderr, "RECON_FIRST_NIGHT")
    assert first_night in done.stderr


@pytest.mark.slow  # a `recon` process per case
def test_ids_beyond_the_column_are_refused_on_a_real_database(database_url: str) -> None:
    """SQLite's driver overflowed past 2^63 (a traceback); PostgreSQL looked up an id its column cannot
    hold. Both now refuse the id up front, and an id within range still reaches the database."""
    assert run_recon("db", "init", RECON_DATABASE_URL=database_url).returncode == 0
    for argv, name in (
        (("findings", "show", "99999999999999999999"), "finding_id"),
        (("findings", "show", "2147483648"), "finding_id"),
        (("findings", "threshold", "p1", "--set", "99999999999999999999"), "--set"),
    ):
        done = run_recon(*argv, RECON_DATABASE_URL=database_url)
        assert (done.returncode, done.stdout) == (2, ""), done
        assert_one_line(done.stderr, name)
    done = run_recon("findings", "show", "2147483647", RECON_DATABASE_URL=database_url)
    assert (done.returncode, done.stderr) == (2, "error: no finding with id 2147483647\n")


def test_settings_read_by_dagster_definitions_name_their_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("abc", "nan", "-1", "inf"):
        monkeypatch.setenv("RECON_STEP_RETRY_DELAY_S", value)
        with pytest.raises(ConfigError, match="^RECON_STEP_RETRY_DELAY_S must be"):
            provider_step_retry_policy()
    monkeypatch.setenv("RECON_STEP_RETRY_DELAY_S", "0.5")
    assert provider_step_retry_policy().delay == 0.5
    monkeypatch.setenv("RECON_FIRST_NIGHT", "2026-1-1")
    with pytest.raises(ConfigError, match="^RECON_FIRST_NIGHT: night must be 'YYYY-MM-DD'"):
        first_night()
    monkeypatch.setenv("RECON_FIRST_NIGHT", "2025-06-01")
    assert first_night() == "2025-06-01"


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"RECON_PROVIDER": "stripe", "RECON_PROVIDER_API_KEY": f"{API_KEY} \n"}, "RECON_PROVIDER_API_KEY"),
        ({"RECON_PROVIDER_BASE_URL": f"ftp://u:{PASSWORD}@host"}, "RECON_PROVIDER_BASE_URL"),
        ({"RECON_PROVIDER_BASE_URL": f"http://u:{PASSWORD}@[::1"}, "RECON_PROVIDER_BASE_URL"),
        (
            {"RECON_PROVIDER_BASE_URL": "http://127.0.0.1:1", "RECON_PROVIDER_MAX_CONCURRENCY": "9" * 30},
            "RECON_PROVIDER_MAX_CONCURRENCY",
        ),
    ],
)
def test_provider_settings_name_the_variable_not_the_secret(
    env: dict[str, str], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What Dagster's provider resource reads when a run starts: the run fails with this one line."""
    monkeypatch.setenv("RECON_PROVIDER", "simulator")
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        provider_settings()
    message = str(raised.value)
    assert message.startswith(name) and "\n" not in message
    assert not any(secret in message for secret in SECRETS)
