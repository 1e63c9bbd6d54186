"""Notifications: webhooks for runs that need a person, signed, retried, delivered at least once.

Receivers check a notification with `verify` (from `wheel.api.signature`; also
`wheel.client.verify_webhook`).
"""

from wheel.api.signature import HEADER, verify

__all__ = ["HEADER", "verify"]
