"""Every `wheel` command: parse the arguments, build one configuration, run. Nothing else
lives here, and nothing outside this package imports click (`main.py` is the group)."""

import os

# gRPC's fork handlers run in every child a wheel process starts (`wheel dev`'s
# processes, Postgres and etcd of `wheel dev`): with calls in flight they can abort the
# child before it execs ("Check failed: next_worker->state == KICKED"). wheel never
# uses gRPC in a forked child, so they are off; gRPC reads this once, at import.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
