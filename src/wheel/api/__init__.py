"""The public gRPC API: the contract both sides share (conversions, status mapping).

`wheel.api.convert` and `wheel.api.status` are imported by the SDK as well as
the server, so this package's import stays light: the services themselves
(which need the store) live in `wheel.api.server` and are imported by nodes.
"""
