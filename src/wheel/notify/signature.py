"""The Wheel-Signature header now lives in `wheel.api.signature`; this name stays for
`wheel.notify.sender` until its import moves there."""

from wheel.api.signature import HEADER, sign

__all__ = ["HEADER", "sign"]
