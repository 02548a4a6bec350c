"""One exception tree for the whole library.

Every error says what went wrong and what to do about it. Driver errors (psycopg, SQLAlchemy)
are translated in one place, :func:`translate_database_errors`, and re-raised ``from`` the original.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
from sqlalchemy import exc as sa_exc


class RetrievalError(Exception):
    """Base class of every error raised by ``retrieval``."""


class ConfigurationError(RetrievalError, ValueError):
    """A setting (argument or ``RETRIEVAL_*`` variable) has a value the library cannot use."""


class DatabaseError(RetrievalError):
    """The database refused or failed an operation."""


class DatabaseUnavailableError(DatabaseError):
    """The PostgreSQL server could not be reached or refused the connection."""


class EmbeddedServerError(DatabaseError):
    """The embedded PostgreSQL server could not be started or reused."""


class ExtensionError(DatabaseError):
    """A required extension (``vector`` or ``pg_trgm``) is missing or cannot be created."""


class SchemaError(DatabaseError):
    """The database schema is missing or older than this library expects."""


class DimensionMismatchError(RetrievalError, ValueError):
    """An embedding model's dimension differs from the dimension the database stores."""


class ValidationError(RetrievalError, ValueError):
    """An input to a write was refused before anything was written.

    ``item`` is the 0-based position of the offending item in its batch (``None`` for a single
    write) and ``field`` the name of the offending field.
    """

    def __init__(self, message: str, *, item: int | None = None, field: str | None = None) -> None:
        prefix = f"item {item}: " if item is not None else ""
        super().__init__(prefix + message)
        self.item = item
        self.field = field
        self.reason = message


class EmbeddingError(RetrievalError):
    """The embedding model could not be loaded or produced unusable vectors."""


# A shorter password is not scrubbed from messages (it would garble them, and proves nothing).
_SHORTEST_SCRUBBED = 3
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*:/*)(.*)$", re.DOTALL)
_SECRET_PARAMETER = re.compile(r"password", re.IGNORECASE)
_DSN_SECRET = re.compile(r"(\w*password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def mask_url(url: object) -> str:
    """Return ``url`` with every password in it replaced by ``***``: the user's (even one
    holding an unencoded ``@``, ``/``, ``?`` or ``#``: everything from the user's ``:`` to the
    last ``@`` is masked), and any query parameter named like ``password`` (``?password=...``,
    ``sslpassword=...``). Works on malformed URLs too."""
    text = str(url)
    if "://" not in text and ":/" not in text:  # a libpq keyword/value string
        return _DSN_SECRET.sub(r"\1***", text)
    match = _SCHEME.match(text)
    head, rest = (match.group(1), match.group(2)) if match else ("", text)
    span = _password_span(rest)
    if span is not None:
        rest = f"{rest[: span[0]]}:***{rest[span[1] :]}"
    address, mark, query = rest.partition("?")
    if mark:
        query = "&".join(
            f"{name}=***" if _SECRET_PARAMETER.search(name) else f"{name}{sep}{value}"
            for name, sep, value in (part.partition("=") for part in query.split("&"))
        )
    return f"{head}{address}{mark}{query}"


def unavailable_error(url: str, cause: BaseException) -> DatabaseUnavailableError:
    """Build the error for a server that cannot be reached at ``url`` (password masked)."""
    said = scrubbed(str(cause), url).strip()
    reason = said.splitlines()[0] if said else type(cause).__name__
    if "timeout expired" in reason:
        reason += (
            " (no answer within the connect timeout: RETRIEVAL_CONNECT_TIMEOUT, or "
            "connect_timeout in the URL, sets it)"
        )
    data_dir = _embedded_data_dir(url)
    if data_dir is not None:
        return DatabaseUnavailableError(
            f"Cannot connect to the embedded PostgreSQL in {data_dir}: {reason}. It starts "
            "again by itself when it is down; if it does not, its log ("
            f"{data_dir / 'log'}) says why (check free disk space), and RETRIEVAL_DATA_DIR set "
            "to another directory starts afresh."
        )
    return DatabaseUnavailableError(
        f"Cannot connect to PostgreSQL at {mask_url(url)}: {reason}. "
        "Check that the server is running and reachable from this machine, that the host, port, "
        "user, password and database name of the URL are right, and that pg_hba.conf allows "
        "this client (a URL from RETRIEVAL_DATABASE_URL: unset it to use the embedded server "
        "instead)."
    )


def _embedded_data_dir(url: str) -> Path | None:
    # The embedded server's URL names its socket's directory, its data directory (the socket
    # lives there unless that path is too long for a socket), which holds PG_VERSION.
    host = parse_qs(urlsplit(url).query).get("host", [""])[0]
    if not host.startswith("/"):
        return None
    try:
        return Path(host) if (Path(host) / "PG_VERSION").is_file() else None
    except OSError:
        return None


@contextmanager
def translate_database_errors(url: str) -> Iterator[None]:
    """Translate driver errors raised inside the block into this library's errors.

    Connection failures become :class:`DatabaseUnavailableError` naming ``url`` with its
    password masked; other driver errors (without the URL), and a pool with no connection free
    in time, become :class:`DatabaseError`; a string UTF-8 cannot encode becomes
    :class:`ValidationError`. Errors of this library pass through unchanged.
    """
    try:
        yield
    except RetrievalError:
        raise
    except UnicodeEncodeError as error:
        # Checked fields say which one; this covers any other string on its way to the server.
        raise ValidationError(
            f"a value cannot be encoded as UTF-8 for PostgreSQL ({error}): it holds an unpaired "
            "surrogate (text decoded with errors='surrogateescape' or a JSON '\\ud800' escape "
            "makes one): decode the source with errors='replace', or remove it"
        ) from error
    except sa_exc.TimeoutError as error:
        raise DatabaseError(
            f"no pooled connection to PostgreSQL at {mask_url(url)} came free in time ({error}): "
            "more calls at once than the engine's pool holds; give make_engine a larger "
            "pool_size or max_overflow, or make fewer calls at once"
        ) from error
    except (sa_exc.OperationalError, psycopg.OperationalError) as error:
        original = getattr(error, "orig", None) or error
        if _is_connection_failure(original):
            raise unavailable_error(url, original) from error
        raise _failed(url, original) from error
    except (sa_exc.DBAPIError, psycopg.Error) as error:
        raise _failed(url, getattr(error, "orig", None) or error) from error


def _failed(url: str, original: BaseException) -> DatabaseError:
    # A statement that failed on a server the call reached: the server's words, without the
    # URL (an error is logged and shown to users and models; the URL is the caller's own).
    return DatabaseError(f"PostgreSQL failed: {scrubbed(str(original), url)}")


def scrubbed(message: str, url: str) -> str:
    """``message`` with the password of ``url`` replaced by ``***`` wherever it appears (a
    driver may quote the part of a URL it could not use). A password that is also the URL's
    user, host or database name is replaced only where it stands as a password (``:it@``,
    ``password=it``), so that the message still names the user and the database."""
    password = url_password(url)
    if not password or len(password) < _SHORTEST_SCRUBBED:
        return message
    forms = {password, unquote(password)}
    if forms & _named_parts(url):
        for form in forms:
            message = re.sub(rf":{re.escape(form)}@", ":***@", message)
            message = re.sub(
                rf"(password\s*=\s*['\"]?){re.escape(form)}", r"\1***", message, flags=re.I
            )
        return message
    for form in sorted(forms, key=len, reverse=True):
        message = message.replace(form, "***")
    return message


def _named_parts(url: str) -> set[str]:
    # The user, host and database names of ``url`` (none of a URL that does not parse).
    try:
        parts = urlsplit(url)
        names = {parts.username, parts.hostname, parts.path.lstrip("/")}
    except ValueError:
        return set()
    return {unquote(name) for name in names if name}


def url_password(url: str) -> str | None:
    """The password part of ``url`` as written (between the user's ``:`` and the last ``@``),
    or ``None``."""
    match = _SCHEME.match(url)
    rest = match.group(2) if match else url
    span = _password_span(rest)
    return None if span is None else rest[span[0] + 1 : span[1]]


def _password_span(rest: str) -> tuple[int, int] | None:
    # In a URL after its scheme: the user's ':' and the last '@', if the URL has a password.
    at = rest.rfind("@")
    colon = rest.find(":")
    return (colon, at) if at >= 0 and 0 <= colon < at else None


def _is_connection_failure(error: BaseException) -> bool:
    # psycopg raises OperationalError without a SQLSTATE when no connection could be made;
    # SQLSTATE class 08 covers connection exceptions, 57P0x a server shutting down, 28 auth.
    sqlstate = getattr(error, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(("08", "57P", "28", "3D"))
