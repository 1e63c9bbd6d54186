"""Notifications: webhooks for runs that need a person, signed, retried, delivered at least once.

Receivers check a notification with `verify` (also `wheel.client.verify_webhook`).
"""

from wheel.notify.signature import HEADER, verify

__all__ = ["HEADER", "verify"]
