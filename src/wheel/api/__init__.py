"""The public gRPC API: the contract both sides share (conversions, status mapping, signatures).

`wheel.api.convert`, `wheel.api.status` and `wheel.api.signature` are imported
by the SDK as well as the server, so this package's import stays light: the
services themselves (which need the store) live in `wheel.api.server` and are
imported by nodes. `tests/unit/client/test_import_rule.py` holds both to it.
"""
