"""etcd: sessions and leases, partition ownership by rendezvous hashing, epochs, registry."""
