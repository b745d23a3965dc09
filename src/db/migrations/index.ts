/**
 * Every migration, in order. Keys are "<id>_<name>": the Migrator takes the leading number as the
 * migration id and records applied ids in `attest_migrations`. One set serves SQLite and
 * PostgreSQL and every component (see 0001_attest_meta.ts for how to add one).
 */
import m0001 from "./0001_attest_meta.js"
import m0002 from "./0002_registrar_agents.js"
import m0003 from "./0003_registrar_pending.js"
import m0010 from "./0010_verifier_policies.js"
import m0011 from "./0011_verifier_agents.js"
import m0012 from "./0012_verifier_notifications.js"
import m0017 from "./0017_verifier_last_event_message.js"
import m0018 from "./0018_verifier_policy_facts.js"
import m0020 from "./0020_push_agents.js"
import m0021 from "./0021_push_sessions.js"
import m0022 from "./0022_push_attestations.js"
import m0023 from "./0023_verifier_last_verdict.js"
import m0024 from "./0024_push_session_binding.js"
import m0025 from "./0025_verifier_owner_epoch.js"
import m0026 from "./0026_verifier_notification_claims.js"
import m0027 from "./0027_push_attestation_judge.js"
import m0028 from "./0028_verifier_owner_runner.js"
import m0029 from "./0029_push_attestation_outcomes.js"

export const migrations = {
  "0001_attest_meta": m0001,
  "0002_registrar_agents": m0002,
  "0003_registrar_pending": m0003,
  "0010_verifier_policies": m0010,
  "0011_verifier_agents": m0011,
  "0012_verifier_notifications": m0012,
  "0017_verifier_last_event_message": m0017,
  "0018_verifier_policy_facts": m0018,
  "0020_push_agents": m0020,
  "0021_push_sessions": m0021,
  "0022_push_attestations": m0022,
  "0023_verifier_last_verdict": m0023,
  "0024_push_session_binding": m0024,
  "0025_verifier_owner_epoch": m0025,
  "0026_verifier_notification_claims": m0026,
  "0027_push_attestation_judge": m0027,
  "0028_verifier_owner_runner": m0028,
  "0029_push_attestation_outcomes": m0029
} as const
