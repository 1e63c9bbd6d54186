"""Executor nodes: the task registry, the runner, and the stream client to scheduler nodes.

    tasks, context     what users write: `@wheel.task`, `TaskContext`
    config             `ExecutorConfig`
    runner, pools      one dispatch: wait for start_at and a slot, run, report
    executions         what this executor holds, and its credit policy
    connection         one stream to one node; routing, outbox: where results go
    discovery          nodes from etcd; registration: our entry in etcd
    executor, cli      the process: `run_executor`, `wheel executor`

Nothing here is imported by `import wheel`: the gRPC parts load with `executor`.
"""
