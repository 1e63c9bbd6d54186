-- The hosts a tenant's HTTP tasks may POST to: exact names, or '*.example.com' for any
-- name under one; '{}' allows any host the nodes' egress allows. An operator sets them
-- (wheel tenants create/set-http-hosts, with the DSN); the tenant cannot. Jobs are
-- checked when created or edited, and every run again when it is sent.
ALTER TABLE tenants ADD COLUMN http_hosts text[] NOT NULL DEFAULT '{}';
