"""Executor nodes: the task registry, the runner, and the stream client to scheduler nodes."""
