"""Ids in the inspector's URL paths, so that every id round-trips through a browser and a server.

A path segment is percent-encoded twice (:func:`segment`): a server decodes the path once before
it routes it, so an id's ``/`` encoded once (``%2F``) would split the path, and a browser
normalises ``.``, ``..`` and their once-encoded forms (``%2E``) away before it sends the path.
Encoded twice, ``a/b`` is ``a%252Fb`` and ``..`` is ``%252E%252E``: the server hands the route
``a%2Fb`` and :func:`unsegment` gives ``a/b``. An id of letters, digits and ``-_~`` is its own
segment (``acme``). Query-string values are encoded once, as usual.
"""

from __future__ import annotations

from urllib.parse import quote, unquote


def segment(value: object) -> str:
    """``value`` as one segment of a URL path (see the module's docstring)."""
    once = quote(str(value), safe="").replace(".", "%2E")
    return quote(once, safe="")


def unsegment(routed: str) -> str:
    """The id of a path segment the server routed (decoded once already)."""
    return unquote(routed)


def tenant_url(tenant: str) -> str:
    """The path of ``tenant``'s timeline."""
    return f"/tenants/{segment(tenant)}"
