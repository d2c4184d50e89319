"""``iglearn serve``: run the decision service (:mod:`iglearn.service`); ``iglearn serve
keys add|list|revoke``: create, list and revoke API keys; ``iglearn serve db upgrade``: create
or migrate the database's schema; ``iglearn serve status|export|import|refit``: talk to a
running service over HTTP (:class:`iglearn.client.Client`); ``iglearn demo``: the service with
the gesture demo."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iglearn.cli.settings import number, port_number
from iglearn.errors import IGLearnError

if TYPE_CHECKING:
    from types import FrameType

    from iglearn.client import Client


def run_serve(args: argparse.Namespace) -> int:
    """Run the service until interrupted."""
    from iglearn.errors import SERVE_MODULES, require_extra

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
    exit_on_signals()
    serve(config, args.insecure_no_auth, demo=args.demo)
    return 0


def exit_on_signals() -> None:
    """End the process as SIGTERM, SIGINT (Ctrl+C) or SIGHUP (its terminal closed) ends a
    process, with status 128 + the signal (143, 130, 129), once the server has stopped
    gracefully on it: the server stops on SIGTERM or SIGINT, then raises it again, which
    unwinds from here as SystemExit, so that every ``finally`` runs (the database closed,
    a temporary folder deleted), with no "interrupted" line after the operator's "stopped";
    SIGHUP goes to SIGTERM's handler (while the server runs, the server's, which stops it
    and names SIGHUP in its stop line), where its default would end the process at once."""
    import signal

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    def hang_up(signum: int, frame: FrameType | None) -> None:
        handler = signal.getsignal(signal.SIGTERM)
        if callable(handler):
            handler(signum, frame)
        else:  # not ours, nor the server's: ended as SIGTERM would
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, hang_up)


def run_demo(args: argparse.Namespace) -> int:
    """Write the demo's configuration to a folder and serve it, with the page, on loopback
    without keys, until interrupted (Ctrl+C, SIGINT, SIGTERM, or SIGHUP when its terminal
    closes; the temporary folder, when no --folder is given, is deleted whichever)."""
    import tempfile
    from pathlib import Path

    from iglearn.errors import SERVE_MODULES, require_extra

    require_extra("serve", SERVE_MODULES, "iglearn demo")
    from iglearn.files import removed_if_failed
    from iglearn.service.app import serve
    from iglearn.service.config import load_config
    from iglearn.service.demo import write_demo_config

    exit_on_signals()  # the temporary folder is deleted whichever stops it
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


def run_db_rollback(args: argparse.Namespace) -> int:
    """Serve an earlier stored model version, the service stopped or running (it picks the
    change up as it picks up a re-fit): the way out when the served version cannot be
    loaded and the service cannot start to be rolled back over HTTP."""
    from iglearn.service.config import load_config
    from iglearn.service.storage import is_new_database, open_storage

    config = load_config(args.config, learner=False).replace(db=args.db)
    if is_new_database(config.db_path):
        raise IGLearnError(f"{config.db_shown}: no service database there yet; nothing to "
                           f"roll back (check --config and --db)")
    storage = open_storage(config.db_path, config.server.synchronous, pool_size=1)
    try:
        models = storage.models()
        versions = [m.version for m in models]
        current = storage.served_version()
        target = args.version
        if target is None:  # the newest earlier version, as POST /v1/model/rollback
            older = [m.version for m in models if m.version < current and not m.held_back]
            if not older:
                raise IGLearnError(f"{config.db_shown}: no model version earlier than the "
                                   f"served {current} is stored; import one with iglearn "
                                   f"serve import once the service runs")
            target = max(older)
        elif target not in versions:
            raise IGLearnError(f"{config.db_shown}: model version {target} is not stored (the "
                               f"stored versions: {versions or 'none'}); choose one of them")
        storage.serve(target)
    finally:
        storage.close()
    print(f"{config.db_shown}: serving model version {target} (was {current})")
    return 0


DEFAULT_URL = "http://127.0.0.1:8700"
"""The service a remote command talks to without ``--url`` or ``--config``: the address
``[server]`` defaults to."""
KEY_VARIABLE = "IGLEARN_API_KEY"
"""The environment variable a remote command reads its API key from without ``--key-file``."""
REMOTE_TIMEOUT = 30.0
"""Seconds a remote command waits for each step of an answer (``refit``: plus ``--wait``)."""
MAX_WAIT = 600.0
"""The longest ``refit --wait`` (the service's own limit of ``POST /v1/model/refit?wait=``)."""
SERVE_OPTIONS = ("host", "port", "db", "log_format", "insecure_no_auth", "demo")
"""The destinations of ``iglearn serve``'s options that start a service: refused before a
remote command (``iglearn serve --port 8701 status``), which would otherwise ignore them."""
MAX_KEY_FILE_BYTES = 4096
"""The largest key file read (a key is 48 characters)."""
KEY_FIX = (f"give a key from 'iglearn serve keys add' in a file (--key-file FILE) or in "
           f"${KEY_VARIABLE}")


def service_url(args: argparse.Namespace) -> str:
    """The base URL of the service a remote command talks to: ``--url``; else the ``[server]``
    host and port of ``--config`` (a host that listens on every address, 0.0.0.0 or ::, is
    reached on loopback); else :data:`DEFAULT_URL`."""
    from iglearn.errors import require_extra

    require_extra("serve", ("httpx",), f"iglearn serve {args.serve_command}")
    import httpx

    given = [f"--{name.replace('_', '-')}" for name in SERVE_OPTIONS
             if getattr(args, name, None) not in (None, False)]
    if given:
        raise IGLearnError(f"{' and '.join(given)}: an option of 'iglearn serve' itself, which "
                           f"runs a service; 'iglearn serve {args.serve_command}' talks to a "
                           f"running one: give it --url http://HOST:PORT (or --config)")
    if args.url is None and args.config is not None:
        from iglearn.service.config import load_config

        server = load_config(args.config, learner=False).server
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(server.host, server.host)
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host).version == 6:
                host = f"[{host}]"
        return f"http://{host}:{server.port}"
    url = args.url if args.url is not None else DEFAULT_URL
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host \
            or parsed.query or parsed.fragment:
        raise IGLearnError(f"--url {url}: not the base URL of a decision service; give "
                           f"http://HOST:PORT (https:// behind a proxy), {DEFAULT_URL} say")
    return url.rstrip("/")


def api_key(args: argparse.Namespace) -> tuple[str | None, str]:
    """The API key a remote command sends, and where it came from (for messages, never the
    key): ``--key-file`` (the key alone, as ``iglearn serve keys add ... > FILE`` writes it),
    else ``$IGLEARN_API_KEY``, else none (a service run with ``--insecure-no-auth``)."""
    from iglearn.files import input_file

    if args.key_file is not None:
        source = f"the key in --key-file {args.key_file}"
        if input_file(args.key_file, "key file") > MAX_KEY_FILE_BYTES:
            raise IGLearnError(f"--key-file {args.key_file}: more than {MAX_KEY_FILE_BYTES} "
                               f"bytes, not a key file; it holds the key alone ('iglearn "
                               f"serve keys add ... > FILE' writes one)")
        try:
            lines = Path(args.key_file).read_text(encoding="utf-8").split()
        except UnicodeDecodeError:
            lines = []
        if len(lines) != 1:
            raise IGLearnError(f"--key-file {args.key_file}: holds {len(lines) or 'no'} "
                               f"words, not one key; it holds the key alone ('iglearn serve "
                               f"keys add ... > FILE' writes one)")
        key: str | None = lines[0]
    else:
        source = f"the key in ${KEY_VARIABLE}"
        key = os.environ.get(KEY_VARIABLE, "").strip() or None
    if key is None:
        return None, "no key (neither --key-file nor $" + KEY_VARIABLE + " gives one)"
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        raise IGLearnError(f"{source}: not an API key (it holds a character that is not "
                           f"printable ASCII); {KEY_FIX}")
    return key, source


def _problem(error: Exception, url: str, source: str, action: str, target: str) -> str:
    """The line that says what went wrong talking to the service at ``url`` and the fix;
    ``action`` says what the command did, ``target`` the model file of ``import``."""
    import httpx

    from iglearn.client import ServiceError
    from iglearn.progress import one_line

    if not isinstance(error, ServiceError):
        cause = error.__cause__
        if isinstance(cause, httpx.ConnectError):
            return (f"{url}: no decision service answers ({type(cause).__name__}: "
                    f"{one_line(cause)}); start it ('iglearn serve --config FILE'), or give "
                    f"the --url (or --config) of the one running")
        if isinstance(cause, httpx.TimeoutException):
            stored = ("; it may have stored the model: see 'iglearn serve status' before "
                      "importing again" if target else "")
            return (f"{url}: no answer while {action} ({type(cause).__name__}); the service "
                    f"is busy or hung: see its log, or try again{stored}")
        return str(error)  # the client's own line (an import's answer lost, say)
    message = one_line(str(error).partition(": ")[2] or error)[:500]
    status = error.status
    if status == 401:
        return (f"{url}: the service refused {source} (401: {message}); {KEY_FIX}" if
                not source.startswith("no key") else
                f"{url}: the service needs an API key (401); {KEY_FIX}")
    if status == 403:
        return (f"{url}: {action} needs an admin key, and {source} is a client key (403); "
                f"give an admin key ('iglearn serve keys add --role admin') with --key-file "
                f"or ${KEY_VARIABLE}")
    if status == 404 and "no model" in message:
        return (f"{url}: the service has no model yet (404: {message}); ask for a re-fit "
                f"once it has joined interactions ('iglearn serve refit --wait 60') or "
                f"import a model ('iglearn serve import MODEL')")
    if status == 404:
        return (f"{url}: not found (404) while {action}; --url must be the decision "
                f"service's base URL, http://HOST:PORT with no path")
    if status == 409:
        return (f"{url}: {message} (409); 'iglearn serve status' shows it as last_refit, "
                f"and the service goes on serving its model")
    if status == 413:
        return (f"{url}: {target} is larger than the service takes (413: {message}); raise "
                f"its [server] max_body_bytes")
    if status == 422 and target:
        return (f"{url}: the service refused {target} (422: {message}); import a model of "
                f"its n_actions, context_dim, feedback_dim and algorithm ('iglearn serve "
                f"status' shows them)")
    if status == 503:
        return f"{url}: the service cannot do it now (503: {message})"
    return f"{url}: HTTP {status} while {action}: {message}"


@contextlib.contextmanager
def remote(args: argparse.Namespace, url: str, action: str, target: str = "",
           wait: float = 0.0) -> Iterator[Client]:
    """A client of the service at ``url`` with the command's key (:func:`api_key`); every
    error talking to it becomes one :class:`IGLearnError` line that names the URL and the fix
    (``action``: what the command does; ``target``: the model ``import`` sends)."""
    from iglearn.client import Client, ServiceError

    key, source = api_key(args)
    try:
        with Client(url, key, timeout=REMOTE_TIMEOUT + wait, retries=1) as client:
            yield client
    except ServiceError as e:
        raise IGLearnError(_problem(e, url, source, action, target)) from e
    except IGLearnError as e:
        if e.__cause__ is None:  # said before anything was sent
            raise
        raise IGLearnError(_problem(e, url, source, action, target)) from e
    except ValueError as e:  # an answer that is not JSON: not the decision service
        raise IGLearnError(f"{url}: the answer while {action} is not a decision service's "
                           f"(not JSON); check --url") from e


def _print_json(record: dict[str, Any]) -> None:
    from iglearn.data import safejson

    print(safejson.dumps(record, indent=2))


def run_status(args: argparse.Namespace) -> int:
    """Print the running service's health (GET /healthz) and model (GET /v1/model) as JSON."""
    url = service_url(args)
    with remote(args, url, "reading its status") as client:
        health, model = client.health(), client.model()
    _print_json({"url": url, "health": health, "model": model})
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Write the served model's archive to ``--out`` atomically, checked first as ``iglearn
    load`` checks one (nothing is written for an archive that does not load)."""
    from iglearn.cli.paths import check_paths
    from iglearn.files import write_atomic
    from iglearn.models.archive import ARCHIVE_SUFFIXES, load_archive

    out = Path(args.out)
    if not out.name.lower().endswith(ARCHIVE_SUFFIXES):
        raise IGLearnError(f"--out {out}: a model archive's name ends with "
                           f"{' or '.join(ARCHIVE_SUFFIXES)} (model.tar.gz, say)")
    check_paths([(name, path) for name, path in (("--config", args.config),
                                                 ("--key-file", args.key_file)) if path],
                [("--out", out)])
    args.outputs.claim([out])
    url = service_url(args)
    with remote(args, url, "exporting the model (GET /v1/model/export)") as client:
        version, archive = client.export_model()
    meta = load_archive(archive, None, f"{url}/v1/model/export").metadata_
    write_atomic(out, lambda tmp: tmp.write_bytes(archive))
    _print_json({"url": url, "archive": str(out), "version": version, "bytes": len(archive),
                 "algorithm": meta["algorithm"], "n_actions": meta["n_actions"],
                 "context_dim": meta["context_dim"], "feedback_dim": meta["feedback_dim"]})
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Send a model archive, or a model folder packed as one, to the service (PUT
    /v1/model), checked first as ``iglearn evaluate`` reads a model; the service stores it as
    its next version and serves it at once."""
    from iglearn.models.archive import read_model

    read_model(args.model)  # a damaged model is named here, before anything is sent
    url = service_url(args)
    with remote(args, url, "importing the model (PUT /v1/model)", str(args.model)) as client:
        previous = client.model()["version"]
        info = client.import_model(args.model)
    _print_json({"url": url, "model": str(args.model), "version": info["version"],
                 "previous": previous, "algorithm": info["algorithm"],
                 "n_actions": info["n_actions"], "context_dim": info["context_dim"],
                 "feedback_dim": info["feedback_dim"]})
    return 0


def run_refit(args: argparse.Namespace) -> int:
    """Ask the service for a re-fit (POST /v1/model/refit); with ``--wait``, wait for it and
    print the model then served (a re-fit held back says why in ``last_refit``)."""
    if args.wait > MAX_WAIT:
        raise IGLearnError(f"--wait {args.wait:g}: at most {MAX_WAIT:g} seconds (the "
                           f"service's limit); check 'iglearn serve status' for a longer "
                           f"re-fit")
    url = service_url(args)
    with remote(args, url, "asking for a re-fit (POST /v1/model/refit)",
                wait=args.wait) as client:
        answer = client.refit(args.wait)
    if args.wait > 0 and answer.get("status") == "requested":
        raise IGLearnError(f"{url}: the re-fit did not finish within --wait {args.wait:g} s; "
                           f"it goes on in the service: see 'iglearn serve status' (its "
                           f"last_refit and refit_running), or wait longer")
    last = answer.get("last_refit") or {}
    if args.wait > 0 and last.get("held_back"):
        import warnings

        warnings.warn(f"the re-fit stored version {last.get('version')} and held it back "
                      f"({last['held_back']}); version {answer.get('version')} goes on "
                      f"serving", UserWarning, stacklevel=1)
    _print_json({"url": url} | answer)
    return 0


def remote_command(actions: argparse._SubParsersAction, name: str,
                   run: Callable[[argparse.Namespace], int], help: str, description: str,
                   reads: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """A command that talks to a running service over HTTP: its parser, with ``--url``,
    ``--config`` and ``--key-file``."""
    parser = actions.add_parser(name, help=help, description=description)
    parser.add_argument("--url", default=None,
                        help=f"the service's base URL (default: the [server] host and port "
                             f"of --config, 0.0.0.0 and :: as loopback; without --config "
                             f"{DEFAULT_URL})")
    parser.add_argument("--config", default=argparse.SUPPRESS,  # or before the command
                        help="the service's TOML configuration, read for its [server] host "
                             "and port when --url is not given (default: none)")
    parser.add_argument("--key-file", default=None, metavar="FILE",
                        help=f"a file holding the API key alone, as 'iglearn serve keys add "
                             f"... > FILE' writes it (default: ${KEY_VARIABLE}, else no key)")
    parser.set_defaults(run=run, reads=("config", "key_file", *reads))
    return parser


def add_remote_commands(actions: argparse._SubParsersAction) -> None:
    """Add ``serve status``, ``export``, ``import`` and ``refit``: a running service's
    endpoints as commands."""
    remote_command(actions, "status", run_status,
                   "print a running service's health and model as JSON (any key)",
                   "Print the health (GET /healthz) and the model (GET /v1/model: the served "
                   "version, its indicator, every stored version, the last re-fit) of a "
                   "running decision service as JSON. Any key will do, a client key too.")
    export = remote_command(
        actions, "export", run_export,
        "write a running service's model as an archive (admin key)",
        "Download the served model (GET /v1/model/export), check it as 'iglearn load' does, "
        "and write it to --out atomically (a .tar.gz that evaluate, predict and load read); "
        "prints what it is as JSON. Needs an admin key.")
    export.add_argument("--out", required=True, metavar="ARCHIVE",
                        help="the model archive to write (.tar.gz or .tgz)")
    imported = remote_command(
        actions, "import", run_import,
        "serve a model archive or folder on a running service (admin key)",
        "Check MODEL (a model archive, as export or 'iglearn pack' write it, or a model "
        "folder, packed here) as 'iglearn evaluate' reads a model, and send it to the "
        "service (PUT /v1/model), which stores it as its next version and serves it at "
        "once; prints the version as JSON. Needs an admin key.", reads=("model",))
    imported.add_argument("model", metavar="MODEL",
                          help="a model archive (.tar.gz, .tgz) or a model folder")
    refit = remote_command(
        actions, "refit", run_refit, "ask a running service for a re-fit now (admin key)",
        "Ask the service's learning worker for a re-fit now (POST /v1/model/refit) and "
        "print the answer as JSON; with --wait S, wait up to S seconds for it and print the "
        "model then served (exit code 2 if it failed or did not finish in time). Needs an "
        "admin key.")
    refit.add_argument("--wait", type=number(float), default=0.0, metavar="S",
                       help=f"seconds to wait for the re-fit, at most {MAX_WAIT:g} (default: "
                            f"0, ask and return)")


def add_database_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--config`` and ``--db``, which every serve command takes (``serve`` itself checks
    for ``--config`` once it knows no subcommand was given: ``required`` False)."""
    parser.add_argument("--config", required=required,
                        help="the service's TOML configuration" if required else
                             "the service's TOML configuration (required; default: none)")
    parser.add_argument("--db", default=None, type=database_argument,
                        help="database file (relative to the current folder) or "
                             "postgresql:// URL (default: the file's [server] db, relative "
                             "to the file's folder)")


def database_argument(value: str) -> str:
    """``--db`` as the service reads it: a relative file path resolved against the current
    folder, as every path on a command line is (the configuration file's own ``[server] db``
    is relative to the file's folder), and a PostgreSQL URL as given."""
    from iglearn.service.storage import is_postgres

    if is_postgres(value) or not value:
        return value
    return str(Path(value).expanduser().absolute())


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
    serve.add_argument("--port", type=port_number, default=None,
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
    rollback = db_actions.add_parser(
        "rollback", help="serve an earlier stored model version",
        description="Serve an earlier stored model version (by default the newest one before "
                    "the served version that was not held back), whether the service is "
                    "stopped or running: the way out when the served version cannot be "
                    "loaded, so that the service cannot start to be rolled back over HTTP.")
    add_database_arguments(rollback)
    rollback.add_argument("--version", type=int, default=None,
                          help="the stored model version to serve (default: the newest "
                               "earlier one)")
    rollback.set_defaults(run=run_db_rollback, reads=("config",))
    add_remote_commands(actions)
    add_demo_command(commands)


def add_demo_command(commands: argparse._SubParsersAction) -> None:
    """Add ``demo``: the decision service with the gesture demo page."""
    demo = commands.add_parser(
        "demo", help="teach the learner with your own gestures, in a browser",
        description="Start a decision service with the demo's configuration on 127.0.0.1 "
                    "(no keys) and serve a page at /demo where you ground the learner live "
                    "with your own gestures. See docs/guides/demo.md.")
    demo.add_argument("--port", type=port_number, default=8700,
                      help="port to listen on (default: 8700)")
    demo.add_argument("--folder", default=None,
                      help="folder for the configuration and the database, kept to resume "
                           "(default: a temporary folder, deleted at the end)")
    demo.add_argument("--seed", type=number(int), default=0,
                      help="seed of the service's draws and re-fits (default: 0)")
    demo.set_defaults(run=run_demo, reads=())
