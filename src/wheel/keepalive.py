"""gRPC keepalive, agreed between the two ends of the executor stream.

Executors ping every 10 s and give up on a node that does not answer in 5 s
(a node that vanished without closing its sockets is noticed in 15 s, not at
the kernel's TCP timeout). The node pings the same way, and allows pings
every 5 s with no data on the stream and never counts a strike: gRPC's
server default (one ping in 5 minutes) would answer "too many pings" and
close an executor's idle stream.
"""

from __future__ import annotations

KEEPALIVE: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
)
"""What both ends send: a ping every 10 s, answered within 5 s, even with no call open."""

SERVER_KEEPALIVE: tuple[tuple[str, int], ...] = (
    *KEEPALIVE,
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.http2.max_ping_strikes", 0),
)
"""A node's: the above, and the executors' pings are always welcome."""

CLIENT_KEEPALIVE: tuple[tuple[str, int], ...] = (
    *KEEPALIVE,
    ("grpc.http2.max_pings_without_data", 0),
)
"""An executor's: the above, with no limit on pings while no data flows."""
