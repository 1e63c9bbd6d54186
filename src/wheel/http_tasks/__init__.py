"""HTTP tasks: the nodes POST a job's runs to its URL (see wheel.model.http_tasks).

`call` makes one attempt's request and reads its answer as an outcome;
`headers` names what a request carries and checks it on the receiving end.
"""
