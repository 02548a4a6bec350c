"""Who sees which tenant in the inspector.

On a loopback address without tokens, the person running ``retrieval ui`` owns the database
and sees every tenant. With tokens (the MCP server's file of SHA-256 hashes, see
:mod:`retrieval.integrations.mcp_tokens`), each bearer token sees its own tenant only: a page
naming another tenant answers 404, as one naming a tenant that does not exist. A browser sends
its token once, on the sign-in page, and then as an HTTP-only cookie; a script sends
``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from starlette.requests import Request

from retrieval.integrations.mcp_tokens import TokenTable

COOKIE = "retrieval_ui_token"


@dataclass(frozen=True)
class Viewer:
    """Who is asking: a tenant's token (``tenant``), or the owner (``tenant`` is ``None``)."""

    tenant: str | None

    def sees(self, tenant_id: str) -> bool:
        """Whether this viewer may see ``tenant_id``."""
        return self.tenant is None or self.tenant == tenant_id


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """The rule of one inspector: ``tokens`` (``None``: the owner sees every tenant)."""

    tokens: TokenTable | None

    def viewer(self, request: Request) -> Viewer | None:
        """The viewer of ``request``, or ``None`` when it carries no valid token."""
        if self.tokens is None:
            return Viewer(None)
        token = bearer_token(request) or request.cookies.get(COOKIE)
        if not token:
            return None
        tenant = self.tokens.tenant_of(token)
        return None if tenant is None else Viewer(tenant)

    def tenant_of(self, token: str) -> str | None:
        """The tenant ``token`` opens (``None`` without tokens or for an unknown one)."""
        return None if self.tokens is None else self.tokens.tenant_of(token)


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if any."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
