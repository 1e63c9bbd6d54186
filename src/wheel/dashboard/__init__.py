"""The web dashboard every node can serve (`--http-listen`): jobs, runs, explain, the dead and
needs_review queue and the cluster, in a browser.

It speaks to wheel only through the public API, with the signed-in user's own tenant
token, exactly as the SDK does (`wheel.AsyncClient` against this node): there is no
second source of truth and no SQL here. Pages are rendered on the server from Jinja2
templates (autoescaped); the only script refreshes the runs table while you watch.
"""
