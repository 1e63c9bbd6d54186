"""Whether an executor reaches any node, said while it does not, and again when it does.

An executor that reaches no node runs nothing, yet its process looks healthy.
Every `interval_s` this checks whether any link has a live stream; while none
has, it logs an error that names the likely cause, and keeps logging it:

- no node is listed under the cluster's keys: a `--cluster` no node runs in
  (or no node is up yet); or, for an executor given node addresses (`--node`,
  `WHEEL_NODES`), none of them answers: the addresses, where they came from, and
  each one's last error ("connection refused") are named, not the cluster;
- nodes are listed but none accepted a stream: its token refused, TLS, or the
  network (each link's own `link.refused` / `link.broken` says which).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from wheel.executor.connection import NodeLink

log = logging.getLogger(__name__)


class Reach:
    def __init__(
        self,
        links: Callable[[], Mapping[str, NodeLink]],
        *,
        executor_id: str,
        cluster: str,
        interval_s: float,
        seeds: tuple[str, ...] = (),
        seeds_from: str = "--node",
        seed_errors: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        self._links = links
        self._seeds = seeds
        self._seeds_from = seeds_from
        self._seed_errors = seed_errors
        self._context = {"executor": executor_id, "cluster": cluster}
        self._interval_s = interval_s
        self.reaching = asyncio.Event()
        """Set while some node has a live stream from this executor."""
        self.unreached = asyncio.Event()
        """Set while none has, once a check found it so."""

    def check(self) -> None:
        links = self._links()
        live = sorted(node for node, link in links.items() if link.stream is not None)
        if live:
            if not self.reaching.is_set():
                log.info("executor.reaching", extra={**self._context, "nodes": live})
            self.reaching.set()
            self.unreached.clear()
            return
        self.reaching.clear()
        self.unreached.set()
        if not links and self._seeds:
            errors = self._seed_errors()
            said = "; ".join(f"{a}: {errors[a]}" for a in self._seeds if a in errors)
            cause = (
                f"no scheduler node answers at {', '.join(self._seeds)} (from "
                f"{self._seeds_from}){': ' + said if said else ''}: check that the nodes are "
                f"up and that {self._seeds_from} names them"
            )
        elif not links:
            cause = (
                f"no scheduler node is listed in cluster {self._context['cluster']!r} "
                "(etcd /wheel/<cluster>/nodes/): check --cluster (env WHEEL_CLUSTER) "
                "against the nodes' own, and that nodes are up"
            )
        else:
            cause = (
                f"none of the {len(links)} listed nodes accepted a stream: see link.refused "
                "(a wrong or revoked --token, an executor id the token does not allow) or "
                "link.broken (TLS, the network) for each"
            )
        log.error("executor.no_node", extra={**self._context, "reason": cause,
                                             "listed": sorted(links)})  # fmt: skip

    async def run(self) -> None:
        """Check every `interval_s` until cancelled (the first check after one interval)."""
        while True:
            await asyncio.sleep(self._interval_s)
            self.check()
