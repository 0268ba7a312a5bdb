"""Request and response bodies, validated by pydantic and published as OpenAPI.

The same models validate what arrives and describe it in ``/openapi.json``, so
the published schema cannot drift from what the server accepts.  Unknown fields
are refused by name.  Each area's bodies are in the module named as its blueprint
in :mod:`api.routes`; what several areas share is in :mod:`api.schemas.common`.
"""
