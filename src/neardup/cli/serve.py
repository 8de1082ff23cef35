"""``neardup serve``: the HTTP service (FastAPI on uvicorn); see docs/service.md."""

from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path

import click

from neardup.errors import ConfigError, StoreError
from neardup.service.settings import SETTINGS_ENV, ServiceSettings

__all__ = ["serve"]


@click.command()
@click.option(
    "--store",
    default="neardup.db",
    show_default=True,
    help="Where articles are stored: a SQLite file (a path, or sqlite:///PATH relative to"
    " this folder), or postgresql://user@host/db for several workers. The same default as"
    " neardup ingest.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=int, help="TCP port (0: any free).")
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=int,
    help="Worker processes (for more than 1, a PostgreSQL store is recommended).",
)
@click.option(
    "--token",
    default=None,
    envvar="NEARDUP_TOKEN",
    help="API token required for writes. Prefer NEARDUP_TOKEN or --token-file: a value on "
    "the command line is visible to other users in the process list.",
)
@click.option(
    "--token-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Read the API token from this file (its first line).",
)
@click.option(
    "--preload",
    default=0,
    show_default=True,
    type=int,
    help="Ingest N sample articles at start: the first N Reuters-21578 articles when the"
    " shared data is found ($NEARDUP_DATA or ../shared/data), else the synthetic sample"
    " corpus shipped with neardup (33 articles). On a machine with two cores or more the"
    " workers' warm-up runs beside the preload in a second process, so that a first start"
    " compiles on two cores.",
)
@click.option(
    "--preload-path",
    default=None,
    help="The Reuters docs.jsonl.gz (or its folder) to preload from; only there.",
)
@click.option(
    "--max-body-bytes",
    default=ServiceSettings.max_body_bytes,
    show_default=True,
    type=int,
    help="Largest request body accepted (413 above).",
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help="How much the server logs on stderr: warning and above by default, info adds"
    " start-up and shutdown, debug everything.",
)
def serve(
    store: str,
    host: str,
    port: int,
    workers: int,
    token: str | None,
    token_file: str | None,
    preload: int,
    preload_path: str | None,
    max_body_bytes: int,
    log_level: str,
) -> None:
    """Serve the JSON API v1, the web page (/) and the OpenAPI docs (/docs)."""
    import uvicorn

    from neardup.service.backend import open_backend
    from neardup.service.load import preload as run_preload
    from neardup.service.warmup import finish_warm_up_beside, start_warm_up_beside

    if token_file is not None:
        if token is not None:
            raise click.UsageError("give the token once: --token / NEARDUP_TOKEN or --token-file")
        try:
            lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"cannot read --token-file {token_file}: {exc}") from exc
        token = lines[0].strip() if lines else ""
        if not token:
            raise click.UsageError(f"--token-file {token_file} holds no token")

    settings = ServiceSettings(
        store=store,
        host=host,
        port=port,
        workers=workers,
        token=token,
        preload=preload,
        preload_path=preload_path,
        max_body_bytes=max_body_bytes,
        log_level=log_level,
    )
    _check_listen(host, port)
    if not preload:
        # Fail here, with the CLI's exit code and a one-line message, rather than in a worker.
        from neardup.store import open_store

        open_store(store).close()
    else:
        if preload_path is not None:
            # A missing --preload-path fails before the store is created.
            from neardup.service.load import find_reuters

            find_reuters(preload_path)
        # Once, before the workers start (each worker would otherwise preload the same sample),
        # with the workers' warm-up beside it: on a new machine both compile, on two cores.
        helper = start_warm_up_beside()
        backend = open_backend(settings)
        try:
            loaded = run_preload(backend, preload, preload_path)
        except BaseException:
            finish_warm_up_beside(helper, cancel=True)
            raise
        finally:
            backend.close()
        finish_warm_up_beside(helper)
        click.echo(f"neardup serve: {loaded.describe()}, into {store}", err=True)
    worker_settings = dataclasses.replace(settings, preload=0)
    os.environ[SETTINGS_ENV] = worker_settings.to_env()
    click.echo(
        f"neardup serve: http://{host}:{port}/ ({workers} worker(s), store {store.split('@')[-1]})",
        err=True,
    )
    uvicorn.run(
        "neardup.service.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
    )


def _check_listen(host: str, port: int) -> None:
    """Fail before the store is opened, with the CLI's exit codes and a one-line message,
    when uvicorn could not listen on ``host``:``port``: ``ConfigError`` (2) for a host name
    that does not resolve, ``StoreError`` (74) for an address that cannot be bound (in use,
    not of this machine, a privileged port).  Binds a socket the way uvicorn does
    (``SO_REUSEADDR``) and closes it at once."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        raise ConfigError(f"--host {host!r} is not a usable address: {reason}") from exc
    family, kind, proto, _, address = infos[0]
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
    except OSError as exc:
        raise StoreError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
