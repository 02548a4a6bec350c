"""Bearer tokens of the MCP server's HTTP transport, each mapped to one tenant.

The server keeps only SHA-256 hashes of the tokens (a file or an environment variable of
``HASH TENANT`` entries): a leaked tokens file opens nothing. A request's token is hashed and
looked up; a token that is not there is refused with 401 before any tool runs.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from retrieval.arguments import check_tenant
from retrieval.errors import ConfigurationError

_HASH = re.compile(r"[0-9a-f]{64}")


def token_hash(token: str) -> str:
    """The SHA-256 of ``token`` in hex: what the tokens file holds."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class TokenTable:
    """Which tenant each accepted token's hash opens."""

    tenants: Mapping[str, str]

    def tenant_of(self, token: str) -> str | None:
        """The tenant ``token`` opens, or ``None``."""
        return self.tenants.get(token_hash(token))

    @classmethod
    def parse(cls, text: str, *, origin: str, separators: str = "\n") -> TokenTable:
        """Entries ``HASH TENANT`` separated by any of ``separators``; blank entries and
        ``#`` comments are skipped. An error names ``origin`` and the entry."""
        tenants: dict[str, str] = {}
        entries = re.split("|".join(re.escape(s) for s in separators), text)
        for number, raw in enumerate(entries, start=1):
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            digest, _, tenant = entry.partition(" ")
            tenant = tenant.strip()
            if not _HASH.fullmatch(digest) or not tenant:
                # The entry is not shown: it may be a token pasted where its hash belongs.
                raise ConfigurationError(
                    f"{origin}, entry {number}: expected 'SHA256-HEX TENANT' (64 lowercase hex "
                    f"digits, a space, a tenant id), got {len(entry)} characters that are not "
                    "(not shown: they may hold a token). The file keeps hashes, never tokens: "
                    "retrieval mcp-token --tenant T prints a token and its entry"
                )
            check_tenant(tenant)
            known = tenants.setdefault(digest, tenant)
            if known != tenant:
                raise ConfigurationError(
                    f"{origin}, entry {number}: this token hash already opens tenant {known!r}"
                )
        return cls(tenants)

    @classmethod
    def load(cls, *, file: Path | None, variable: str | None) -> TokenTable:
        """The tokens of ``file`` (lines) and of ``variable``'s value (commas or lines)."""
        tables: list[TokenTable] = []
        if file is not None:
            try:
                text = file.expanduser().read_text(encoding="utf-8")
            except OSError as error:
                raise ConfigurationError(
                    f"cannot read the tokens file {file} ({error.strerror}): check "
                    "RETRIEVAL_MCP_TOKENS_FILE or --tokens-file"
                ) from None
            tables.append(cls.parse(text, origin=str(file)))
        if variable is not None:
            tables.append(cls.parse(variable, origin="RETRIEVAL_MCP_TOKENS", separators="\n,"))
        tenants: dict[str, str] = {}
        for table in tables:
            for digest, tenant in table.tenants.items():
                if tenants.setdefault(digest, tenant) != tenant:
                    raise ConfigurationError(
                        "a token hash opens two tenants in RETRIEVAL_MCP_TOKENS_FILE and "
                        f"RETRIEVAL_MCP_TOKENS ({tenants[digest]!r} and {tenant!r}): keep one"
                    )
        return cls(tenants)
