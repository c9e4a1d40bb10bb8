/*
 * schema_pg.c - the PostgreSQL schema, as an ordered list of migrations.
 *
 * Side by side with schema_sqlite.c: the same version numbers, the same
 * tables and columns, so every module's SQL runs on both.  Differences:
 * integers are BIGINT (SQLite's INTEGER is 64-bit), text compares byte by
 * byte (COLLATE "C", as SQLite's BINARY) whatever the database's locale,
 * and knowledge-base chunks are indexed with a tsvector column and a GIN
 * index instead of SQLite's per-tenant FTS5 tables (migration 10).
 *
 * Invariant: migrations are append-only, and version N here describes the
 * same logical schema as version N of schema_sqlite.c.
 */
#include "schema_int.h"

#include <stddef.h>

/* the tenant a transaction is tied to (store_set_tenant), '' or NULL when none */
#define THE_TENANT "current_setting('gpupool.tenant', true)"
#define ANY_TENANT "COALESCE(" THE_TENANT ", '') = ''"
/* the tenant fence of migration 11 on table T (which has a tenant_id column) */
#define FENCE(T)                                                                                  \
    "ALTER TABLE " T " ENABLE ROW LEVEL SECURITY;"                                                \
    "ALTER TABLE " T " FORCE ROW LEVEL SECURITY;"                                                 \
    "CREATE POLICY tenant_fence ON " T " USING (" ANY_TENANT " OR tenant_id = " THE_TENANT ")"    \
    " WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");"

static const char *const migrations[] = {
    /* 1: identities, tenancy, audit chain */
    "CREATE TABLE users ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  name TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  kind TEXT COLLATE \"C\" NOT NULL DEFAULT 'user' CHECK (kind IN ('user','service')),"
    "  password_hash TEXT COLLATE \"C\","
    "  disabled BIGINT NOT NULL DEFAULT 0,"
    "  created_at BIGINT NOT NULL);"
    "CREATE TABLE tokens ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  user_id TEXT COLLATE \"C\" NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  hash TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  label TEXT COLLATE \"C\","
    "  created_at BIGINT NOT NULL,"
    "  expires_at BIGINT,"
    "  revoked_at BIGINT);"
    "CREATE INDEX tokens_user ON tokens(user_id);"
    "CREATE TABLE tenants ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  name TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  display_name TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL);"
    "CREATE TABLE projects ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  class TEXT COLLATE \"C\" NOT NULL CHECK (class IN ('production','development','research')),"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE TABLE role_bindings ("
    "  user_id TEXT COLLATE \"C\" NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  role TEXT COLLATE \"C\" NOT NULL,"
    "  scope TEXT COLLATE \"C\" NOT NULL CHECK (scope IN ('global','tenant','project','vendor')),"
    "  tenant_id TEXT COLLATE \"C\" REFERENCES tenants(id),"
    "  project_id TEXT COLLATE \"C\" REFERENCES projects(id),"
    "  expires_at BIGINT,"
    "  created_at BIGINT NOT NULL);"
    "CREATE UNIQUE INDEX role_bindings_one ON role_bindings"
    "  (user_id, role, scope, COALESCE(tenant_id,''), COALESCE(project_id,''));"
    "CREATE TABLE audit ("
    "  seq BIGINT PRIMARY KEY,"
    "  id TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  ts_us BIGINT NOT NULL,"
    "  request_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  actor TEXT COLLATE \"C\" NOT NULL,"
    "  on_behalf TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  source TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  action TEXT COLLATE \"C\" NOT NULL,"
    "  target_type TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  target_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  tenant TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  project TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  result TEXT COLLATE \"C\" NOT NULL CHECK (result IN ('ok','denied','error')),"
    "  status BIGINT NOT NULL DEFAULT 0,"
    "  summary TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  prev_hash TEXT COLLATE \"C\" NOT NULL,"
    "  hash TEXT COLLATE \"C\" NOT NULL);"
    "CREATE INDEX audit_tenant ON audit(tenant, seq);"
    "CREATE TABLE audit_head ("
    "  id BIGINT PRIMARY KEY CHECK (id = 1),"
    "  seq BIGINT NOT NULL,"
    "  hash TEXT COLLATE \"C\" NOT NULL);"
    "INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');",

    /* 2: security policy, approvals of sensitive operations, vendor access */
    "CREATE TABLE security_policy ("
    "  key TEXT COLLATE \"C\" PRIMARY KEY,"
    "  value TEXT COLLATE \"C\" NOT NULL);"
    "INSERT INTO security_policy VALUES ('sensitive_operations',"
    "  '[\"tenant.quota.raise\",\"member.grant_global\",\"vendor.create\","
    "\"priority_class.change\",\"audit.export\",\"policy.change\"]');"
    "INSERT INTO security_policy VALUES ('login_token_ttl_seconds', '43200');"
    "INSERT INTO security_policy VALUES ('max_token_ttl_seconds', '7776000');"
    "INSERT INTO security_policy VALUES ('approval_ttl_seconds', '86400');"
    "CREATE TABLE approvals ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  operation TEXT COLLATE \"C\" NOT NULL,"
    "  requester_id TEXT COLLATE \"C\" NOT NULL REFERENCES users(id),"
    "  tenant TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  method TEXT COLLATE \"C\" NOT NULL,"
    "  path TEXT COLLATE \"C\" NOT NULL,"
    "  query TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  body TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  summary TEXT COLLATE \"C\" NOT NULL DEFAULT '{}',"
    "  state TEXT COLLATE \"C\" NOT NULL CHECK (state IN ('pending','approved','rejected','expired','failed')),"
    "  created_at BIGINT NOT NULL,"
    "  expires_at BIGINT NOT NULL,"
    "  decided_by TEXT COLLATE \"C\" REFERENCES users(id),"
    "  decided_at BIGINT,"
    "  reason TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  result_status BIGINT,"
    "  result TEXT COLLATE \"C\");"
    "CREATE INDEX approvals_state ON approvals(state, created_at);"
    "CREATE TABLE vendor_grants ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  user_id TEXT COLLATE \"C\" NOT NULL REFERENCES users(id),"
    "  nodes TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  work_orders TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  created_by TEXT COLLATE \"C\" NOT NULL REFERENCES users(id),"
    "  created_at BIGINT NOT NULL,"
    "  expires_at BIGINT NOT NULL,"
    "  revoked_at BIGINT);"
    "CREATE INDEX vendor_grants_user ON vendor_grants(user_id);"
    "ALTER TABLE role_bindings ADD COLUMN granted_by TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    "ALTER TABLE tokens ADD COLUMN last_used_at BIGINT;",

    /* 3: GPU inventory: nodes, GPUs and slices, health, pools, classes, work orders */
    "CREATE TABLE join_tokens ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  hash TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  created_by TEXT COLLATE \"C\" NOT NULL REFERENCES users(id),"
    "  created_at BIGINT NOT NULL,"
    "  expires_at BIGINT NOT NULL,"
    "  revoked_at BIGINT,"
    "  uses BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE pools ("
    "  name TEXT COLLATE \"C\" PRIMARY KEY,"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  tenants TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"          /* [] = every tenant */
    "  project_classes TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"  /* [] = every class */
    "  created_at BIGINT NOT NULL);"
    "INSERT INTO pools (name, description, created_at) VALUES ('default', 'every node starts here', 0);"
    "CREATE TABLE nodes ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  name TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  hostname TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  cpus BIGINT NOT NULL DEFAULT 0,"
    "  memory_gib BIGINT NOT NULL DEFAULT 0,"
    "  labels TEXT COLLATE \"C\" NOT NULL DEFAULT '{}',"
    "  pool TEXT COLLATE \"C\" NOT NULL DEFAULT 'default' REFERENCES pools(name),"
    "  driver_version TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  source TEXT COLLATE \"C\" NOT NULL DEFAULT 'nvml',"
    "  state TEXT COLLATE \"C\" NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','unreachable')),"
    "  admin_state TEXT COLLATE \"C\" NOT NULL DEFAULT 'none' CHECK (admin_state IN ('none','cordoned','draining')),"
    "  agent_user_id TEXT COLLATE \"C\" NOT NULL REFERENCES users(id),"
    "  registered_at BIGINT NOT NULL,"
    "  last_heartbeat BIGINT NOT NULL);"
    "CREATE TABLE gpus ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  uuid TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  node_id TEXT COLLATE \"C\" NOT NULL REFERENCES nodes(id),"
    "  idx BIGINT NOT NULL,"
    "  model TEXT COLLATE \"C\" NOT NULL,"
    "  memory_mib BIGINT NOT NULL,"
    "  pci_bus TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  numa BIGINT NOT NULL DEFAULT -1,"
    "  compute_cap TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  mig_capable BIGINT NOT NULL DEFAULT 0,"
    "  mode TEXT COLLATE \"C\" NOT NULL DEFAULT 'whole' CHECK (mode IN ('whole','mig','shared')),"
    "  health TEXT COLLATE \"C\" NOT NULL DEFAULT 'healthy' CHECK (health IN ('healthy','degraded','failed')),"
    "  health_cause TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  admin_state TEXT COLLATE \"C\" NOT NULL DEFAULT 'none' CHECK (admin_state IN ('none','cordoned','draining')),"
    "  signals TEXT COLLATE \"C\" NOT NULL DEFAULT '{}',"
    "  topology TEXT COLLATE \"C\" NOT NULL DEFAULT '{}',"
    "  updated_at BIGINT NOT NULL);"
    "CREATE INDEX gpus_node ON gpus(node_id, idx);"
    "CREATE TABLE slices ("
    "  uuid TEXT COLLATE \"C\" PRIMARY KEY,"
    "  gpu_id TEXT COLLATE \"C\" NOT NULL REFERENCES gpus(id) ON DELETE CASCADE,"
    "  profile TEXT COLLATE \"C\" NOT NULL,"
    "  memory_mib BIGINT NOT NULL,"
    "  idx BIGINT NOT NULL);"
    "CREATE TABLE health_events ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  at BIGINT NOT NULL,"
    "  node TEXT COLLATE \"C\" NOT NULL,"
    "  gpu_uuid TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  kind TEXT COLLATE \"C\" NOT NULL,"            /* health | admin | node */
    "  from_state TEXT COLLATE \"C\" NOT NULL,"
    "  to_state TEXT COLLATE \"C\" NOT NULL,"
    "  cause TEXT COLLATE \"C\" NOT NULL,"
    "  actor TEXT COLLATE \"C\" NOT NULL DEFAULT 'system');"
    "CREATE INDEX health_events_gpu ON health_events(gpu_uuid, at);"
    "CREATE INDEX health_events_node ON health_events(node, at);"
    "CREATE TABLE alarms ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  at BIGINT NOT NULL,"
    "  severity TEXT COLLATE \"C\" NOT NULL CHECK (severity IN ('info','warning','critical')),"
    "  kind TEXT COLLATE \"C\" NOT NULL,"
    "  node TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  gpu_uuid TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  message TEXT COLLATE \"C\" NOT NULL,"
    "  tenants TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"  /* tenants whose work was on it: they see it */
    "  acked_by TEXT COLLATE \"C\","
    "  acked_at BIGINT);"
    "CREATE INDEX alarms_at ON alarms(at);"
    "CREATE TABLE classes ("
    "  name TEXT COLLATE \"C\" PRIMARY KEY,"
    "  form TEXT COLLATE \"C\" NOT NULL,"
    "  gpus BIGINT NOT NULL,"
    "  cpus BIGINT NOT NULL,"
    "  memory_gib BIGINT NOT NULL,"
    "  gpu_models TEXT COLLATE \"C\" NOT NULL,"
    "  min_driver TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  min_compute_cap TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  topology TEXT COLLATE \"C\" NOT NULL DEFAULT 'any' CHECK (topology IN ('any','nvlink','same-numa')),"
    "  pool TEXT COLLATE \"C\" REFERENCES pools(name),"
    "  created_at BIGINT NOT NULL);"
    "CREATE TABLE work_orders ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  node TEXT COLLATE \"C\" NOT NULL,"
    "  gpu_uuid TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  title TEXT COLLATE \"C\" NOT NULL,"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  state TEXT COLLATE \"C\" NOT NULL CHECK (state IN ('open','in_progress','resolved')),"
    "  assignee TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_by TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL);"
    "CREATE TABLE work_order_comments ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  work_order_id TEXT COLLATE \"C\" NOT NULL REFERENCES work_orders(id),"
    "  author TEXT COLLATE \"C\" NOT NULL,"
    "  body TEXT COLLATE \"C\" NOT NULL,"
    "  at BIGINT NOT NULL);"
    "INSERT INTO security_policy VALUES ('health_policy', '');",

    /* 4: quotas, priority classes, jobs and the binding timeline */
    "CREATE TABLE quotas ("
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"  /* '' = the tenant's own ceiling */
    "  spec TEXT COLLATE \"C\" NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  PRIMARY KEY (tenant_id, project_id));"
    "CREATE TABLE priority_classes ("
    "  name TEXT COLLATE \"C\" PRIMARY KEY,"
    "  value BIGINT NOT NULL,"
    "  preemptible BIGINT NOT NULL,"
    "  may_preempt BIGINT NOT NULL,"
    "  allowed_project_classes TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  allowed_roles TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL);"
    "INSERT INTO priority_classes (name, value, preemptible, may_preempt, description, created_at)"
    "  VALUES ('normal', 100, 1, 0, 'default: preemptible, preempts nobody', 0);"
    "CREATE TABLE jobs ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT COLLATE \"C\" NOT NULL REFERENCES projects(id),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  class TEXT COLLATE \"C\" NOT NULL,"
    "  units BIGINT NOT NULL,"
    "  priority_class TEXT COLLATE \"C\" NOT NULL,"
    "  priority BIGINT NOT NULL,"
    "  preemptible BIGINT NOT NULL,"
    "  may_preempt BIGINT NOT NULL,"
    "  recovery TEXT COLLATE \"C\" NOT NULL CHECK (recovery IN ('requeue','fail')),"
    "  command TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  time_limit_s BIGINT NOT NULL DEFAULT 0,"
    "  submitter TEXT COLLATE \"C\" NOT NULL,"
    "  state TEXT COLLATE \"C\" NOT NULL CHECK (state IN ('queued','admitted','running','succeeded','failed',"
    "    'cancelled','preempted')),"
    "  reason TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL,"
    "  queued_at BIGINT NOT NULL,"
    "  started_at BIGINT,"
    "  ended_at BIGINT,"
    "  preemptions BIGINT NOT NULL DEFAULT 0);"
    "CREATE INDEX jobs_state ON jobs(state, priority, queued_at);"
    "CREATE INDEX jobs_project ON jobs(project_id, created_at);"
    "CREATE TABLE job_events ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  job_id TEXT COLLATE \"C\" NOT NULL REFERENCES jobs(id),"
    "  at BIGINT NOT NULL,"
    "  kind TEXT COLLATE \"C\" NOT NULL,"
    "  message TEXT COLLATE \"C\" NOT NULL);"
    "CREATE INDEX job_events_job ON job_events(job_id, at);"
    "CREATE TABLE bindings ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  job_id TEXT COLLATE \"C\" NOT NULL REFERENCES jobs(id),"
    "  unit BIGINT NOT NULL,"
    "  gpu_uuid TEXT COLLATE \"C\" NOT NULL,"
    "  slice_uuid TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  node TEXT COLLATE \"C\" NOT NULL,"
    "  model TEXT COLLATE \"C\" NOT NULL,"
    "  form TEXT COLLATE \"C\" NOT NULL,"               /* whole | mig:<profile> | shared:<GiB>/<pct> */
    "  shared_mem_gib BIGINT NOT NULL DEFAULT 0,"
    "  shared_pct BIGINT NOT NULL DEFAULT 0,"
    "  weight_milli BIGINT NOT NULL,"    /* share of the card: 1000 whole */
    "  tenant_id TEXT COLLATE \"C\" NOT NULL,"
    "  project_id TEXT COLLATE \"C\" NOT NULL,"
    "  tenant TEXT COLLATE \"C\" NOT NULL,"
    "  project TEXT COLLATE \"C\" NOT NULL,"
    "  start_us BIGINT NOT NULL,"
    "  end_us BIGINT,"
    "  end_reason TEXT COLLATE \"C\");"
    "CREATE INDEX bindings_gpu ON bindings(gpu_uuid, start_us);"
    "CREATE INDEX bindings_job ON bindings(job_id);"
    "CREATE INDEX bindings_tenant ON bindings(tenant_id, start_us);"
    "CREATE INDEX bindings_open ON bindings(end_us);",

    /* 5: workloads on the nodes: exit status and captured output */
    "ALTER TABLE jobs ADD COLUMN exit_code BIGINT;"
    "ALTER TABLE jobs ADD COLUMN log TEXT COLLATE \"C\" NOT NULL DEFAULT '';",

    /* 6: interference on shared GPUs: strikes per job and card, alarms with details */
    "CREATE TABLE interference ("
    "  gpu_uuid TEXT COLLATE \"C\" NOT NULL,"
    "  job_id TEXT COLLATE \"C\" NOT NULL,"
    "  strikes BIGINT NOT NULL DEFAULT 0,"  /* consecutive contended samples */
    "  alarmed BIGINT NOT NULL DEFAULT 0,"  /* bit per kind already alarmed while it lasts */
    "  PRIMARY KEY (gpu_uuid, job_id));"
    "ALTER TABLE alarms ADD COLUMN detail TEXT COLLATE \"C\" NOT NULL DEFAULT '{}';",

    /* 7: jobs that run an OCI image under the node's container runtime ('' for none) */
    "ALTER TABLE jobs ADD COLUMN image TEXT COLLATE \"C\" NOT NULL DEFAULT '';",

    /* 8: model services, applications, API keys, the gateway's token ledger and usage */
    "CREATE TABLE models ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  visibility TEXT COLLATE \"C\" NOT NULL CHECK (visibility IN ('private','public')),"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_by TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE UNIQUE INDEX models_public ON models(name) WHERE visibility = 'public';"
    "CREATE TABLE endpoints ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  model_id TEXT COLLATE \"C\" NOT NULL REFERENCES models(id),"
    "  url TEXT COLLATE \"C\" NOT NULL DEFAULT '',"          /* external base URL, ending in /v1 */
    "  job_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"       /* or a job of the model's tenant serving on port */
    "  port BIGINT NOT NULL DEFAULT 0,"
    "  accelerator TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  upstream_model TEXT COLLATE \"C\" NOT NULL DEFAULT '',"  /* the model's name upstream; '' = same */
    "  health_path TEXT COLLATE \"C\" NOT NULL DEFAULT '/models',"
    "  state TEXT COLLATE \"C\" NOT NULL DEFAULT 'unknown' CHECK (state IN ('unknown','healthy','unhealthy')),"
    "  checked_at BIGINT NOT NULL DEFAULT 0,"
    "  last_error TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL);"
    "CREATE INDEX endpoints_model ON endpoints(model_id);"
    "CREATE TABLE apps ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  project_id TEXT COLLATE \"C\" NOT NULL REFERENCES projects(id),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (project_id, name));"
    "CREATE TABLE api_keys ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT COLLATE \"C\" NOT NULL REFERENCES projects(id),"
    "  app_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  owner TEXT COLLATE \"C\" NOT NULL,"                   /* the user who made it */
    "  hash TEXT COLLATE \"C\" NOT NULL UNIQUE,"             /* BLAKE2b of the secret (hex); the secret is not kept */
    "  prefix TEXT COLLATE \"C\" NOT NULL,"                  /* first characters, to tell keys apart */
    "  models TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"     /* allowed model names; [] = every visible one */
    "  rpm BIGINT NOT NULL DEFAULT 0,"        /* 0 = no limit */
    "  tpm BIGINT NOT NULL DEFAULT 0,"
    "  tokens_month BIGINT NOT NULL DEFAULT 0,"
    "  expires_at BIGINT NOT NULL DEFAULT 0,"  /* 0 = never */
    "  revoked_at BIGINT NOT NULL DEFAULT 0,"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (project_id, name));"
    "CREATE TABLE token_ledger ("             /* tokens used and reserved, per scope and month */
    "  scope TEXT COLLATE \"C\" NOT NULL CHECK (scope IN ('key','project','tenant')),"
    "  id TEXT COLLATE \"C\" NOT NULL,"
    "  month TEXT COLLATE \"C\" NOT NULL,"
    "  used BIGINT NOT NULL DEFAULT 0,"
    "  reserved BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (scope, id, month));"
    "CREATE TABLE token_holds ("              /* open reservations, settled by their request */
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  key_id TEXT COLLATE \"C\" NOT NULL,"
    "  project_id TEXT COLLATE \"C\" NOT NULL,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL,"
    "  month TEXT COLLATE \"C\" NOT NULL,"
    "  amount BIGINT NOT NULL,"
    "  at BIGINT NOT NULL);"
    "CREATE TABLE usage_records ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  at BIGINT NOT NULL,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL,"
    "  project_id TEXT COLLATE \"C\" NOT NULL,"
    "  tenant TEXT COLLATE \"C\" NOT NULL,"
    "  project TEXT COLLATE \"C\" NOT NULL,"
    "  app TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  key_id TEXT COLLATE \"C\" NOT NULL,"
    "  model TEXT COLLATE \"C\" NOT NULL,"
    "  model_tenant TEXT COLLATE \"C\" NOT NULL DEFAULT '',"  /* the tenant owning the model */
    "  endpoint_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  accelerator TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  kind TEXT COLLATE \"C\" NOT NULL,"                     /* chat | completion | embedding */
    "  stream BIGINT NOT NULL DEFAULT 0,"
    "  prompt_tokens BIGINT NOT NULL DEFAULT 0,"
    "  completion_tokens BIGINT NOT NULL DEFAULT 0,"
    "  estimated BIGINT NOT NULL DEFAULT 0,"
    "  latency_us BIGINT NOT NULL DEFAULT 0,"
    "  status BIGINT NOT NULL);"
    "CREATE INDEX usage_project ON usage_records(project_id, at);"
    "CREATE INDEX usage_tenant ON usage_records(tenant_id, at);"
    "CREATE INDEX usage_key ON usage_records(key_id, at);",

    /* 9: metering: rate cards, billing modes, hourly token rollups */
    "CREATE TABLE rate_cards ("
    "  version BIGINT PRIMARY KEY,"
    "  effective_from BIGINT NOT NULL,"
    "  currency TEXT COLLATE \"C\" NOT NULL,"
    "  spec TEXT COLLATE \"C\" NOT NULL,"                    /* the card as posted */
    "  created_by TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL);"
    "CREATE TABLE tenant_billing ("
    "  tenant_id TEXT COLLATE \"C\" PRIMARY KEY REFERENCES tenants(id),"
    "  mode TEXT COLLATE \"C\" NOT NULL CHECK (mode IN ('showback','chargeback')),"
    "  updated_at BIGINT NOT NULL);"
    "CREATE TABLE usage_hourly ("             /* usage_records summed per hour, same transaction */
    "  hour BIGINT NOT NULL,"                 /* start of the hour, microseconds */
    "  tenant_id TEXT COLLATE \"C\" NOT NULL,"
    "  project_id TEXT COLLATE \"C\" NOT NULL,"
    "  tenant TEXT COLLATE \"C\" NOT NULL,"
    "  project TEXT COLLATE \"C\" NOT NULL,"
    "  key_id TEXT COLLATE \"C\" NOT NULL,"
    "  model TEXT COLLATE \"C\" NOT NULL,"
    "  accelerator TEXT COLLATE \"C\" NOT NULL,"
    "  requests BIGINT NOT NULL DEFAULT 0,"
    "  prompt_tokens BIGINT NOT NULL DEFAULT 0,"
    "  completion_tokens BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (hour, tenant_id, project_id, key_id, model, accelerator));"
    "CREATE INDEX usage_at ON usage_records(at);"
    "CREATE INDEX bindings_ended ON bindings(end_us, start_us);"
    "CREATE TABLE quota_warnings ("           /* card-hour ceilings reached with policy stop */
    "  tenant_id TEXT COLLATE \"C\" NOT NULL,"
    "  project_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"   /* '' = the tenant's ceiling */
    "  month TEXT COLLATE \"C\" NOT NULL,"
    "  warned_at BIGINT NOT NULL,"
    "  stopped_at BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (tenant_id, project_id, month));",

    /* 10: knowledge bases, their documents and chunks (full-text search over kb_chunks.tsv,
     * always filtered by the KBs the caller may read), and applications bound to them */
    "CREATE TABLE kbs ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"    /* '' for an ops KB */
    "  project_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"   /* '' unless scope is project */
    "  scope TEXT COLLATE \"C\" NOT NULL CHECK (scope IN ('tenant','project','ops')),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  work_orders TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"  /* ops: work orders whose vendors may read it */
    "  created_by TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE TABLE kb_documents ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  kb_id TEXT COLLATE \"C\" NOT NULL REFERENCES kbs(id),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  format TEXT COLLATE \"C\" NOT NULL,"
    "  bytes BIGINT NOT NULL,"
    "  chars BIGINT NOT NULL,"
    "  chunks BIGINT NOT NULL,"
    "  text TEXT COLLATE \"C\" NOT NULL,"                    /* the extracted text the chunks index */
    "  created_by TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  UNIQUE (kb_id, name));"
    "CREATE TABLE kb_chunks ("                 /* the chunk's text and its search vector */
    "  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
    "  doc_id TEXT COLLATE \"C\" NOT NULL REFERENCES kb_documents(id),"
    "  kb_id TEXT COLLATE \"C\" NOT NULL,"
    "  seq BIGINT NOT NULL,"
    "  start_char BIGINT NOT NULL,"
    "  end_char BIGINT NOT NULL,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"  /* the KB's tenant; '' for ops */
    "  text TEXT NOT NULL DEFAULT '',"
    "  tsv tsvector NOT NULL DEFAULT ''::tsvector);"
    "CREATE INDEX kb_chunks_doc ON kb_chunks(doc_id, seq);"
    "CREATE INDEX kb_chunks_tsv ON kb_chunks USING GIN (tsv);"
    "CREATE TABLE kb_app_rag ("                /* app x model -> KBs, k */
    "  app_id TEXT COLLATE \"C\" NOT NULL REFERENCES apps(id),"
    "  model TEXT COLLATE \"C\" NOT NULL,"
    "  kb_id TEXT COLLATE \"C\" NOT NULL REFERENCES kbs(id),"
    "  pos BIGINT NOT NULL,"
    "  k BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  PRIMARY KEY (app_id, model, kb_id));"
    "CREATE INDEX kb_app_rag_kb ON kb_app_rag(kb_id);",

    /* 11: row-level security by tenant on the tenants' own data: keys, usage, models
     * (public ones readable by all), knowledge bases and their chunks.  A transaction
     * that store_set_tenant() tied to a tenant sees and writes only that tenant's rows;
     * one not tied (the scheduler, metering, platform views) sees all.  FORCE: the
     * tables' owner is fenced too. */
    "ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;"
    "CREATE POLICY tenant_fence ON api_keys USING (" ANY_TENANT " OR tenant_id = " THE_TENANT ")"
    " WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");"
    "ALTER TABLE usage_records ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE usage_records FORCE ROW LEVEL SECURITY;"
    "CREATE POLICY tenant_fence ON usage_records USING (" ANY_TENANT " OR tenant_id = " THE_TENANT ")"
    " WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");"
    "ALTER TABLE usage_hourly ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE usage_hourly FORCE ROW LEVEL SECURITY;"
    "CREATE POLICY tenant_fence ON usage_hourly USING (" ANY_TENANT " OR tenant_id = " THE_TENANT ")"
    " WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");"
    "ALTER TABLE kbs ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE kbs FORCE ROW LEVEL SECURITY;"
    "CREATE POLICY tenant_fence ON kbs USING (" ANY_TENANT " OR tenant_id = " THE_TENANT ")"
    " WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");"
    "ALTER TABLE kb_chunks ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE kb_chunks FORCE ROW LEVEL SECURITY;"
    "CREATE POLICY tenant_fence ON kb_chunks USING (" ANY_TENANT " OR tenant_id = " THE_TENANT ")"
    " WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");"
    "ALTER TABLE models ENABLE ROW LEVEL SECURITY;"
    "ALTER TABLE models FORCE ROW LEVEL SECURITY;"
    "CREATE POLICY tenant_fence ON models USING (" ANY_TENANT " OR tenant_id = " THE_TENANT
    " OR visibility = 'public') WITH CHECK (" ANY_TENANT " OR tenant_id = " THE_TENANT ");",

    /* 12: the gateways' per-minute rate windows, shared by every process on the store:
     * each writes its own counts (process = a random id per run) about once a second and
     * adds up the others' */
    "CREATE TABLE rate_counts ("
    "  scope TEXT COLLATE \"C\" NOT NULL,"                   /* k: a key, p: a project */
    "  id TEXT COLLATE \"C\" NOT NULL,"
    "  minute BIGINT NOT NULL,"               /* unix time / 60 */
    "  process TEXT COLLATE \"C\" NOT NULL,"
    "  requests BIGINT NOT NULL DEFAULT 0,"
    "  tokens BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (scope, id, minute, process));"
    "CREATE INDEX rate_counts_minute ON rate_counts(minute);",

    /* 13: failed logins, shared by every server on the store (auth/throttle.h); a
     * window's worth at most: each failure deletes those older than the window.  Also an
     * index on the chunks of one KB. */
    "CREATE TABLE login_failures ("
    "  kind TEXT COLLATE \"C\" NOT NULL CHECK (kind IN ('n','a')),"   /* n: a user name, a: an address */
    "  key TEXT COLLATE \"C\" NOT NULL,"
    "  at BIGINT NOT NULL);"
    "CREATE INDEX login_failures_key ON login_failures(kind, key, at);"
    "CREATE INDEX login_failures_at ON login_failures(at);"
    /* and the chunks of one KB, which listing KBs counts and deleting one removes */
    "CREATE INDEX kb_chunks_kb ON kb_chunks(kb_id);",

    /* 14: the tenant fence (migration 11) on more of the tenants' own rows: projects,
     * their quotas, open token reservations, billing mode, card-hour warnings */
    FENCE("projects") FENCE("quotas") FENCE("token_holds") FENCE("tenant_billing")
    FENCE("quota_warnings"),
    /* 15: identities have owners (a home: a tenant, or '' for the platform; node accounts
     * belong to their node alone), invitations into another tenant, join tokens bound to a
     * node name and a number of uses, signed audit checkpoints, clipped usage records */
    "ALTER TABLE users ADD COLUMN home_tenant_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    "ALTER TABLE users ADD COLUMN node_account BIGINT NOT NULL DEFAULT 0;"
    "UPDATE users SET node_account = 1 WHERE id IN (SELECT agent_user_id FROM nodes);"
    /* an existing user whose every binding lies in one tenant is homed there */
    "UPDATE users SET home_tenant_id = (SELECT MIN(b.tenant_id) FROM role_bindings b"
    "  WHERE b.user_id = users.id) WHERE node_account = 0"
    "  AND NOT EXISTS (SELECT 1 FROM role_bindings b WHERE b.user_id = users.id"
    "                  AND b.tenant_id IS NULL)"
    "  AND (SELECT COUNT(DISTINCT b.tenant_id) FROM role_bindings b"
    "       WHERE b.user_id = users.id) = 1;"
    "CREATE TABLE invitations ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"        /* the inviting tenant */
    "  project_id TEXT COLLATE \"C\" NOT NULL DEFAULT '',"                    /* '' = a tenant role */
    "  user_id TEXT COLLATE \"C\" NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  home_tenant_id TEXT COLLATE \"C\" NOT NULL,"                           /* the user's home, which decides */
    "  role TEXT COLLATE \"C\" NOT NULL,"
    "  invited_by TEXT COLLATE \"C\" NOT NULL,"
    "  state TEXT COLLATE \"C\" NOT NULL CHECK (state IN ('pending','accepted','declined','withdrawn','expired')),"
    "  created_at BIGINT NOT NULL,"
    "  expires_at BIGINT NOT NULL,"
    "  decided_by TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  decided_at BIGINT NOT NULL DEFAULT 0);"
    "CREATE INDEX invitations_home ON invitations(home_tenant_id, state);"
    "CREATE INDEX invitations_tenant ON invitations(tenant_id, state);"
    /* invitations are read by the inviting tenant and by the home: no tenant fence */
    "ALTER TABLE join_tokens ADD COLUMN node_name TEXT COLLATE \"C\" NOT NULL DEFAULT '';"  /* '' = any name */
    "ALTER TABLE join_tokens ADD COLUMN max_uses BIGINT NOT NULL DEFAULT 1;"
    "ALTER TABLE join_tokens ADD COLUMN used_by TEXT COLLATE \"C\" NOT NULL DEFAULT '[]';"  /* node names */
    "UPDATE join_tokens SET max_uses = GREATEST(uses, 1);"
    "CREATE TABLE audit_checkpoints ("
    "  seq BIGINT PRIMARY KEY,"          /* the audit seq of the chain head signed */
    "  head TEXT COLLATE \"C\" NOT NULL,"               /* that event's hash (hex) */
    "  count BIGINT NOT NULL,"           /* events in the chain up to it */
    "  at BIGINT NOT NULL,"              /* when signed */
    "  key_id TEXT COLLATE \"C\" NOT NULL,"             /* hex of the Ed25519 public key */
    "  signature TEXT COLLATE \"C\" NOT NULL);"         /* hex Ed25519 signature of the canonical text */
    /* approvals of user.create kept the new password in clear: drop those bodies (the pending
     * ones can no longer run, so they expire); new ones keep only its hash */
    "UPDATE approvals SET state = 'expired', reason = 'its stored request held a password'"
    "  WHERE operation = 'user.create' AND state = 'pending' AND body LIKE '%\"password\"%';"
    "UPDATE approvals SET body = '{}' WHERE operation = 'user.create'"
    "  AND body LIKE '%\"password\"%';"
    "ALTER TABLE usage_records ADD COLUMN clipped BIGINT NOT NULL DEFAULT 0;"
    /* records with clipped usage, per hour (/metrics); detail of an endpoint check for ops */
    "ALTER TABLE usage_hourly ADD COLUMN clipped BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE endpoints ADD COLUMN last_error_detail TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    /* the TCP ports a running job's own processes listen on, as its node reports them
     * ("p1,p2,...": a job endpoint routes only to one of them) */
    "ALTER TABLE jobs ADD COLUMN listen_ports TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    /* requests of one API key in flight at once (0 = no limit) */
    "ALTER TABLE api_keys ADD COLUMN max_parallel BIGINT NOT NULL DEFAULT 0;"
    /* the gateway's cache epoch (src/gateway/cache.c): every change to what a gateway request
     * reads (keys, their owners and roles, quotas, models, endpoints, jobs serving them) bumps
     * it in the same transaction; each gateway process reads it about once a second */
    "CREATE TABLE gw_epoch (id BIGINT PRIMARY KEY, n BIGINT NOT NULL);"
    "INSERT INTO gw_epoch (id, n) VALUES (1, 0);"
    "CREATE FUNCTION gw_epoch_bump() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; RETURN NULL; END $$;"
    "CREATE TRIGGER gw_epoch_api_keys_i AFTER INSERT ON api_keys FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_api_keys_u AFTER UPDATE ON api_keys FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_api_keys_d AFTER DELETE ON api_keys FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_users_u AFTER UPDATE ON users FOR EACH ROW WHEN (OLD.disabled IS DISTINCT FROM NEW.disabled OR OLD.name IS DISTINCT FROM NEW.name)"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_users_d AFTER DELETE ON users FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_role_bindings_i AFTER INSERT ON role_bindings FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_role_bindings_u AFTER UPDATE ON role_bindings FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_role_bindings_d AFTER DELETE ON role_bindings FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_tenants_u AFTER UPDATE ON tenants FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_tenants_d AFTER DELETE ON tenants FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_projects_u AFTER UPDATE ON projects FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_projects_d AFTER DELETE ON projects FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_apps_i AFTER INSERT ON apps FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_apps_u AFTER UPDATE ON apps FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_apps_d AFTER DELETE ON apps FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_quotas_i AFTER INSERT ON quotas FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_quotas_u AFTER UPDATE ON quotas FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_quotas_d AFTER DELETE ON quotas FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_models_i AFTER INSERT ON models FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_models_u AFTER UPDATE ON models FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_models_d AFTER DELETE ON models FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_endpoints_i AFTER INSERT ON endpoints FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_endpoints_u AFTER UPDATE ON endpoints FOR EACH ROW WHEN (OLD.url IS DISTINCT FROM NEW.url OR OLD.port IS DISTINCT FROM NEW.port OR OLD.job_id IS DISTINCT FROM NEW.job_id OR OLD.upstream_model IS DISTINCT FROM NEW.upstream_model OR OLD.accelerator IS DISTINCT FROM NEW.accelerator OR OLD.state IS DISTINCT FROM NEW.state OR OLD.model_id IS DISTINCT FROM NEW.model_id)"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_endpoints_d AFTER DELETE ON endpoints FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_jobs_u AFTER UPDATE ON jobs FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_bindings_i AFTER INSERT ON bindings FOR EACH STATEMENT"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    "CREATE TRIGGER gw_epoch_bindings_u AFTER UPDATE ON bindings FOR EACH ROW WHEN (OLD.end_us IS DISTINCT FROM NEW.end_us OR OLD.node IS DISTINCT FROM NEW.node)"
    " EXECUTE PROCEDURE gw_epoch_bump();"
    /* an admitted job whose victims a round stopped: what they freed is its own (sched.h) */
    "ALTER TABLE jobs ADD COLUMN preempt_credit BIGINT NOT NULL DEFAULT 0;",

    /* 16: accelerators of more than one vendor (docs/inventory.md "Vendors"): each card's
     * vendor, driver and runtimes (its software stack); a class's accepted vendors, driver
     * minimum per vendor and stack rules; the stack a job's image needs; the vendor on each
     * binding (metering and reports split by it).  Cards and bindings before it were NVIDIA's. */
    "ALTER TABLE gpus ADD COLUMN vendor TEXT COLLATE \"C\" NOT NULL DEFAULT 'nvidia';"
    "ALTER TABLE gpus ADD COLUMN driver_version TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    "ALTER TABLE gpus ADD COLUMN stack TEXT NOT NULL DEFAULT '{}';"       /* {"cuda":"12.4"} */
    "UPDATE gpus SET driver_version = (SELECT n.driver_version FROM nodes n WHERE n.id = gpus.node_id);"
    "ALTER TABLE classes ADD COLUMN vendors TEXT NOT NULL DEFAULT '[]';"  /* [] = any vendor */
    "ALTER TABLE classes ADD COLUMN min_drivers TEXT NOT NULL DEFAULT '{}';" /* vendor -> min */
    "ALTER TABLE classes ADD COLUMN stack TEXT NOT NULL DEFAULT '{}';"    /* runtime -> min */
    "UPDATE classes SET min_drivers = jsonb_build_object('nvidia', min_driver)::text WHERE min_driver <> '';"
    "ALTER TABLE jobs ADD COLUMN stack TEXT NOT NULL DEFAULT '';"         /* "rocm>=6.1" */
    "ALTER TABLE bindings ADD COLUMN vendor TEXT COLLATE \"C\" NOT NULL DEFAULT 'nvidia';"
    /* the gateway's per-endpoint concurrency (per process) and the line of requests that
     * may wait for it (docs/gateway.md "Endpoints under load") */
    "ALTER TABLE endpoints ADD COLUMN max_concurrency BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE endpoints ADD COLUMN max_queue BIGINT NOT NULL DEFAULT 100;",
    /* 17: only jobs that serve a model endpoint invalidate the gateway's read cache: every
     * job's start and end bumped gw_epoch, so a busy scheduler dropped every gateway
     * process's cache about once a second (and this server's after each commit).  A
     * trigger's WHEN may not hold a subquery here: the functions look. */
    "CREATE INDEX endpoints_job ON endpoints(job_id);"
    "CREATE FUNCTION gw_epoch_bump_job() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN IF EXISTS (SELECT 1 FROM endpoints WHERE job_id = NEW.id) THEN"
    " UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END IF; RETURN NULL; END $$;"
    "CREATE FUNCTION gw_epoch_bump_binding() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN IF EXISTS (SELECT 1 FROM endpoints WHERE job_id = NEW.job_id) THEN"
    " UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END IF; RETURN NULL; END $$;"
    "DROP TRIGGER gw_epoch_jobs_u ON jobs;"
    "CREATE TRIGGER gw_epoch_jobs_u AFTER UPDATE ON jobs FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)"
    " EXECUTE PROCEDURE gw_epoch_bump_job();"
    "DROP TRIGGER gw_epoch_bindings_i ON bindings;"
    "CREATE TRIGGER gw_epoch_bindings_i AFTER INSERT ON bindings FOR EACH ROW"
    " EXECUTE PROCEDURE gw_epoch_bump_binding();"
    "DROP TRIGGER gw_epoch_bindings_u ON bindings;"
    "CREATE TRIGGER gw_epoch_bindings_u AFTER UPDATE ON bindings FOR EACH ROW WHEN (OLD.end_us IS DISTINCT FROM NEW.end_us OR OLD.node IS DISTINCT FROM NEW.node)"
    " EXECUTE PROCEDURE gw_epoch_bump_binding();",
    /* 18: the scheduler's write phase looks up the open bindings of a node's cards (round.c) */
    "CREATE INDEX bindings_open_gpu ON bindings(gpu_uuid) WHERE end_us IS NULL;",
    /* 19: who set a user's current password ('' nobody but itself: its own change, the
     * bootstrap); an approver may not be one whose password the requester set, nor the
     * reverse (docs/security.md "Who administers the administrators") */
    "ALTER TABLE users ADD COLUMN password_set_by TEXT COLLATE \"C\" NOT NULL DEFAULT '';",
    /* 20: preemptibility is policy: who may opt a job out of preemption is the priority
     * class's (non_preemptible_roles), and a job remembers that it opted out, so a class
     * change re-decides it (docs/scheduling.md "Priority classes") */
    "ALTER TABLE priority_classes ADD COLUMN non_preemptible_roles TEXT NOT NULL DEFAULT '[\"tenant-admin\"]';"
    "ALTER TABLE jobs ADD COLUMN opted_out BIGINT NOT NULL DEFAULT 0;"
    "UPDATE jobs SET opted_out = 1 WHERE preemptible = 0 AND priority_class IN (SELECT name FROM priority_classes WHERE preemptible <> 0);",
    /* 21 (issue 33 item 2): a job's listening ports are part of its endpoints' routes: when
     * they change (its node reports a port closed or opened), the gateway's read caches and
     * port sets are dropped at once, as for a change of its state (migration 17, whose
     * function looks for the job's endpoints) - a route kept past its job's socket could
     * reach whatever listens there next (docs/gateway.md "Job endpoints") */
    "CREATE TRIGGER gw_epoch_jobs_ports AFTER UPDATE ON jobs FOR EACH ROW"
    " WHEN (OLD.listen_ports IS DISTINCT FROM NEW.listen_ports)"
    " EXECUTE PROCEDURE gw_epoch_bump_job();",
    /* 22 (issue 37 item 4): job dependencies, `job submit --after JOB[:ok|:any|:notok]`: the
     * dependent, the job it waits for (same project), the kind; met or not is read from the
     * other job's state (src/sched/deps.c) */
    "CREATE TABLE job_deps ("
    "  job_id TEXT COLLATE \"C\" NOT NULL REFERENCES jobs(id),"
    "  dep_id TEXT COLLATE \"C\" NOT NULL REFERENCES jobs(id),"
    "  kind TEXT COLLATE \"C\" NOT NULL CHECK (kind IN ('ok','any','notok')),"
    "  PRIMARY KEY (job_id, dep_id));"
    "CREATE INDEX job_deps_dep ON job_deps(dep_id);",
    /* 23 (issue 37 item 3): job arrays, `job submit --array 0-999%50`: the array (its range,
     * how many of its tasks may hold cards at once, 0 no cap) and, on each task (a job), its
     * array and index (src/sched/arrays.c) */
    "CREATE TABLE job_arrays ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT COLLATE \"C\" NOT NULL REFERENCES projects(id),"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  first_index BIGINT NOT NULL,"
    "  last_index BIGINT NOT NULL,"
    "  max_running BIGINT NOT NULL DEFAULT 0,"
    "  submitter TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL);"
    "ALTER TABLE jobs ADD COLUMN array_id TEXT COLLATE \"C\" REFERENCES job_arrays(id);"
    "ALTER TABLE jobs ADD COLUMN array_index BIGINT;"
    "CREATE INDEX jobs_array ON jobs(array_id, state, array_index);",
    /* 24 (issue 34): an invitation keeps its project's name, so that the home tenant's
     * routes, whose transaction is tied to the home (PostgreSQL's row fence), show it without
     * reading the inviting tenant's projects */
    "ALTER TABLE invitations ADD COLUMN project_name TEXT NOT NULL DEFAULT '';"
    "UPDATE invitations SET project_name = COALESCE((SELECT p.name FROM projects p"
    " WHERE p.id = invitations.project_id), '') WHERE project_id <> '';",
    /* 25 (issue 42, item 3): an alarm resolves itself when its condition clears: what it is
     * about (subject: an interference's job and kind; '' for a node's or GPU's health, which
     * its kind, node and GPU say), when it cleared and why; one that needs a person (a GPU's
     * identity) is only acknowledged */
    "ALTER TABLE alarms ADD COLUMN subject TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE alarms ADD COLUMN resolved_at BIGINT;"
    "ALTER TABLE alarms ADD COLUMN resolution TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX alarms_open ON alarms(kind, node, gpu_uuid) WHERE resolved_at IS NULL;",
    /* 26 (issue 36): advance reservations and maintenance windows
     * (src/sched/reservations.c, the rules in reserve.h): GPUs held from start to end, once or
     * recurring up to `until`, for a tenant (and maybe one of its projects) or for nobody
     * (maintenance, tenant_id NULL): named nodes, or `count` cards of a class in a pool.  A
     * deleted one keeps its row (deleted_at) for the report's reserved-unused time.  A job
     * names the reservation it runs in; a node drained or cordoned by a maintenance window
     * says which (maint_reservation, '' none), so the window gives back only what it took */
    "CREATE TABLE reservations ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  name TEXT COLLATE \"C\" NOT NULL,"
    "  tenant_id TEXT COLLATE \"C\" REFERENCES tenants(id),"
    "  project_id TEXT COLLATE \"C\" REFERENCES projects(id),"
    "  pool TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  class TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  count BIGINT NOT NULL DEFAULT 0,"
    "  nodes TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  start_us BIGINT NOT NULL,"
    "  end_us BIGINT NOT NULL,"
    "  recurrence TEXT COLLATE \"C\" NOT NULL DEFAULT 'none'"
    "   CHECK (recurrence IN ('none','daily','weekly','weekdays','every')),"
    "  weekdays BIGINT NOT NULL DEFAULT 0,"
    "  every_s BIGINT NOT NULL DEFAULT 0,"
    "  until_us BIGINT NOT NULL DEFAULT 0,"
    "  end_policy TEXT COLLATE \"C\" NOT NULL DEFAULT 'stop' CHECK (end_policy IN ('stop','run')),"
    "  drain_before_s BIGINT NOT NULL DEFAULT 0,"
    "  work_orders TEXT COLLATE \"C\" NOT NULL DEFAULT '[]',"
    "  description TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
    "  created_by TEXT COLLATE \"C\" NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  deleted_at BIGINT NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX reservations_name ON reservations(name) WHERE deleted_at = 0;"
    "CREATE INDEX reservations_tenant ON reservations(tenant_id);"
    "ALTER TABLE jobs ADD COLUMN reservation_id TEXT COLLATE \"C\" REFERENCES reservations(id);"
    "CREATE INDEX jobs_reservation ON jobs(reservation_id, state);"
    "ALTER TABLE nodes ADD COLUMN maint_reservation TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    /* a tenant's reservations are its rows: a transaction tied to it sees only them (a
     * maintenance window, tenant_id NULL, is no tenant's) */
    FENCE("reservations"),
    /* 27 (issue 37 items 1-2): jobs that span nodes, `job submit --nodes N --units-per-node K`
     * (src/sched/sched.c place_gang): on the job, how many nodes it is placed on all or
     * nothing (0: its units go wherever each fits, as before) and the port its rank 0's node
     * reserved for the rendezvous (MASTER_PORT; NULL until that node reports it); on a
     * binding, when its node's rank ended (exit 0) before rank 0 (it is not started again);
     * on a node, the labels ops set (`node label`) and the topology the round groups nodes
     * by (`rack`, `switch`: ops' labels over the agent's) */
    "ALTER TABLE jobs ADD COLUMN nodes BIGINT NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN master_port BIGINT;"
    "ALTER TABLE bindings ADD COLUMN rank_done_us BIGINT;"
    "ALTER TABLE nodes ADD COLUMN ops_labels TEXT COLLATE \"C\" NOT NULL DEFAULT '{}';"
    "ALTER TABLE nodes ADD COLUMN topo_rack TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    "ALTER TABLE nodes ADD COLUMN topo_switch TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    "UPDATE nodes SET topo_rack = CASE WHEN jsonb_typeof((labels::jsonb)->'rack') = 'string'"
    " THEN (labels::jsonb)->>'rack' ELSE '' END,"
    " topo_switch = CASE WHEN jsonb_typeof((labels::jsonb)->'switch') = 'string'"
    " THEN (labels::jsonb)->>'switch' ELSE '' END;",
    /* 28 (issue 35, item 3): fair use of idle capacity - each tenant's recent borrowing
     * (milli-GPU-seconds above its guarantee, decayed with the scheduler policy's half-life
     * to at_us) and what it borrowed from then on (milli), written by the scheduler's round
     * (src/sched/round.c) when what a tenant borrows changes, read back decayed to now */
    "CREATE TABLE share_usage ("
    "  tenant_id TEXT COLLATE \"C\" PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,"
    "  recent BIGINT NOT NULL DEFAULT 0,"
    "  borrowed BIGINT NOT NULL DEFAULT 0,"
    "  at_us BIGINT NOT NULL);"
    FENCE("share_usage"),
    /* 29 (issue 38, item 1): the cluster in the scheduler's memory - what a round reads of
     * nodes, cards, slices, pools, classes, tenants, projects and the health policy is kept
     * by the leader between rounds (src/sched/round.c) and read again only when this version
     * moved: every change to those rows bumps it in the same transaction (an UPDATE only when
     * a column the round reads changed: heartbeats and samples leave it) */
    "CREATE TABLE cluster_version (id BIGINT PRIMARY KEY, v BIGINT NOT NULL);"
    "INSERT INTO cluster_version (id, v) VALUES (1, 0);"
    "CREATE FUNCTION cluster_bump() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; RETURN NULL; END $$;"
    "CREATE TRIGGER cluster_nodes_i AFTER INSERT ON nodes FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_nodes_d AFTER DELETE ON nodes FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_nodes_u AFTER UPDATE ON nodes FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.cpus IS DISTINCT FROM NEW.cpus OR OLD.memory_gib IS DISTINCT FROM NEW.memory_gib OR OLD.pool IS DISTINCT FROM NEW.pool OR OLD.state IS DISTINCT FROM NEW.state OR OLD.admin_state IS DISTINCT FROM NEW.admin_state OR OLD.topo_rack IS DISTINCT FROM NEW.topo_rack OR OLD.topo_switch IS DISTINCT FROM NEW.topo_switch)"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_gpus_i AFTER INSERT ON gpus FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_gpus_d AFTER DELETE ON gpus FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_gpus_u AFTER UPDATE ON gpus FOR EACH ROW WHEN (OLD.uuid IS DISTINCT FROM NEW.uuid OR OLD.node_id IS DISTINCT FROM NEW.node_id OR OLD.idx IS DISTINCT FROM NEW.idx OR OLD.model IS DISTINCT FROM NEW.model OR OLD.memory_mib IS DISTINCT FROM NEW.memory_mib OR OLD.mode IS DISTINCT FROM NEW.mode OR OLD.health IS DISTINCT FROM NEW.health OR OLD.admin_state IS DISTINCT FROM NEW.admin_state OR OLD.numa IS DISTINCT FROM NEW.numa OR OLD.topology IS DISTINCT FROM NEW.topology OR OLD.driver_version IS DISTINCT FROM NEW.driver_version OR OLD.compute_cap IS DISTINCT FROM NEW.compute_cap OR OLD.vendor IS DISTINCT FROM NEW.vendor OR OLD.stack IS DISTINCT FROM NEW.stack)"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_slices_i AFTER INSERT ON slices FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_slices_d AFTER DELETE ON slices FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_slices_u AFTER UPDATE ON slices FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_pools_i AFTER INSERT ON pools FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_pools_d AFTER DELETE ON pools FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_pools_u AFTER UPDATE ON pools FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_classes_i AFTER INSERT ON classes FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_classes_d AFTER DELETE ON classes FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_classes_u AFTER UPDATE ON classes FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_tenants_i AFTER INSERT ON tenants FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_tenants_d AFTER DELETE ON tenants FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_tenants_u AFTER UPDATE ON tenants FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_projects_i AFTER INSERT ON projects FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_projects_d AFTER DELETE ON projects FOR EACH STATEMENT"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_projects_u AFTER UPDATE ON projects FOR EACH ROW WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.name IS DISTINCT FROM NEW.name OR OLD.class IS DISTINCT FROM NEW.class)"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_health_policy_i AFTER INSERT ON security_policy FOR EACH ROW WHEN (NEW.key = 'health_policy')"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_health_policy_d AFTER DELETE ON security_policy FOR EACH ROW WHEN (OLD.key = 'health_policy')"
    " EXECUTE PROCEDURE cluster_bump();"
    "CREATE TRIGGER cluster_health_policy_u AFTER UPDATE ON security_policy FOR EACH ROW WHEN (NEW.key = 'health_policy' OR OLD.key = 'health_policy')"
    " EXECUTE PROCEDURE cluster_bump();",
    /* 30 (issue 38, item 1): the queue in the scheduler's memory - the leader keeps the live
     * jobs as a round reads them and reads only what changed since (src/sched/round.c): each
     * insert of a job, and each update of a column the round reads, stamps the row's chg with
     * the next job_chg.v in the same transaction (on PostgreSQL the job_chg row's lock orders
     * the stamps as the commits) */
    "ALTER TABLE jobs ADD COLUMN chg BIGINT NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_chg ON jobs(chg);"
    "CREATE TABLE job_chg (id BIGINT PRIMARY KEY, v BIGINT NOT NULL);"
    "INSERT INTO job_chg (id, v) VALUES (1, 0);"
    "CREATE FUNCTION jobs_chg_stamp() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN UPDATE job_chg SET v = v + 1 WHERE id = 1 RETURNING v INTO NEW.chg;"
    " RETURN NEW; END $$;"
    "CREATE TRIGGER jobs_chg_i BEFORE INSERT ON jobs FOR EACH ROW"
    " EXECUTE PROCEDURE jobs_chg_stamp();"
    "CREATE TRIGGER jobs_chg_u BEFORE UPDATE ON jobs FOR EACH ROW WHEN ("
    "OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.class IS DISTINCT FROM NEW.class OR OLD.units IS DISTINCT FROM NEW.units OR OLD.priority IS DISTINCT FROM NEW.priority OR OLD.preemptible IS DISTINCT FROM NEW.preemptible OR OLD.may_preempt IS DISTINCT FROM NEW.may_preempt OR OLD.queued_at IS DISTINCT FROM NEW.queued_at OR OLD.started_at IS DISTINCT FROM NEW.started_at OR OLD.state IS DISTINCT FROM NEW.state OR OLD.recovery IS DISTINCT FROM NEW.recovery OR OLD.preempt_credit IS DISTINCT FROM NEW.preempt_credit OR OLD.reason IS DISTINCT FROM NEW.reason OR OLD.stack IS DISTINCT FROM NEW.stack OR OLD.array_id IS DISTINCT FROM NEW.array_id OR OLD.reservation_id IS DISTINCT FROM NEW.reservation_id OR OLD.time_limit_s IS DISTINCT FROM NEW.time_limit_s OR OLD.nodes IS DISTINCT FROM NEW.nodes)"
    " EXECUTE PROCEDURE jobs_chg_stamp();",
    /* 31 (issue 35, item 3): fair use's half-life per pool - a pool's borrow_half_life_s
     * (NULL: the scheduler policy's), and each tenant's recent borrowing kept per pool, each
     * row decaying with its pool's half-life (pool '': what was recorded before, with the
     * policy's) */
    "ALTER TABLE pools ADD COLUMN borrow_half_life_s BIGINT;"
    "ALTER TABLE share_usage ADD COLUMN pool TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
    "ALTER TABLE share_usage DROP CONSTRAINT share_usage_pkey;"
    "ALTER TABLE share_usage ADD PRIMARY KEY (tenant_id, pool);",
    /* 32 (issue 39, item 4): every move of gw_epoch is announced on the channel
     * gpupool_gw_epoch (delivered at commit), so each gateway's read cache drops what changed
     * at once instead of at its next poll (src/gateway/cache.c, store_listen) */
    "CREATE FUNCTION gw_epoch_notify() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM pg_notify('gpupool_gw_epoch', ''); RETURN NULL; END $$;"
    "CREATE TRIGGER gw_epoch_notify AFTER UPDATE ON gw_epoch FOR EACH ROW"
    " EXECUTE PROCEDURE gw_epoch_notify();",
    /* 33 (issue 35, item 1): a guarantee per pool over classes that span pools - what the
     * scheduler's admission gave a job that waits admitted (sched.h step 6d: a pool's name,
     * '*' the pools without a guarantee of its tenant's own; NULL nothing), read by the
     * round like every column it reads, so the change stamp covers it too */
    "ALTER TABLE jobs ADD COLUMN guarantee_pool TEXT;"
    "DROP TRIGGER jobs_chg_u ON jobs;"
    "CREATE TRIGGER jobs_chg_u BEFORE UPDATE ON jobs FOR EACH ROW WHEN ("
    "OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.class IS DISTINCT FROM NEW.class OR OLD.units IS DISTINCT FROM NEW.units OR OLD.priority IS DISTINCT FROM NEW.priority OR OLD.preemptible IS DISTINCT FROM NEW.preemptible OR OLD.may_preempt IS DISTINCT FROM NEW.may_preempt OR OLD.queued_at IS DISTINCT FROM NEW.queued_at OR OLD.started_at IS DISTINCT FROM NEW.started_at OR OLD.state IS DISTINCT FROM NEW.state OR OLD.recovery IS DISTINCT FROM NEW.recovery OR OLD.preempt_credit IS DISTINCT FROM NEW.preempt_credit OR OLD.reason IS DISTINCT FROM NEW.reason OR OLD.stack IS DISTINCT FROM NEW.stack OR OLD.array_id IS DISTINCT FROM NEW.array_id OR OLD.reservation_id IS DISTINCT FROM NEW.reservation_id OR OLD.time_limit_s IS DISTINCT FROM NEW.time_limit_s OR OLD.nodes IS DISTINCT FROM NEW.nodes OR OLD.guarantee_pool IS DISTINCT FROM NEW.guarantee_pool)"
    " EXECUTE PROCEDURE jobs_chg_stamp();",
};

int schema__pg_count(void) { return (int)(sizeof migrations / sizeof migrations[0]); }

const char *schema__pg_sql(int version) {
    if (version < 1 || version > schema__pg_count()) return NULL;
    return migrations[version - 1];
}
