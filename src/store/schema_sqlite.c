/*
 * schema_sqlite.c - the SQLite schema, as an ordered list of migrations.
 *
 * Invariant: migrations are append-only.  Never edit one that has shipped;
 * add the next version instead.  Version N is migrations[N-1].  The
 * PostgreSQL schema (when added) keeps the same version numbers side by side.
 */
#include "schema_int.h"

#include <stddef.h>

static const char *const migrations[] = {
    /* 1: identities, tenancy, audit chain */
    "CREATE TABLE users ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  kind TEXT NOT NULL DEFAULT 'user' CHECK (kind IN ('user','service')),"
    "  password_hash TEXT,"
    "  disabled INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE tokens ("
    "  id TEXT PRIMARY KEY,"
    "  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  hash TEXT NOT NULL UNIQUE,"
    "  label TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER,"
    "  revoked_at INTEGER);"
    "CREATE INDEX tokens_user ON tokens(user_id);"
    "CREATE TABLE tenants ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  display_name TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE projects ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  name TEXT NOT NULL,"
    "  class TEXT NOT NULL CHECK (class IN ('production','development','research')),"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE TABLE role_bindings ("
    "  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  role TEXT NOT NULL,"
    "  scope TEXT NOT NULL CHECK (scope IN ('global','tenant','project','vendor')),"
    "  tenant_id TEXT REFERENCES tenants(id),"
    "  project_id TEXT REFERENCES projects(id),"
    "  expires_at INTEGER,"
    "  created_at INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX role_bindings_one ON role_bindings"
    "  (user_id, role, scope, COALESCE(tenant_id,''), COALESCE(project_id,''));"
    "CREATE TABLE audit ("
    "  seq INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE,"
    "  ts_us INTEGER NOT NULL,"
    "  request_id TEXT NOT NULL DEFAULT '',"
    "  actor TEXT NOT NULL,"
    "  on_behalf TEXT NOT NULL DEFAULT '',"
    "  source TEXT NOT NULL DEFAULT '',"
    "  action TEXT NOT NULL,"
    "  target_type TEXT NOT NULL DEFAULT '',"
    "  target_id TEXT NOT NULL DEFAULT '',"
    "  tenant TEXT NOT NULL DEFAULT '',"
    "  project TEXT NOT NULL DEFAULT '',"
    "  result TEXT NOT NULL CHECK (result IN ('ok','denied','error')),"
    "  status INTEGER NOT NULL DEFAULT 0,"
    "  summary TEXT NOT NULL DEFAULT '',"
    "  prev_hash TEXT NOT NULL,"
    "  hash TEXT NOT NULL);"
    "CREATE INDEX audit_tenant ON audit(tenant, seq);"
    "CREATE TABLE audit_head ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  seq INTEGER NOT NULL,"
    "  hash TEXT NOT NULL);"
    "INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '');",

    /* 2: security policy, approvals of sensitive operations, vendor access */
    "CREATE TABLE security_policy ("
    "  key TEXT PRIMARY KEY,"
    "  value TEXT NOT NULL);"
    "INSERT INTO security_policy VALUES ('sensitive_operations',"
    "  '[\"tenant.quota.raise\",\"member.grant_global\",\"vendor.create\","
    "\"priority_class.change\",\"audit.export\",\"policy.change\"]');"
    "INSERT INTO security_policy VALUES ('login_token_ttl_seconds', '43200');"
    "INSERT INTO security_policy VALUES ('max_token_ttl_seconds', '7776000');"
    "INSERT INTO security_policy VALUES ('approval_ttl_seconds', '86400');"
    "CREATE TABLE approvals ("
    "  id TEXT PRIMARY KEY,"
    "  operation TEXT NOT NULL,"
    "  requester_id TEXT NOT NULL REFERENCES users(id),"
    "  tenant TEXT NOT NULL DEFAULT '',"
    "  method TEXT NOT NULL,"
    "  path TEXT NOT NULL,"
    "  query TEXT NOT NULL DEFAULT '[]',"
    "  body TEXT NOT NULL DEFAULT '',"
    "  summary TEXT NOT NULL DEFAULT '{}',"
    "  state TEXT NOT NULL CHECK (state IN ('pending','approved','rejected','expired','failed')),"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  decided_by TEXT REFERENCES users(id),"
    "  decided_at INTEGER,"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  result_status INTEGER,"
    "  result TEXT);"
    "CREATE INDEX approvals_state ON approvals(state, created_at);"
    "CREATE TABLE vendor_grants ("
    "  id TEXT PRIMARY KEY,"
    "  user_id TEXT NOT NULL REFERENCES users(id),"
    "  nodes TEXT NOT NULL DEFAULT '[]',"
    "  work_orders TEXT NOT NULL DEFAULT '[]',"
    "  created_by TEXT NOT NULL REFERENCES users(id),"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  revoked_at INTEGER);"
    "CREATE INDEX vendor_grants_user ON vendor_grants(user_id);"
    "ALTER TABLE role_bindings ADD COLUMN granted_by TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE tokens ADD COLUMN last_used_at INTEGER;",

    /* 3: GPU inventory: nodes, GPUs and slices, health, pools, classes, work orders */
    "CREATE TABLE join_tokens ("
    "  id TEXT PRIMARY KEY,"
    "  hash TEXT NOT NULL UNIQUE,"
    "  created_by TEXT NOT NULL REFERENCES users(id),"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  revoked_at INTEGER,"
    "  uses INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE pools ("
    "  name TEXT PRIMARY KEY,"
    "  description TEXT NOT NULL DEFAULT '',"
    "  tenants TEXT NOT NULL DEFAULT '[]',"          /* [] = every tenant */
    "  project_classes TEXT NOT NULL DEFAULT '[]',"  /* [] = every class */
    "  created_at INTEGER NOT NULL);"
    "INSERT INTO pools (name, description, created_at) VALUES ('default', 'every node starts here', 0);"
    "CREATE TABLE nodes ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  hostname TEXT NOT NULL DEFAULT '',"
    "  cpus INTEGER NOT NULL DEFAULT 0,"
    "  memory_gib INTEGER NOT NULL DEFAULT 0,"
    "  labels TEXT NOT NULL DEFAULT '{}',"
    "  pool TEXT NOT NULL DEFAULT 'default' REFERENCES pools(name),"
    "  driver_version TEXT NOT NULL DEFAULT '',"
    "  source TEXT NOT NULL DEFAULT 'nvml',"
    "  state TEXT NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','unreachable')),"
    "  admin_state TEXT NOT NULL DEFAULT 'none' CHECK (admin_state IN ('none','cordoned','draining')),"
    "  agent_user_id TEXT NOT NULL REFERENCES users(id),"
    "  registered_at INTEGER NOT NULL,"
    "  last_heartbeat INTEGER NOT NULL);"
    "CREATE TABLE gpus ("
    "  id TEXT PRIMARY KEY,"
    "  uuid TEXT NOT NULL UNIQUE,"
    "  node_id TEXT NOT NULL REFERENCES nodes(id),"
    "  idx INTEGER NOT NULL,"
    "  model TEXT NOT NULL,"
    "  memory_mib INTEGER NOT NULL,"
    "  pci_bus TEXT NOT NULL DEFAULT '',"
    "  numa INTEGER NOT NULL DEFAULT -1,"
    "  compute_cap TEXT NOT NULL DEFAULT '',"
    "  mig_capable INTEGER NOT NULL DEFAULT 0,"
    "  mode TEXT NOT NULL DEFAULT 'whole' CHECK (mode IN ('whole','mig','shared')),"
    "  health TEXT NOT NULL DEFAULT 'healthy' CHECK (health IN ('healthy','degraded','failed')),"
    "  health_cause TEXT NOT NULL DEFAULT '',"
    "  admin_state TEXT NOT NULL DEFAULT 'none' CHECK (admin_state IN ('none','cordoned','draining')),"
    "  signals TEXT NOT NULL DEFAULT '{}',"
    "  topology TEXT NOT NULL DEFAULT '{}',"
    "  updated_at INTEGER NOT NULL);"
    "CREATE INDEX gpus_node ON gpus(node_id, idx);"
    "CREATE TABLE slices ("
    "  uuid TEXT PRIMARY KEY,"
    "  gpu_id TEXT NOT NULL REFERENCES gpus(id) ON DELETE CASCADE,"
    "  profile TEXT NOT NULL,"
    "  memory_mib INTEGER NOT NULL,"
    "  idx INTEGER NOT NULL);"
    "CREATE TABLE health_events ("
    "  id TEXT PRIMARY KEY,"
    "  at INTEGER NOT NULL,"
    "  node TEXT NOT NULL,"
    "  gpu_uuid TEXT NOT NULL DEFAULT '',"
    "  kind TEXT NOT NULL,"            /* health | admin | node */
    "  from_state TEXT NOT NULL,"
    "  to_state TEXT NOT NULL,"
    "  cause TEXT NOT NULL,"
    "  actor TEXT NOT NULL DEFAULT 'system');"
    "CREATE INDEX health_events_gpu ON health_events(gpu_uuid, at);"
    "CREATE INDEX health_events_node ON health_events(node, at);"
    "CREATE TABLE alarms ("
    "  id TEXT PRIMARY KEY,"
    "  at INTEGER NOT NULL,"
    "  severity TEXT NOT NULL CHECK (severity IN ('info','warning','critical')),"
    "  kind TEXT NOT NULL,"
    "  node TEXT NOT NULL DEFAULT '',"
    "  gpu_uuid TEXT NOT NULL DEFAULT '',"
    "  message TEXT NOT NULL,"
    "  tenants TEXT NOT NULL DEFAULT '[]',"  /* tenants whose work was on it: they see it */
    "  acked_by TEXT,"
    "  acked_at INTEGER);"
    "CREATE INDEX alarms_at ON alarms(at);"
    "CREATE TABLE classes ("
    "  name TEXT PRIMARY KEY,"
    "  form TEXT NOT NULL,"
    "  gpus INTEGER NOT NULL,"
    "  cpus INTEGER NOT NULL,"
    "  memory_gib INTEGER NOT NULL,"
    "  gpu_models TEXT NOT NULL,"
    "  min_driver TEXT NOT NULL DEFAULT '',"
    "  min_compute_cap TEXT NOT NULL DEFAULT '',"
    "  topology TEXT NOT NULL DEFAULT 'any' CHECK (topology IN ('any','nvlink','same-numa')),"
    "  pool TEXT REFERENCES pools(name),"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE work_orders ("
    "  id TEXT PRIMARY KEY,"
    "  node TEXT NOT NULL,"
    "  gpu_uuid TEXT NOT NULL DEFAULT '',"
    "  title TEXT NOT NULL,"
    "  description TEXT NOT NULL DEFAULT '',"
    "  state TEXT NOT NULL CHECK (state IN ('open','in_progress','resolved')),"
    "  assignee TEXT NOT NULL DEFAULT '',"
    "  created_by TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL);"
    "CREATE TABLE work_order_comments ("
    "  id TEXT PRIMARY KEY,"
    "  work_order_id TEXT NOT NULL REFERENCES work_orders(id),"
    "  author TEXT NOT NULL,"
    "  body TEXT NOT NULL,"
    "  at INTEGER NOT NULL);"
    "INSERT INTO security_policy VALUES ('health_policy', '');",

    /* 4: quotas, priority classes, jobs and the binding timeline */
    "CREATE TABLE quotas ("
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT NOT NULL DEFAULT '',"  /* '' = the tenant's own ceiling */
    "  spec TEXT NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY (tenant_id, project_id));"
    "CREATE TABLE priority_classes ("
    "  name TEXT PRIMARY KEY,"
    "  value INTEGER NOT NULL,"
    "  preemptible INTEGER NOT NULL,"
    "  may_preempt INTEGER NOT NULL,"
    "  allowed_project_classes TEXT NOT NULL DEFAULT '[]',"
    "  allowed_roles TEXT NOT NULL DEFAULT '[]',"
    "  description TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL);"
    "INSERT INTO priority_classes (name, value, preemptible, may_preempt, description, created_at)"
    "  VALUES ('normal', 100, 1, 0, 'default: preemptible, preempts nobody', 0);"
    "CREATE TABLE jobs ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT NOT NULL REFERENCES projects(id),"
    "  name TEXT NOT NULL,"
    "  class TEXT NOT NULL,"
    "  units INTEGER NOT NULL,"
    "  priority_class TEXT NOT NULL,"
    "  priority INTEGER NOT NULL,"
    "  preemptible INTEGER NOT NULL,"
    "  may_preempt INTEGER NOT NULL,"
    "  recovery TEXT NOT NULL CHECK (recovery IN ('requeue','fail')),"
    "  command TEXT NOT NULL DEFAULT '[]',"
    "  time_limit_s INTEGER NOT NULL DEFAULT 0,"
    "  submitter TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('queued','admitted','running','succeeded','failed',"
    "    'cancelled','preempted')),"
    "  reason TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  queued_at INTEGER NOT NULL,"
    "  started_at INTEGER,"
    "  ended_at INTEGER,"
    "  preemptions INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX jobs_state ON jobs(state, priority, queued_at);"
    "CREATE INDEX jobs_project ON jobs(project_id, created_at);"
    "CREATE TABLE job_events ("
    "  id TEXT PRIMARY KEY,"
    "  job_id TEXT NOT NULL REFERENCES jobs(id),"
    "  at INTEGER NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  message TEXT NOT NULL);"
    "CREATE INDEX job_events_job ON job_events(job_id, at);"
    "CREATE TABLE bindings ("
    "  id TEXT PRIMARY KEY,"
    "  job_id TEXT NOT NULL REFERENCES jobs(id),"
    "  unit INTEGER NOT NULL,"
    "  gpu_uuid TEXT NOT NULL,"
    "  slice_uuid TEXT NOT NULL DEFAULT '',"
    "  node TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  form TEXT NOT NULL,"               /* whole | mig:<profile> | shared:<GiB>/<pct> */
    "  shared_mem_gib INTEGER NOT NULL DEFAULT 0,"
    "  shared_pct INTEGER NOT NULL DEFAULT 0,"
    "  weight_milli INTEGER NOT NULL,"    /* share of the card: 1000 whole */
    "  tenant_id TEXT NOT NULL,"
    "  project_id TEXT NOT NULL,"
    "  tenant TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  start_us INTEGER NOT NULL,"
    "  end_us INTEGER,"
    "  end_reason TEXT);"
    "CREATE INDEX bindings_gpu ON bindings(gpu_uuid, start_us);"
    "CREATE INDEX bindings_job ON bindings(job_id);"
    "CREATE INDEX bindings_tenant ON bindings(tenant_id, start_us);"
    "CREATE INDEX bindings_open ON bindings(end_us);",

    /* 5: workloads on the nodes: exit status and captured output */
    "ALTER TABLE jobs ADD COLUMN exit_code INTEGER;"
    "ALTER TABLE jobs ADD COLUMN log TEXT NOT NULL DEFAULT '';",

    /* 6: interference on shared GPUs: strikes per job and card, alarms with details */
    "CREATE TABLE interference ("
    "  gpu_uuid TEXT NOT NULL,"
    "  job_id TEXT NOT NULL,"
    "  strikes INTEGER NOT NULL DEFAULT 0,"  /* consecutive contended samples */
    "  alarmed INTEGER NOT NULL DEFAULT 0,"  /* bit per kind already alarmed while it lasts */
    "  PRIMARY KEY (gpu_uuid, job_id));"
    "ALTER TABLE alarms ADD COLUMN detail TEXT NOT NULL DEFAULT '{}';",

    /* 7: jobs that run an OCI image under the node's container runtime ('' for none) */
    "ALTER TABLE jobs ADD COLUMN image TEXT NOT NULL DEFAULT '';",

    /* 8: model services, applications, API keys, the gateway's token ledger and usage */
    "CREATE TABLE models ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  name TEXT NOT NULL,"
    "  visibility TEXT NOT NULL CHECK (visibility IN ('private','public')),"
    "  description TEXT NOT NULL DEFAULT '',"
    "  created_by TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE UNIQUE INDEX models_public ON models(name) WHERE visibility = 'public';"
    "CREATE TABLE endpoints ("
    "  id TEXT PRIMARY KEY,"
    "  model_id TEXT NOT NULL REFERENCES models(id),"
    "  url TEXT NOT NULL DEFAULT '',"          /* external base URL, ending in /v1 */
    "  job_id TEXT NOT NULL DEFAULT '',"       /* or a job of the model's tenant serving on port */
    "  port INTEGER NOT NULL DEFAULT 0,"
    "  accelerator TEXT NOT NULL DEFAULT '',"
    "  upstream_model TEXT NOT NULL DEFAULT '',"  /* the model's name upstream; '' = same */
    "  health_path TEXT NOT NULL DEFAULT '/models',"
    "  state TEXT NOT NULL DEFAULT 'unknown' CHECK (state IN ('unknown','healthy','unhealthy')),"
    "  checked_at INTEGER NOT NULL DEFAULT 0,"
    "  last_error TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL);"
    "CREATE INDEX endpoints_model ON endpoints(model_id);"
    "CREATE TABLE apps ("
    "  id TEXT PRIMARY KEY,"
    "  project_id TEXT NOT NULL REFERENCES projects(id),"
    "  name TEXT NOT NULL,"
    "  description TEXT NOT NULL DEFAULT '',"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (project_id, name));"
    "CREATE TABLE api_keys ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT NOT NULL REFERENCES projects(id),"
    "  app_id TEXT NOT NULL DEFAULT '',"
    "  name TEXT NOT NULL,"
    "  owner TEXT NOT NULL,"                   /* the user who made it */
    "  hash TEXT NOT NULL UNIQUE,"             /* BLAKE2b of the secret (hex); the secret is not kept */
    "  prefix TEXT NOT NULL,"                  /* first characters, to tell keys apart */
    "  models TEXT NOT NULL DEFAULT '[]',"     /* allowed model names; [] = every visible one */
    "  rpm INTEGER NOT NULL DEFAULT 0,"        /* 0 = no limit */
    "  tpm INTEGER NOT NULL DEFAULT 0,"
    "  tokens_month INTEGER NOT NULL DEFAULT 0,"
    "  expires_at INTEGER NOT NULL DEFAULT 0,"  /* 0 = never */
    "  revoked_at INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (project_id, name));"
    "CREATE TABLE token_ledger ("             /* tokens used and reserved, per scope and month */
    "  scope TEXT NOT NULL CHECK (scope IN ('key','project','tenant')),"
    "  id TEXT NOT NULL,"
    "  month TEXT NOT NULL,"
    "  used INTEGER NOT NULL DEFAULT 0,"
    "  reserved INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (scope, id, month));"
    "CREATE TABLE token_holds ("              /* open reservations, settled by their request */
    "  id TEXT PRIMARY KEY,"
    "  key_id TEXT NOT NULL,"
    "  project_id TEXT NOT NULL,"
    "  tenant_id TEXT NOT NULL,"
    "  month TEXT NOT NULL,"
    "  amount INTEGER NOT NULL,"
    "  at INTEGER NOT NULL);"
    "CREATE TABLE usage_records ("
    "  id TEXT PRIMARY KEY,"
    "  at INTEGER NOT NULL,"
    "  tenant_id TEXT NOT NULL,"
    "  project_id TEXT NOT NULL,"
    "  tenant TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  app TEXT NOT NULL DEFAULT '',"
    "  key_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  model_tenant TEXT NOT NULL DEFAULT '',"  /* the tenant owning the model */
    "  endpoint_id TEXT NOT NULL DEFAULT '',"
    "  accelerator TEXT NOT NULL DEFAULT '',"
    "  kind TEXT NOT NULL,"                     /* chat | completion | embedding */
    "  stream INTEGER NOT NULL DEFAULT 0,"
    "  prompt_tokens INTEGER NOT NULL DEFAULT 0,"
    "  completion_tokens INTEGER NOT NULL DEFAULT 0,"
    "  estimated INTEGER NOT NULL DEFAULT 0,"
    "  latency_us INTEGER NOT NULL DEFAULT 0,"
    "  status INTEGER NOT NULL);"
    "CREATE INDEX usage_project ON usage_records(project_id, at);"
    "CREATE INDEX usage_tenant ON usage_records(tenant_id, at);"
    "CREATE INDEX usage_key ON usage_records(key_id, at);",

    /* 9: metering: rate cards, billing modes, hourly token rollups */
    "CREATE TABLE rate_cards ("
    "  version INTEGER PRIMARY KEY,"
    "  effective_from INTEGER NOT NULL,"
    "  currency TEXT NOT NULL,"
    "  spec TEXT NOT NULL,"                    /* the card as posted */
    "  created_by TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "CREATE TABLE tenant_billing ("
    "  tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),"
    "  mode TEXT NOT NULL CHECK (mode IN ('showback','chargeback')),"
    "  updated_at INTEGER NOT NULL);"
    "CREATE TABLE usage_hourly ("             /* usage_records summed per hour, same transaction */
    "  hour INTEGER NOT NULL,"                 /* start of the hour, microseconds */
    "  tenant_id TEXT NOT NULL,"
    "  project_id TEXT NOT NULL,"
    "  tenant TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  key_id TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  accelerator TEXT NOT NULL,"
    "  requests INTEGER NOT NULL DEFAULT 0,"
    "  prompt_tokens INTEGER NOT NULL DEFAULT 0,"
    "  completion_tokens INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (hour, tenant_id, project_id, key_id, model, accelerator));"
    "CREATE INDEX usage_at ON usage_records(at);"
    "CREATE INDEX bindings_ended ON bindings(end_us, start_us);"
    "CREATE TABLE quota_warnings ("           /* card-hour ceilings reached with policy stop */
    "  tenant_id TEXT NOT NULL,"
    "  project_id TEXT NOT NULL DEFAULT '',"   /* '' = the tenant's ceiling */
    "  month TEXT NOT NULL,"
    "  warned_at INTEGER NOT NULL,"
    "  stopped_at INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (tenant_id, project_id, month));",

    /* 10: knowledge bases, their documents and chunks (indexed in one FTS5 table per tenant,
     * kbfts_<tenant id>, and kbfts_ops, made on first use by src/kb), and applications
     * bound to them */
    "CREATE TABLE kbs ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL DEFAULT '',"    /* '' for an ops KB */
    "  project_id TEXT NOT NULL DEFAULT '',"   /* '' unless scope is project */
    "  scope TEXT NOT NULL CHECK (scope IN ('tenant','project','ops')),"
    "  name TEXT NOT NULL,"
    "  description TEXT NOT NULL DEFAULT '',"
    "  work_orders TEXT NOT NULL DEFAULT '[]',"  /* ops: work orders whose vendors may read it */
    "  created_by TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (tenant_id, name));"
    "CREATE TABLE kb_documents ("
    "  id TEXT PRIMARY KEY,"
    "  kb_id TEXT NOT NULL REFERENCES kbs(id),"
    "  name TEXT NOT NULL,"
    "  format TEXT NOT NULL,"
    "  bytes INTEGER NOT NULL,"
    "  chars INTEGER NOT NULL,"
    "  chunks INTEGER NOT NULL,"
    "  text TEXT NOT NULL,"                    /* the extracted text the chunks index */
    "  created_by TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  UNIQUE (kb_id, name));"
    "CREATE TABLE kb_chunks ("                 /* id = rowid in the tenant's FTS5 table */
    "  id INTEGER PRIMARY KEY,"
    "  doc_id TEXT NOT NULL REFERENCES kb_documents(id),"
    "  kb_id TEXT NOT NULL,"
    "  seq INTEGER NOT NULL,"
    "  start_char INTEGER NOT NULL,"
    "  end_char INTEGER NOT NULL);"
    "CREATE INDEX kb_chunks_doc ON kb_chunks(doc_id, seq);"
    "CREATE TABLE kb_app_rag ("                /* app x model -> KBs, k */
    "  app_id TEXT NOT NULL REFERENCES apps(id),"
    "  model TEXT NOT NULL,"
    "  kb_id TEXT NOT NULL REFERENCES kbs(id),"
    "  pos INTEGER NOT NULL,"
    "  k INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY (app_id, model, kb_id));"
    "CREATE INDEX kb_app_rag_kb ON kb_app_rag(kb_id);",

    /* 11: row-level security by tenant: PostgreSQL only (schema_pg.c); nothing to do here,
     * the version is kept so both stores count alike */
    "SELECT 1;",

    /* 12: the gateways' per-minute rate windows, shared by every process on the store:
     * each writes its own counts (process = a random id per run) about once a second and
     * adds up the others' */
    "CREATE TABLE rate_counts ("
    "  scope TEXT NOT NULL,"                   /* k: a key, p: a project */
    "  id TEXT NOT NULL,"
    "  minute INTEGER NOT NULL,"               /* unix time / 60 */
    "  process TEXT NOT NULL,"
    "  requests INTEGER NOT NULL DEFAULT 0,"
    "  tokens INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (scope, id, minute, process));"
    "CREATE INDEX rate_counts_minute ON rate_counts(minute);",

    /* 13: failed logins, shared by every server on the store (auth/throttle.h); a
     * window's worth at most: each failure deletes those older than the window.  Also an
     * index on the chunks of one KB. */
    "CREATE TABLE login_failures ("
    "  kind TEXT NOT NULL CHECK (kind IN ('n','a')),"   /* n: a user name, a: an address */
    "  key TEXT NOT NULL,"
    "  at INTEGER NOT NULL);"
    "CREATE INDEX login_failures_key ON login_failures(kind, key, at);"
    "CREATE INDEX login_failures_at ON login_failures(at);"
    /* and the chunks of one KB, which listing KBs counts and deleting one removes */
    "CREATE INDEX kb_chunks_kb ON kb_chunks(kb_id);",

    /* 14: more row-level security: PostgreSQL only (schema_pg.c) */
    "SELECT 1;",
    /* 15: identities have owners (a home: a tenant, or '' for the platform; node accounts
     * belong to their node alone), invitations into another tenant, join tokens bound to a
     * node name and a number of uses, signed audit checkpoints, clipped usage records */
    "ALTER TABLE users ADD COLUMN home_tenant_id TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE users ADD COLUMN node_account INTEGER NOT NULL DEFAULT 0;"
    "UPDATE users SET node_account = 1 WHERE id IN (SELECT agent_user_id FROM nodes);"
    /* an existing user whose every binding lies in one tenant is homed there */
    "UPDATE users SET home_tenant_id = (SELECT MIN(b.tenant_id) FROM role_bindings b"
    "  WHERE b.user_id = users.id) WHERE node_account = 0"
    "  AND NOT EXISTS (SELECT 1 FROM role_bindings b WHERE b.user_id = users.id"
    "                  AND b.tenant_id IS NULL)"
    "  AND (SELECT COUNT(DISTINCT b.tenant_id) FROM role_bindings b"
    "       WHERE b.user_id = users.id) = 1;"
    "CREATE TABLE invitations ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"        /* the inviting tenant */
    "  project_id TEXT NOT NULL DEFAULT '',"                    /* '' = a tenant role */
    "  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  home_tenant_id TEXT NOT NULL,"                           /* the user's home, which decides */
    "  role TEXT NOT NULL,"
    "  invited_by TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('pending','accepted','declined','withdrawn','expired')),"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  decided_by TEXT NOT NULL DEFAULT '',"
    "  decided_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX invitations_home ON invitations(home_tenant_id, state);"
    "CREATE INDEX invitations_tenant ON invitations(tenant_id, state);"
    "ALTER TABLE join_tokens ADD COLUMN node_name TEXT NOT NULL DEFAULT '';"  /* '' = any name */
    "ALTER TABLE join_tokens ADD COLUMN max_uses INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE join_tokens ADD COLUMN used_by TEXT NOT NULL DEFAULT '[]';"  /* node names */
    "UPDATE join_tokens SET max_uses = MAX(uses, 1);"
    "CREATE TABLE audit_checkpoints ("
    "  seq INTEGER PRIMARY KEY,"          /* the audit seq of the chain head signed */
    "  head TEXT NOT NULL,"               /* that event's hash (hex) */
    "  count INTEGER NOT NULL,"           /* events in the chain up to it */
    "  at INTEGER NOT NULL,"              /* when signed */
    "  key_id TEXT NOT NULL,"             /* hex of the Ed25519 public key */
    "  signature TEXT NOT NULL);"         /* hex Ed25519 signature of the canonical text */
    /* approvals of user.create kept the new password in clear: drop those bodies (the pending
     * ones can no longer run, so they expire); new ones keep only its hash */
    "UPDATE approvals SET state = 'expired', reason = 'its stored request held a password'"
    "  WHERE operation = 'user.create' AND state = 'pending' AND body LIKE '%\"password\"%';"
    "UPDATE approvals SET body = '{}' WHERE operation = 'user.create'"
    "  AND body LIKE '%\"password\"%';"
    "ALTER TABLE usage_records ADD COLUMN clipped INTEGER NOT NULL DEFAULT 0;"
    /* records with clipped usage, per hour (/metrics); detail of an endpoint check for ops */
    "ALTER TABLE usage_hourly ADD COLUMN clipped INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE endpoints ADD COLUMN last_error_detail TEXT NOT NULL DEFAULT '';"
    /* the TCP ports a running job's own processes listen on, as its node reports them
     * ("p1,p2,...": a job endpoint routes only to one of them) */
    "ALTER TABLE jobs ADD COLUMN listen_ports TEXT NOT NULL DEFAULT '';"
    /* requests of one API key in flight at once (0 = no limit) */
    "ALTER TABLE api_keys ADD COLUMN max_parallel INTEGER NOT NULL DEFAULT 0;"
    /* the gateway's cache epoch (src/gateway/cache.c): every change to what a gateway request
     * reads (keys, their owners and roles, quotas, models, endpoints, jobs serving them) bumps
     * it in the same transaction; each gateway process reads it about once a second */
    "CREATE TABLE gw_epoch (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);"
    "INSERT INTO gw_epoch (id, n) VALUES (1, 0);"
    "CREATE TRIGGER gw_epoch_api_keys_i AFTER INSERT ON api_keys"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_api_keys_u AFTER UPDATE ON api_keys"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_api_keys_d AFTER DELETE ON api_keys"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_users_u AFTER UPDATE ON users WHEN OLD.disabled IS NOT NEW.disabled OR OLD.name IS NOT NEW.name"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_users_d AFTER DELETE ON users"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_role_bindings_i AFTER INSERT ON role_bindings"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_role_bindings_u AFTER UPDATE ON role_bindings"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_role_bindings_d AFTER DELETE ON role_bindings"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_tenants_u AFTER UPDATE ON tenants WHEN OLD.name IS NOT NEW.name"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_tenants_d AFTER DELETE ON tenants"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_projects_u AFTER UPDATE ON projects WHEN OLD.name IS NOT NEW.name"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_projects_d AFTER DELETE ON projects"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_apps_i AFTER INSERT ON apps"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_apps_u AFTER UPDATE ON apps"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_apps_d AFTER DELETE ON apps"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_quotas_i AFTER INSERT ON quotas"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_quotas_u AFTER UPDATE ON quotas"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_quotas_d AFTER DELETE ON quotas"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_models_i AFTER INSERT ON models"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_models_u AFTER UPDATE ON models"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_models_d AFTER DELETE ON models"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_endpoints_i AFTER INSERT ON endpoints"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_endpoints_u AFTER UPDATE ON endpoints WHEN OLD.url IS NOT NEW.url OR OLD.port IS NOT NEW.port OR OLD.job_id IS NOT NEW.job_id OR OLD.upstream_model IS NOT NEW.upstream_model OR OLD.accelerator IS NOT NEW.accelerator OR OLD.state IS NOT NEW.state OR OLD.model_id IS NOT NEW.model_id"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_endpoints_d AFTER DELETE ON endpoints"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_jobs_u AFTER UPDATE ON jobs WHEN OLD.state IS NOT NEW.state"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_bindings_i AFTER INSERT ON bindings"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "CREATE TRIGGER gw_epoch_bindings_u AFTER UPDATE ON bindings WHEN OLD.end_us IS NOT NEW.end_us OR OLD.node IS NOT NEW.node"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    /* an admitted job whose victims a round stopped: what they freed is its own (sched.h) */
    "ALTER TABLE jobs ADD COLUMN preempt_credit INTEGER NOT NULL DEFAULT 0;",

    /* 16: accelerators of more than one vendor (docs/inventory.md "Vendors"): each card's
     * vendor, driver and runtimes (its software stack); a class's accepted vendors, driver
     * minimum per vendor and stack rules; the stack a job's image needs; the vendor on each
     * binding (metering and reports split by it).  Cards and bindings before it were NVIDIA's. */
    "ALTER TABLE gpus ADD COLUMN vendor TEXT NOT NULL DEFAULT 'nvidia';"
    "ALTER TABLE gpus ADD COLUMN driver_version TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE gpus ADD COLUMN stack TEXT NOT NULL DEFAULT '{}';"       /* {"cuda":"12.4"} */
    "UPDATE gpus SET driver_version = (SELECT n.driver_version FROM nodes n WHERE n.id = gpus.node_id);"
    "ALTER TABLE classes ADD COLUMN vendors TEXT NOT NULL DEFAULT '[]';"  /* [] = any vendor */
    "ALTER TABLE classes ADD COLUMN min_drivers TEXT NOT NULL DEFAULT '{}';" /* vendor -> min */
    "ALTER TABLE classes ADD COLUMN stack TEXT NOT NULL DEFAULT '{}';"    /* runtime -> min */
    "UPDATE classes SET min_drivers = json_object('nvidia', min_driver) WHERE min_driver <> '';"
    "ALTER TABLE jobs ADD COLUMN stack TEXT NOT NULL DEFAULT '';"         /* "rocm>=6.1" */
    "ALTER TABLE bindings ADD COLUMN vendor TEXT NOT NULL DEFAULT 'nvidia';"
    /* the gateway's per-endpoint concurrency (per process) and the line of requests that
     * may wait for it (docs/gateway.md "Endpoints under load") */
    "ALTER TABLE endpoints ADD COLUMN max_concurrency INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE endpoints ADD COLUMN max_queue INTEGER NOT NULL DEFAULT 100;",
    /* 17: only jobs that serve a model endpoint invalidate the gateway's read cache: every
     * job's start and end bumped gw_epoch, so a busy scheduler dropped every gateway
     * process's cache about once a second (and this server's after each commit) */
    "CREATE INDEX endpoints_job ON endpoints(job_id);"
    "DROP TRIGGER gw_epoch_jobs_u;"
    "CREATE TRIGGER gw_epoch_jobs_u AFTER UPDATE ON jobs WHEN OLD.state IS NOT NEW.state"
    " AND EXISTS (SELECT 1 FROM endpoints WHERE job_id = NEW.id)"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "DROP TRIGGER gw_epoch_bindings_i;"
    "CREATE TRIGGER gw_epoch_bindings_i AFTER INSERT ON bindings"
    " WHEN EXISTS (SELECT 1 FROM endpoints WHERE job_id = NEW.job_id)"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;"
    "DROP TRIGGER gw_epoch_bindings_u;"
    "CREATE TRIGGER gw_epoch_bindings_u AFTER UPDATE ON bindings"
    " WHEN (OLD.end_us IS NOT NEW.end_us OR OLD.node IS NOT NEW.node)"
    " AND EXISTS (SELECT 1 FROM endpoints WHERE job_id = NEW.job_id)"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;",
    /* 18: the scheduler's write phase looks up the open bindings of a node's cards (round.c) */
    "CREATE INDEX bindings_open_gpu ON bindings(gpu_uuid) WHERE end_us IS NULL;",
    /* 19: who set a user's current password ('' nobody but itself: its own change, the
     * bootstrap); an approver may not be one whose password the requester set, nor the
     * reverse (docs/security.md "Who administers the administrators") */
    "ALTER TABLE users ADD COLUMN password_set_by TEXT NOT NULL DEFAULT '';",
    /* 20: preemptibility is policy: who may opt a job out of preemption is the priority
     * class's (non_preemptible_roles), and a job remembers that it opted out, so a class
     * change re-decides it (docs/scheduling.md "Priority classes") */
    "ALTER TABLE priority_classes ADD COLUMN non_preemptible_roles TEXT NOT NULL DEFAULT '[\"tenant-admin\"]';"
    "ALTER TABLE jobs ADD COLUMN opted_out INTEGER NOT NULL DEFAULT 0;"
    "UPDATE jobs SET opted_out = 1 WHERE preemptible = 0 AND priority_class IN (SELECT name FROM priority_classes WHERE preemptible <> 0);",
    /* 21 (issue 33 item 2): a job's listening ports are part of its endpoints' routes: when
     * they change (its node reports a port closed or opened), the gateway's read caches and
     * port sets are dropped at once, as for a change of its state (migration 17) - a route
     * kept past its job's socket could reach whatever listens there next (docs/gateway.md
     * "Job endpoints") */
    "CREATE TRIGGER gw_epoch_jobs_ports AFTER UPDATE ON jobs"
    " WHEN OLD.listen_ports IS NOT NEW.listen_ports"
    " AND EXISTS (SELECT 1 FROM endpoints WHERE job_id = NEW.id)"
    " BEGIN UPDATE gw_epoch SET n = n + 1 WHERE id = 1; END;",
    /* 22 (issue 37 item 4): job dependencies, `job submit --after JOB[:ok|:any|:notok]`: the
     * dependent, the job it waits for (same project), the kind; met or not is read from the
     * other job's state (src/sched/deps.c) */
    "CREATE TABLE job_deps ("
    "  job_id TEXT NOT NULL REFERENCES jobs(id),"
    "  dep_id TEXT NOT NULL REFERENCES jobs(id),"
    "  kind TEXT NOT NULL CHECK (kind IN ('ok','any','notok')),"
    "  PRIMARY KEY (job_id, dep_id));"
    "CREATE INDEX job_deps_dep ON job_deps(dep_id);",
    /* 23 (issue 37 item 3): job arrays, `job submit --array 0-999%50`: the array (its range,
     * how many of its tasks may hold cards at once, 0 no cap) and, on each task (a job), its
     * array and index (src/sched/arrays.c) */
    "CREATE TABLE job_arrays ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  project_id TEXT NOT NULL REFERENCES projects(id),"
    "  name TEXT NOT NULL,"
    "  first_index INTEGER NOT NULL,"
    "  last_index INTEGER NOT NULL,"
    "  max_running INTEGER NOT NULL DEFAULT 0,"
    "  submitter TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL);"
    "ALTER TABLE jobs ADD COLUMN array_id TEXT REFERENCES job_arrays(id);"
    "ALTER TABLE jobs ADD COLUMN array_index INTEGER;"
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
    "ALTER TABLE alarms ADD COLUMN resolved_at INTEGER;"
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
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  tenant_id TEXT REFERENCES tenants(id),"
    "  project_id TEXT REFERENCES projects(id),"
    "  pool TEXT NOT NULL DEFAULT '',"
    "  class TEXT NOT NULL DEFAULT '',"
    "  count INTEGER NOT NULL DEFAULT 0,"
    "  nodes TEXT NOT NULL DEFAULT '[]',"
    "  start_us INTEGER NOT NULL,"
    "  end_us INTEGER NOT NULL,"
    "  recurrence TEXT NOT NULL DEFAULT 'none'"
    "   CHECK (recurrence IN ('none','daily','weekly','weekdays','every')),"
    "  weekdays INTEGER NOT NULL DEFAULT 0,"
    "  every_s INTEGER NOT NULL DEFAULT 0,"
    "  until_us INTEGER NOT NULL DEFAULT 0,"
    "  end_policy TEXT NOT NULL DEFAULT 'stop' CHECK (end_policy IN ('stop','run')),"
    "  drain_before_s INTEGER NOT NULL DEFAULT 0,"
    "  work_orders TEXT NOT NULL DEFAULT '[]',"
    "  description TEXT NOT NULL DEFAULT '',"
    "  created_by TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  deleted_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX reservations_name ON reservations(name) WHERE deleted_at = 0;"
    "CREATE INDEX reservations_tenant ON reservations(tenant_id);"
    "ALTER TABLE jobs ADD COLUMN reservation_id TEXT REFERENCES reservations(id);"
    "CREATE INDEX jobs_reservation ON jobs(reservation_id, state);"
    "ALTER TABLE nodes ADD COLUMN maint_reservation TEXT NOT NULL DEFAULT '';",
    /* 27 (issue 37 items 1-2): jobs that span nodes, `job submit --nodes N --units-per-node K`
     * (src/sched/sched.c place_gang): on the job, how many nodes it is placed on all or
     * nothing (0: its units go wherever each fits, as before) and the port its rank 0's node
     * reserved for the rendezvous (MASTER_PORT; NULL until that node reports it); on a
     * binding, when its node's rank ended (exit 0) before rank 0 (it is not started again);
     * on a node, the labels ops set (`node label`) and the topology the round groups nodes
     * by (`rack`, `switch`: ops' labels over the agent's) */
    "ALTER TABLE jobs ADD COLUMN nodes INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN master_port INTEGER;"
    "ALTER TABLE bindings ADD COLUMN rank_done_us INTEGER;"
    "ALTER TABLE nodes ADD COLUMN ops_labels TEXT NOT NULL DEFAULT '{}';"
    "ALTER TABLE nodes ADD COLUMN topo_rack TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE nodes ADD COLUMN topo_switch TEXT NOT NULL DEFAULT '';"
    "UPDATE nodes SET topo_rack = CASE WHEN json_type(labels, '$.rack') = 'text'"
    " THEN json_extract(labels, '$.rack') ELSE '' END,"
    " topo_switch = CASE WHEN json_type(labels, '$.switch') = 'text'"
    " THEN json_extract(labels, '$.switch') ELSE '' END;",
    /* 28 (issue 35, item 3): fair use of idle capacity - each tenant's recent borrowing
     * (milli-GPU-seconds above its guarantee, decayed with the scheduler policy's half-life
     * to at_us) and what it borrowed from then on (milli), written by the scheduler's round
     * (src/sched/round.c) when what a tenant borrows changes, read back decayed to now */
    "CREATE TABLE share_usage ("
    "  tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,"
    "  recent INTEGER NOT NULL DEFAULT 0,"
    "  borrowed INTEGER NOT NULL DEFAULT 0,"
    "  at_us INTEGER NOT NULL);",
    /* 29 (issue 38, item 1): the cluster in the scheduler's memory - what a round reads of
     * nodes, cards, slices, pools, classes, tenants, projects and the health policy is kept
     * by the leader between rounds (src/sched/round.c) and read again only when this version
     * moved: every change to those rows bumps it in the same transaction (an UPDATE only when
     * a column the round reads changed: heartbeats and samples leave it) */
    "CREATE TABLE cluster_version (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);"
    "INSERT INTO cluster_version (id, v) VALUES (1, 0);"
    "CREATE TRIGGER cluster_nodes_i AFTER INSERT ON nodes"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_nodes_d AFTER DELETE ON nodes"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_nodes_u AFTER UPDATE ON nodes WHEN OLD.name IS NOT NEW.name OR OLD.cpus IS NOT NEW.cpus OR OLD.memory_gib IS NOT NEW.memory_gib OR OLD.pool IS NOT NEW.pool OR OLD.state IS NOT NEW.state OR OLD.admin_state IS NOT NEW.admin_state OR OLD.topo_rack IS NOT NEW.topo_rack OR OLD.topo_switch IS NOT NEW.topo_switch"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_gpus_i AFTER INSERT ON gpus"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_gpus_d AFTER DELETE ON gpus"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_gpus_u AFTER UPDATE ON gpus WHEN OLD.uuid IS NOT NEW.uuid OR OLD.node_id IS NOT NEW.node_id OR OLD.idx IS NOT NEW.idx OR OLD.model IS NOT NEW.model OR OLD.memory_mib IS NOT NEW.memory_mib OR OLD.mode IS NOT NEW.mode OR OLD.health IS NOT NEW.health OR OLD.admin_state IS NOT NEW.admin_state OR OLD.numa IS NOT NEW.numa OR OLD.topology IS NOT NEW.topology OR OLD.driver_version IS NOT NEW.driver_version OR OLD.compute_cap IS NOT NEW.compute_cap OR OLD.vendor IS NOT NEW.vendor OR OLD.stack IS NOT NEW.stack"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_slices_i AFTER INSERT ON slices"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_slices_d AFTER DELETE ON slices"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_slices_u AFTER UPDATE ON slices"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_pools_i AFTER INSERT ON pools"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_pools_d AFTER DELETE ON pools"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_pools_u AFTER UPDATE ON pools"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_classes_i AFTER INSERT ON classes"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_classes_d AFTER DELETE ON classes"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_classes_u AFTER UPDATE ON classes"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_tenants_i AFTER INSERT ON tenants"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_tenants_d AFTER DELETE ON tenants"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_tenants_u AFTER UPDATE ON tenants WHEN OLD.name IS NOT NEW.name"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_projects_i AFTER INSERT ON projects"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_projects_d AFTER DELETE ON projects"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_projects_u AFTER UPDATE ON projects WHEN OLD.tenant_id IS NOT NEW.tenant_id OR OLD.name IS NOT NEW.name OR OLD.class IS NOT NEW.class"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_health_policy_i AFTER INSERT ON security_policy WHEN NEW.key = 'health_policy'"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_health_policy_d AFTER DELETE ON security_policy WHEN OLD.key = 'health_policy'"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;"
    "CREATE TRIGGER cluster_health_policy_u AFTER UPDATE ON security_policy WHEN NEW.key = 'health_policy' OR OLD.key = 'health_policy'"
    " BEGIN UPDATE cluster_version SET v = v + 1 WHERE id = 1; END;",
    /* 30 (issue 38, item 1): the queue in the scheduler's memory - the leader keeps the live
     * jobs as a round reads them and reads only what changed since (src/sched/round.c): each
     * insert of a job, and each update of a column the round reads, stamps the row's chg with
     * the next job_chg.v in the same transaction (on PostgreSQL the job_chg row's lock orders
     * the stamps as the commits) */
    "ALTER TABLE jobs ADD COLUMN chg INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_chg ON jobs(chg);"
    "CREATE TABLE job_chg (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);"
    "INSERT INTO job_chg (id, v) VALUES (1, 0);"
    "CREATE TRIGGER jobs_chg_i AFTER INSERT ON jobs"
    " BEGIN UPDATE job_chg SET v = v + 1 WHERE id = 1; UPDATE jobs SET chg = (SELECT v FROM job_chg WHERE id = 1) WHERE id = NEW.id; END;"
    "CREATE TRIGGER jobs_chg_u AFTER UPDATE ON jobs WHEN OLD.chg IS NEW.chg AND ("
    "OLD.project_id IS NOT NEW.project_id OR OLD.class IS NOT NEW.class OR OLD.units IS NOT NEW.units OR OLD.priority IS NOT NEW.priority OR OLD.preemptible IS NOT NEW.preemptible OR OLD.may_preempt IS NOT NEW.may_preempt OR OLD.queued_at IS NOT NEW.queued_at OR OLD.started_at IS NOT NEW.started_at OR OLD.state IS NOT NEW.state OR OLD.recovery IS NOT NEW.recovery OR OLD.preempt_credit IS NOT NEW.preempt_credit OR OLD.reason IS NOT NEW.reason OR OLD.stack IS NOT NEW.stack OR OLD.array_id IS NOT NEW.array_id OR OLD.reservation_id IS NOT NEW.reservation_id OR OLD.time_limit_s IS NOT NEW.time_limit_s OR OLD.nodes IS NOT NEW.nodes)"
    " BEGIN UPDATE job_chg SET v = v + 1 WHERE id = 1; UPDATE jobs SET chg = (SELECT v FROM job_chg WHERE id = 1) WHERE id = NEW.id; END;",
    /* 31 (issue 35, item 3): fair use's half-life per pool - a pool's borrow_half_life_s
     * (NULL: the scheduler policy's), and each tenant's recent borrowing kept per pool, each
     * row decaying with its pool's half-life (pool '': what was recorded before, with the
     * policy's) */
    "ALTER TABLE pools ADD COLUMN borrow_half_life_s INTEGER;"
    "CREATE TABLE share_usage_new ("
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,"
    "  pool TEXT NOT NULL DEFAULT '',"
    "  recent INTEGER NOT NULL DEFAULT 0,"
    "  borrowed INTEGER NOT NULL DEFAULT 0,"
    "  at_us INTEGER NOT NULL,"
    "  PRIMARY KEY (tenant_id, pool));"
    "INSERT INTO share_usage_new (tenant_id, pool, recent, borrowed, at_us)"
    " SELECT tenant_id, '', recent, borrowed, at_us FROM share_usage;"
    "DROP TABLE share_usage;"
    "ALTER TABLE share_usage_new RENAME TO share_usage;",
    /* 32 (issue 39, item 4): PostgreSQL announces every move of gw_epoch to the gateways of
     * other processes; one SQLite store has one process, which polls: nothing to add (the
     * versions of both stores stay in step) */
    "SELECT 1;",
    /* 33 (issue 35, item 1): a guarantee per pool over classes that span pools - what the
     * scheduler's admission gave a job that waits admitted (sched.h step 6d: a pool's name,
     * '*' the pools without a guarantee of its tenant's own; NULL nothing), read by the
     * round like every column it reads, so the change stamp covers it too */
    "ALTER TABLE jobs ADD COLUMN guarantee_pool TEXT;"
    "DROP TRIGGER jobs_chg_u;"
    "CREATE TRIGGER jobs_chg_u AFTER UPDATE ON jobs WHEN OLD.chg IS NEW.chg AND ("
    "OLD.project_id IS NOT NEW.project_id OR OLD.class IS NOT NEW.class OR OLD.units IS NOT NEW.units OR OLD.priority IS NOT NEW.priority OR OLD.preemptible IS NOT NEW.preemptible OR OLD.may_preempt IS NOT NEW.may_preempt OR OLD.queued_at IS NOT NEW.queued_at OR OLD.started_at IS NOT NEW.started_at OR OLD.state IS NOT NEW.state OR OLD.recovery IS NOT NEW.recovery OR OLD.preempt_credit IS NOT NEW.preempt_credit OR OLD.reason IS NOT NEW.reason OR OLD.stack IS NOT NEW.stack OR OLD.array_id IS NOT NEW.array_id OR OLD.reservation_id IS NOT NEW.reservation_id OR OLD.time_limit_s IS NOT NEW.time_limit_s OR OLD.nodes IS NOT NEW.nodes OR OLD.guarantee_pool IS NOT NEW.guarantee_pool)"
    " BEGIN UPDATE job_chg SET v = v + 1 WHERE id = 1; UPDATE jobs SET chg = (SELECT v FROM job_chg WHERE id = 1) WHERE id = NEW.id; END;",
};

int schema__sqlite_count(void) { return (int)(sizeof migrations / sizeof migrations[0]); }

const char *schema__sqlite_sql(int version) {
    if (version < 1 || version > schema__sqlite_count()) return NULL;
    return migrations[version - 1];
}
