"""``iglearn serve``: run the decision service (:mod:`iglearn.service`); ``iglearn serve
keys add|list|revoke``: create, list and revoke API keys; ``iglearn serve db upgrade``: create
or migrate the database's schema; ``iglearn demo``: the service with the gesture demo."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from iglearn.cli.settings import number


def run_serve(args: argparse.Namespace) -> int:
    """Run the service until interrupted."""
    from iglearn.errors import SERVE_MODULES, IGLearnError, require_extra

    require_extra("serve", SERVE_MODULES, "iglearn serve")
    from iglearn.service.app import serve
    from iglearn.service.config import load_config

    if args.config is None:
        raise IGLearnError("iglearn serve needs --config FILE (a TOML file; see "
                           "docs/guides/service.md)")
    config = load_config(args.config).replace(host=args.host, port=args.port, db=args.db,
                                              log_format=args.log_format)
    if args.demo:
        from iglearn.service.demo import check_demo_config

        check_demo_config(config, args.insecure_no_auth)
    serve(config, args.insecure_no_auth, demo=args.demo)
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """Write the demo's configuration to a folder and serve it, with the page, on loopback
    without keys, until interrupted (Ctrl+C, SIGINT or SIGTERM; the temporary folder, when
    no --folder is given, is deleted whichever)."""
    import signal
    import tempfile
    from pathlib import Path

    from iglearn.errors import SERVE_MODULES, require_extra

    require_extra("serve", SERVE_MODULES, "iglearn demo")
    from iglearn.files import removed_if_failed
    from iglearn.service.app import serve
    from iglearn.service.config import load_config
    from iglearn.service.demo import write_demo_config

    def stop(signum: int, frame: object) -> None:
        # the server ends gracefully on SIGTERM or SIGINT (Ctrl+C), then raises it again:
        # unwind from here, so that the temporary folder is deleted, and end as the signal
        # ends a process (143, 130) whatever asyncio's own SIGINT handling would have made of it
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with tempfile.TemporaryDirectory(prefix="iglearn-demo-") as scratch:
        folder = Path(args.folder) if args.folder is not None else Path(scratch)
        created = [*reversed(folder.absolute().parents), folder, folder / "demo.toml"]
        with removed_if_failed(created) as keep:  # a refused start leaves nothing it created
            config = load_config(write_demo_config(folder, args.seed)).replace(port=args.port)

            def listening(port: int) -> None:
                keep()
                print(f"iglearn demo: open http://127.0.0.1:{port}/demo in a browser (files "
                      f"in {folder}; Ctrl+C to stop)", file=sys.stderr, flush=True)

            serve(config, insecure_no_auth=True, demo=True, listening=listening)
    return 0


def run_keys_add(args: argparse.Namespace) -> int:
    """Create a key, store its hash, print it once (alone on the last line)."""
    from iglearn.service.keys import create_key, digest, key_id

    key = create_key(args.config, args.role, args.db)
    article = "an" if args.role == "admin" else "a"
    print(f"created {article} {args.role} key, id {key_id(digest(key))}; it is shown only "
          f"now, keep it secret:", file=sys.stderr)
    print(key, flush=True)
    return 0


def run_keys_list(args: argparse.Namespace) -> int:
    """Print the stored keys: id, role, created, last used (never a key)."""
    from iglearn.service.keys import key_id, list_keys

    def when(at: float | None) -> str:
        return "never" if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))

    records = list_keys(args.config, args.db)
    print(f"{'id':<14}{'role':<8}{'created':<22}last used")
    for record in records:
        print(f"{key_id(record.digest):<14}{record.role:<8}{when(record.created_at):<22}"
              f"{when(record.last_used)}")
    if not records:
        print("(no keys; create one with 'iglearn serve keys add')", file=sys.stderr)
    return 0


def run_keys_revoke(args: argparse.Namespace) -> int:
    """Delete a key: running services refuse it within a second."""
    from iglearn.service.keys import KEY_POLL_SECONDS, key_id, revoke_key

    record = revoke_key(args.config, args.id, args.db)
    print(f"revoked the {record.role} key {key_id(record.digest)}; running services refuse "
          f"it within {KEY_POLL_SECONDS + 0.5:g} s", file=sys.stderr)
    return 0


def run_db_upgrade(args: argparse.Namespace) -> int:
    """Bring the configured database to this iglearn's schema version."""
    from iglearn.service.config import load_config
    from iglearn.service.storage import upgrade_database

    config = load_config(args.config, learner=False).replace(db=args.db)
    before, after = upgrade_database(config.db_path, adopt=args.adopt)
    if before == after:
        print(f"{config.db_shown}: schema version {after}, up to date")
    elif before == 0:
        print(f"{config.db_shown}: schema version {after} created")
    else:
        print(f"{config.db_shown}: schema upgraded from version {before} to {after}")
    return 0


def add_database_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--config`` and ``--db``, which every serve command takes (``serve`` itself checks
    for ``--config`` once it knows no subcommand was given: ``required`` False)."""
    parser.add_argument("--config", required=required,
                        help="the service's TOML configuration" if required else
                             "the service's TOML configuration (required; default: none)")
    parser.add_argument("--db", default=None,
                        help="database file or postgresql:// URL (default: the file's "
                             "[server] db)")


def keys_command(actions: argparse._SubParsersAction, name: str,
                 run: Callable[[argparse.Namespace], int], help: str,
                 description: str | None = None) -> argparse.ArgumentParser:
    """A ``serve keys`` command: its parser, with ``--config`` and ``--db``."""
    parser = actions.add_parser(name, help=help, description=description)
    add_database_arguments(parser)
    parser.set_defaults(run=run, reads=("config",))
    return parser


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``serve`` (and its ``keys`` and ``db`` commands) to the ``iglearn`` command."""
    serve = commands.add_parser(
        "serve", help="run the IGL decision service",
        description="Serve decisions over HTTP, log every decision and its feedback, and "
                    "re-fit the model while serving. The configuration file's keys are "
                    "documented in docs/guides/service.md.")
    add_database_arguments(serve, required=False)
    serve.add_argument("--host", default=None,
                       help="address to listen on (default: the file's [server] host)")
    serve.add_argument("--port", type=number(int), default=None,
                       help="port to listen on (default: the file's [server] port)")
    serve.add_argument("--log-format", choices=("text", "json"), default=None,
                       help="the operator's log on standard error: text (a terminal) or "
                            "json, one object per line for log collectors (default: the "
                            "file's [server] log_format, text)")
    serve.add_argument("--insecure-no-auth", action="store_true",
                       help="accept requests without an API key (loopback addresses only)")
    serve.add_argument("--demo", action="store_true",
                       help="also serve the gesture demo page at /demo (a configuration "
                            "of the demo's shape, on loopback with --insecure-no-auth)")
    serve.set_defaults(run=run_serve, reads=("config",))
    actions = serve.add_subparsers(dest="serve_command", metavar="COMMAND")
    keys = actions.add_parser("keys", help="manage API keys")
    key_actions = keys.add_subparsers(dest="keys_command", metavar="COMMAND", required=True)
    add = keys_command(key_actions, "add", run_keys_add,
                       "create an API key (printed once, stored hashed)")
    add.add_argument("--role", required=True, choices=("client", "admin"),
                     help="client: decide and feedback; admin: everything")
    keys_command(key_actions, "list", run_keys_list,
                 "list the keys: id, role, created, last used (never a key)",
                 "List the stored keys, oldest first: the id (the start of the key's hash), "
                 "the role, when it was created and when it was last used (UTC; the service "
                 "records uses about every second).")
    revoke = keys_command(key_actions, "revoke", run_keys_revoke,
                          "revoke a key by its id (running services refuse it within a second)")
    revoke.add_argument("id", help="the key's id, as 'iglearn serve keys list' shows it")
    db = actions.add_parser("db", help="manage the database")
    db_actions = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    upgrade = db_actions.add_parser(
        "upgrade", help="create or migrate the database's schema to this iglearn's version",
        description="Apply the schema migrations the database lacks (PostgreSQL: run it "
                    "once before starting replicas of a newer iglearn; a service creates "
                    "the schema of an empty database itself).")
    add_database_arguments(upgrade)
    upgrade.add_argument("--adopt", action="store_true",
                         help="add iglearn's tables to an SQLite file that holds another "
                              "application's tables (refused without it)")
    upgrade.set_defaults(run=run_db_upgrade, reads=("config",))
    add_demo_command(commands)


def add_demo_command(commands: argparse._SubParsersAction) -> None:
    """Add ``demo``: the decision service with the gesture demo page."""
    demo = commands.add_parser(
        "demo", help="teach the learner with your own gestures, in a browser",
        description="Start a decision service with the demo's configuration on 127.0.0.1 "
                    "(no keys) and serve a page at /demo where you ground the learner live "
                    "with your own gestures. See docs/guides/demo.md.")
    demo.add_argument("--port", type=number(int), default=8700,
                      help="port to listen on (default: 8700)")
    demo.add_argument("--folder", default=None,
                      help="folder for the configuration and the database, kept to resume "
                           "(default: a temporary folder, deleted at the end)")
    demo.add_argument("--seed", type=number(int), default=0,
                      help="seed of the service's draws and re-fits (default: 0)")
    demo.set_defaults(run=run_demo, reads=())
