"""HTTP tasks: the nodes POST a job's runs to its URL (see wheel.model.http_tasks).

`call` makes one attempt's request and reads its answer as an outcome. What a
request carries, and the receiver's check of it, are contract both sides share:
`wheel.api.signature`.
"""
