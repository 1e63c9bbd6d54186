"""`wheel dev`: a whole local cluster (Postgres, etcd, nodes, an executor, example jobs)
in one command, with a live view of its runs. The command itself is `wheel.cli.dev`."""
