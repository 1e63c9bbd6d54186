"""wheel's tests. They run gRPC servers and clients in the test process and start
processes from it (Postgres, etcd, Chromium's driver, wheel's own): gRPC's fork
handlers could abort such a child before it execs, so they are off, as in the `wheel`
command (see wheel/cli/__init__.py). gRPC reads this once, at import."""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
