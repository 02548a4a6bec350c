"""The inspector (``retrieval ui``): web pages to look inside the memory.

:func:`retrieval.ui.app.inspector_app` builds the app; :mod:`retrieval.ui.access` decides who
sees which tenant. Needs the ``ui`` extra (Starlette, Jinja2, uvicorn, prometheus-client).
"""
