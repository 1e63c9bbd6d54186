-- Executors authenticate too: a token is a tenant's (the public API) or an
-- executor's (the executor stream, which carries every tenant's payloads and
-- accepts their results). An executor token belongs to no tenant.
ALTER TABLE api_tokens ADD COLUMN role text NOT NULL DEFAULT 'tenant'
    CHECK (role IN ('tenant', 'executor'));
ALTER TABLE api_tokens ALTER COLUMN tenant_id DROP NOT NULL;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_tenant
    CHECK ((role = 'tenant') = (tenant_id IS NOT NULL));
