"""etcd and Postgres together: what `wheel dev` and the test fixtures start."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from wheel.local.etcd import EtcdServer
from wheel.local.postgres import PostgresServer


@dataclass
class LocalServices:
    """A running etcd and Postgres with their start-up times, stopped together."""

    etcd: EtcdServer
    postgres: PostgresServer
    etcd_start_s: float
    postgres_start_s: float

    @classmethod
    def start(
        cls,
        data_dir: Path,
        *,
        etcd_port: int = 0,
        postgres_port: int = 0,
        durable: bool = True,
        postgres_bin: Path | None = None,
    ) -> LocalServices:
        """Start both in `data_dir`/etcd and `data_dir`/postgres; stop etcd if Postgres fails."""
        began = time.perf_counter()
        etcd = EtcdServer.start(data_dir / "etcd", port=etcd_port, durable=durable)
        etcd_ready = time.perf_counter()
        try:
            postgres = PostgresServer.start(
                data_dir / "postgres", port=postgres_port, durable=durable, bin_dir=postgres_bin
            )
        except BaseException:
            etcd.stop()
            raise
        return cls(etcd, postgres, etcd_ready - began, time.perf_counter() - etcd_ready)

    def stop(self) -> bool:
        """Stop Postgres, then etcd; whether both stopped cleanly (without SIGKILL)."""
        try:
            postgres_clean = self.postgres.stop()
        finally:
            etcd_clean = self.etcd.stop()
        return postgres_clean and etcd_clean

    def __enter__(self) -> LocalServices:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
