"""``lorestore login`` / ``logout``: the person's credential for a server, kept for the CLI in
a file only its owner may read (``LORESTORE_HOME/credentials.json``, 0600), never in the
environment that agent hosts hand to the stdio servers they start."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from lorestore.cli.render import failure
from lorestore.config import CREDENTIALS_FILE, home_path, read_credential
from lorestore.core.errors import LorestoreError
from lorestore.models import NoParams, TokenCurrentResult
from lorestore.operations import BY_NAME

DEFAULT_URL = "http://127.0.0.1:8765"


def login_command(
    url: Annotated[
        str, typer.Argument(help="the lorestore server (as `lorestore serve` printed it)")
    ] = DEFAULT_URL,
    json_output: Annotated[
        bool, typer.Option("--json", help="print the result (or error) as JSON")
    ] = False,
) -> None:
    """Sign in to a server with your token: asked for at a terminal (not echoed), else read
    from stdin. It is checked with the server, then kept in LORESTORE_HOME/credentials.json
    (readable only by you); CLI commands without LORESTORE_URL then run on that server.
    `lorestore mcp` never uses it: agents get write tokens of their own."""
    try:
        url = _server_url(url)
        token = _read_token()
        current = _check(url, token)
        path = _keep(home_path(), url, token)
    except LorestoreError as error:
        raise failure(error, json_output) from None
    if json_output:
        summary = {"url": url, "principal": current.principal, "path": str(path)}
        print(json.dumps({**summary, "permission": current.permission}, indent=2))
        return
    print(
        f"Logged in to {url} as {current.principal} ({current.permission} token).\n"
        f"The token is kept in {path}, readable only by you; CLI commands without "
        "LORESTORE_URL run there now.\n"
        "Agents never use it: give each a write token of its own "
        "(`lorestore token create --name AGENT --permission write`)."
    )


def logout_command(
    json_output: Annotated[
        bool, typer.Option("--json", help="print the result (or error) as JSON")
    ] = False,
) -> None:
    """Forget the credential `lorestore login` kept (the token itself stays valid on the
    server: revoke it there with `lorestore token revoke ID`)."""
    path = home_path() / CREDENTIALS_FILE
    try:
        credential = read_credential(home_path())
    except LorestoreError:
        credential = None  # unreadable: removing it is what the fix says
    try:
        path.unlink()
        removed = True
    except FileNotFoundError:
        removed = False
    except OSError as exc:
        error = LorestoreError(
            "config_error", f"cannot remove {path}: {exc.strerror}", hint="remove it by hand"
        )
        raise failure(error, json_output) from None
    if json_output:
        where = credential.url if credential else None
        print(json.dumps({"logged_out": removed, "url": where, "path": str(path)}, indent=2))
    elif removed:
        print(f"Logged out{f' of {credential.url}' if credential else ''}: removed {path}.")
    else:
        print("Not logged in: there was no credential to remove.")


def _server_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise LorestoreError(
            "invalid_argument",
            f"{url!r} is not a server URL",
            hint=f"e.g. lorestore login {DEFAULT_URL}",
        )
    return url


def _read_token() -> str:
    if sys.stdin.isatty():
        token = str(typer.prompt("Token (lst_..., not echoed)", hide_input=True))
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise LorestoreError(
            "invalid_argument",
            "no token was given",
            hint="paste the token when asked, or pipe it: `lorestore login URL < token-file`",
        )
    return token


def _check(url: str, token: str) -> TokenCurrentResult:
    """The token's rights, asked of the server: a wrong URL or token is refused here, before
    anything is kept."""
    from lorestore.transports.http.client import RemoteClient

    client = RemoteClient(url, token)
    try:
        current = client.invoke(BY_NAME["token_current"], NoParams())
    finally:
        client.close()
    assert isinstance(current, TokenCurrentResult)
    return current


def _keep(home: Path, url: str, token: str) -> Path:
    """Write the credential with mode 0600 (a new home folder is made 0700), replacing any
    earlier one at once: a reader sees the old file or the new, never half of one."""
    if not home.exists():
        home.mkdir(mode=0o700, parents=True)
    path = home / CREDENTIALS_FILE
    partial = home / f".{CREDENTIALS_FILE}.partial"
    text = json.dumps({"url": url, "token": token}) + "\n"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the file may have existed with another mode
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)  # never leave a copy of the token behind
        raise LorestoreError(
            "config_error",
            f"cannot write the credential to {path}: {exc.strerror}",
            hint="check that LORESTORE_HOME is a folder you can write",
        ) from None
    return path
