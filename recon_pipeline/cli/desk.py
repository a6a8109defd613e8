"""`recon users` and `recon review serve`: the review desk's users (added, changed, unlocked by hand)
and its web server."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime

from recon_pipeline import config
from recon_pipeline.cli import args as cli_args
from recon_pipeline.cli.common import Commands, acting_reviewer, recon_database


def cmd_users_add(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import add_user

    password = _new_password(args)
    with recon_database() as engine, engine.begin() as connection:
        user = add_user(connection, args.name, args.role, args.properties, password, datetime.now(UTC))
    print(f"added {user.role} {user.name} for {', '.join(user.properties)}")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import list_users

    with recon_database() as engine, engine.connect() as connection:
        rows = list_users(connection)
    for row in rows:
        print(
            f"{row['name']}\t{row['role']}\t{row['properties']}\tadded {row['created_at']:%Y-%m-%d %H:%M} UTC"
        )
    print(f"{len(rows)} user{'' if len(rows) == 1 else 's'}")
    return 0


def cmd_users_change(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import change_user

    if args.role is None and args.properties is None and not args.new_password:
        raise ValueError("say what to change: --role, --properties or --new-password")
    password = _new_password(args) if args.new_password else None
    with recon_database() as engine, engine.begin() as connection:
        change = change_user(connection, args.name, args.role, args.properties, password)
    user = change.user
    changed_password = "; password changed" if password is not None else ""
    count = change.sessions_ended
    ended = f"; {count} session{'' if count == 1 else 's'} ended" if count else ""
    print(f"{user.name} is {user.role} for {', '.join(user.properties)}{changed_password}{ended}")
    return 0


def cmd_users_remove(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.users import remove_user

    with recon_database() as engine, engine.begin() as connection:
        remove_user(connection, args.name)
    print(f"removed {args.name}: their sessions ended")
    return 0


def cmd_users_unlock(args: argparse.Namespace) -> int:
    from recon_pipeline.review_desk.audit import record_audit
    from recon_pipeline.review_desk.signin import forget_failures, name_key

    who = acting_reviewer(args.by)
    with recon_database() as engine, engine.begin() as connection:
        failures = forget_failures(connection, name_key(args.name))
        detail = f"{failures} failed sign-in{'' if failures == 1 else 's'} forgotten"
        record_audit(connection, who, "unlock", target=args.name, detail=detail)
    print(f"unlocked {args.name}: {detail}")
    return 0


def _new_password(args: argparse.Namespace) -> str:
    """The new password: stdin's first line with --password-stdin, else RECON_NEW_USER_PASSWORD."""
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password = os.environ.get("RECON_NEW_USER_PASSWORD", "")
    if not password:
        raise ValueError("set RECON_NEW_USER_PASSWORD or pass --password-stdin")
    return password


def cmd_review_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from recon_pipeline.db.engine import make_engine
    from recon_pipeline.review_desk.app import DeskSettings, review_desk_app

    settings = DeskSettings.from_environment()
    engine = make_engine(config.database_url(), pool_size=settings.capacity.pool_size)
    print(f"review desk on http://{args.host}:{args.port}/", flush=True)
    # The client address (the sign-in limit's key) comes from X-Forwarded-For only when the request came
    # from a proxy named by --forwarded-allow-ips. Without it no header is trusted: uvicorn's own default
    # would trust 127.0.0.1, where every local client could then name its own address.
    proxies = args.forwarded_allow_ips
    try:
        uvicorn.run(
            review_desk_app(engine, settings),
            host=args.host,
            port=args.port,
            log_config=None,
            proxy_headers=proxies is not None,
            forwarded_allow_ips=proxies or "",
        )
    finally:
        engine.dispose()
    return 0


def add_commands(commands: Commands) -> None:
    """Add `recon users ...` and `recon review serve`, in that order."""
    _add_users_commands(commands)
    _add_review_commands(commands)


def _add_users_commands(commands: Commands) -> None:
    from recon_pipeline.review_desk.users import ROLES, parse_properties, validate_name

    def checked(parse: Callable[[str], object]) -> Callable[[str], object]:
        def check(text: str) -> object:
            try:
                return parse(text)
            except ValueError as error:
                raise argparse.ArgumentTypeError(str(error)) from None

        return check

    users = commands.add_parser("users", help="the review desk's users").add_subparsers(
        dest="users_command", required=True
    )
    add = users.add_parser(
        "add",
        help="add a review desk user; the password comes from RECON_NEW_USER_PASSWORD or --password-stdin",
    )
    change = users.add_parser(
        "change",
        help="change a user's role, properties or password (--new-password: from RECON_NEW_USER_PASSWORD "
        "or --password-stdin)",
    )
    for parser, required in ((add, True), (change, False)):
        parser.add_argument("name", type=checked(validate_name))
        parser.add_argument("--role", required=required, choices=ROLES)
        parser.add_argument(
            "--properties", required=required, type=checked(parse_properties), metavar="P1,P2"
        )
        parser.add_argument(
            "--password-stdin", action="store_true", help="read the password from stdin's first line"
        )
    change.add_argument("--new-password", action="store_true", help="set a new password")
    add.set_defaults(handler=cmd_users_add)
    change.set_defaults(handler=cmd_users_change)
    users.add_parser("list", help="every user: name, role, properties (never a password)").set_defaults(
        handler=cmd_users_list
    )
    remove = users.add_parser("remove", help="remove a user and end their sessions")
    remove.add_argument("name", type=checked(validate_name))
    remove.set_defaults(handler=cmd_users_remove)
    unlock = users.add_parser(
        "unlock", help="lift the sign-in lock of a name (forget its failed sign-ins); audited"
    )
    unlock.add_argument("name", type=checked(validate_name))
    unlock.add_argument("--by", help="who unlocks, for the audit log (default: $USER)")
    unlock.set_defaults(handler=cmd_users_unlock)


def _add_review_commands(commands: Commands) -> None:
    review = commands.add_parser("review", help="the review desk web app").add_subparsers(
        dest="review_command", required=True
    )
    serve = review.add_parser(
        "serve",
        help="serve the review desk (needs RECON_REVIEW_SECRET; RECON_REVIEW_SECURE_COOKIES=1 behind TLS)",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=cli_args.port, default=12114)
    serve.add_argument(
        "--forwarded-allow-ips",
        type=cli_args.trusted_proxies,
        metavar="IPS",
        help="comma-separated addresses or networks of the reverse proxy (or '*'): only a request from one "
        "of them has its X-Forwarded-For client address counted by the sign-in limit (default: none, "
        "every X-Forwarded-For is ignored)",
    )
    serve.set_defaults(handler=cmd_review_serve)
