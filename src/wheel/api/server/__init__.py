"""The API services a node mounts: jobs (with registration), executions, explain and the
cluster view, behind one authenticating, error-mapping `Rpc` wrapper. They read and
write through the store only; a node imports them, the SDK never does."""
