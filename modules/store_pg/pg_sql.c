/* SPDX-License-Identifier: BSD-2-Clause */
/* The statements (pg_sql.h). Parameters are text cast in the SQL, so the
 * server never has to guess a type. */
#include "pg_sql.h"

#include "pg_presence_sql.h"
#include "pg_proxies_sql.h"
#include "store_common/az_row.h"

/* The columns store_common/az_row.c decodes. */
#define USER_COLS AZ_USER_COLS
#define TOKEN_COLS AZ_TOKEN_COLS
#define AGENT_COLS AZ_AGENT_COLS
#define POLICY_COLS AZ_POLICY_COLS
/* A subject ($k kind, $s name or id) that exists. */
#define SUBJECT_EXISTS(k, s)                                               \
  "((" k "::int = 1 AND EXISTS (SELECT 1 FROM service_tokens WHERE id = " \
  s "::text)) OR (" k "::int = 2 AND EXISTS (SELECT 1 FROM users WHERE "  \
  "name = " s "::text)))"
/* The cursor of a list ordered by col. */
#define AFTER(col) "($1::text IS NULL OR " col " COLLATE \"C\" > $1::text)"

static const pg_stmt stmts[Q_COUNT] = {
    [Q_REVISION] = {"revision",
                    "SELECT revision FROM authorization_revision WHERE id = 1",
                    0},
    [Q_BUMP] = {"bump",
                "UPDATE authorization_revision SET revision = revision + 1, "
                "updated_at = to_char(now() AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD HH24:MI:SS') WHERE id = 1 RETURNING revision",
                0},
    [Q_FACTS] = {"facts",
                 "SELECT t.id, t.user_name, t.scopes, t.expires_at, "
                 "t.revoked_at, u.enabled, "
                 "CASE WHEN u.owner IS NULL THEN 0 ELSE 1 END, o.enabled, "
                 "a.enabled FROM service_tokens t "
                 "JOIN users u ON u.name = t.user_name "
                 "LEFT JOIN users o ON o.name = u.owner "
                 "LEFT JOIN agents a ON a.name = $2::text "
                 "WHERE t.id = $1::text",
                 2},
    [Q_POLICIES] = {"policies",
                    "SELECT subject_kind, subject, host_pattern, port_min, "
                    "port_max, protocol FROM agent_policies "
                    "WHERE agent = $1::text AND protocol = $4::int "
                    "AND port_min <= $3::int AND port_max >= $3::int "
                    "AND ((subject_kind = 1 AND subject = $2::text) OR "
                    "(subject_kind = 2 AND subject = (SELECT user_name FROM "
                    "service_tokens WHERE id = $2::text))) "
                    "ORDER BY id LIMIT 1000",
                    4},
    [Q_AUTHN] = {"authn",
                 "SELECT t.id, t.user_name, t.agent, t.scopes, t.expires_at, "
                 "t.revoked_at, t.created_at, t.updated_at, t.rotated_at, "
                 "t.secret_hash, u.enabled, "
                 "CASE WHEN u.owner IS NULL THEN 0 ELSE 1 END, o.enabled, "
                 "a.enabled FROM service_tokens t "
                 "JOIN users u ON u.name = t.user_name "
                 "LEFT JOIN users o ON o.name = u.owner "
                 "LEFT JOIN agents a ON a.name = t.agent "
                 "WHERE t.id = $1::text",
                 1},
    [Q_LIST_USERS] = {"list_users",
                      "SELECT " USER_COLS " FROM users WHERE " AFTER("name")
                      " AND ($2::text IS NULL OR owner = $2::text) "
                      "AND $3::text IS NULL "
                      "ORDER BY name COLLATE \"C\" LIMIT $4::int",
                      4},
    [Q_LIST_TOKENS] = {"list_tokens",
                       "SELECT " TOKEN_COLS " FROM service_tokens WHERE " AFTER(
                           "id") " AND ($2::text IS NULL OR user_name = "
                                 "$2::text) AND ($3::text IS NULL OR agent = "
                                 "$3::text) ORDER BY id COLLATE \"C\" "
                                 "LIMIT $4::int",
                       4},
    [Q_LIST_AGENTS] = {"list_agents",
                       "SELECT " AGENT_COLS " FROM agents WHERE " AFTER("name")
                       " AND ($2::text IS NULL OR owner = $2::text) "
                       "AND $3::text IS NULL "
                       "ORDER BY name COLLATE \"C\" LIMIT $4::int",
                       4},
    [Q_LIST_POLICIES] = {"list_policies",
                         "SELECT " POLICY_COLS " FROM agent_policies WHERE "
                         AFTER("id") " AND $2::text IS NULL "
                         "AND ($3::text IS NULL OR agent = $3::text) "
                         "ORDER BY id COLLATE \"C\" LIMIT $4::int",
                         4},
    [Q_USER_INS] = {"user_ins",
                    "INSERT INTO users (name, owner, enabled, created_at, "
                    "updated_at) VALUES ($1::text, $2::text, $3::int, "
                    "$4::bigint, $4::bigint) RETURNING " USER_COLS,
                    4},
    [Q_USER_UPD] = {"user_upd",
                    "UPDATE users SET enabled = CASE WHEN $2::int = 1 THEN "
                    "$3::int ELSE enabled END, owner = CASE WHEN $4::int = 1 "
                    "THEN $5::text ELSE owner END, updated_at = $6::bigint "
                    "WHERE name = $1::text RETURNING " USER_COLS,
                    6},
    [Q_USER_DEL_POL] = {"user_del_pol",
                        "DELETE FROM agent_policies WHERE (subject_kind = 2 "
                        "AND subject = $1::text) OR (subject_kind = 1 AND "
                        "subject IN (SELECT id FROM service_tokens WHERE "
                        "user_name = $1::text))",
                        1},
    [Q_USER_DEL] = {"user_del",
                    "DELETE FROM users WHERE name = $1::text RETURNING name",
                    1},
    [Q_TOKEN_INS] = {"token_ins",
                     "INSERT INTO service_tokens (id, user_name, agent, "
                     "scopes, secret_hash, expires_at, revoked_at, "
                     "rotated_at, created_at, updated_at) VALUES ($1::text, "
                     "$2::text, $3::text, $4::int, $5::text, $6::bigint, 0, "
                     "0, $7::bigint, $7::bigint) RETURNING " TOKEN_COLS,
                     7},
    [Q_TOKEN_UPD] = {"token_upd",
                     "UPDATE service_tokens SET scopes = CASE WHEN $2::int = "
                     "1 THEN $3::int ELSE scopes END, expires_at = CASE WHEN "
                     "$4::int = 1 THEN $5::bigint ELSE expires_at END, "
                     "revoked_at = CASE WHEN $6::int = 1 AND revoked_at = 0 "
                     "THEN $7::bigint ELSE revoked_at END, updated_at = "
                     "$7::bigint WHERE id = $1::text RETURNING " TOKEN_COLS,
                     7},
    [Q_TOKEN_ROT] = {"token_rot",
                     "UPDATE service_tokens SET secret_hash = $2::text, "
                     "rotated_at = $3::bigint, updated_at = $3::bigint WHERE "
                     "id = $1::text RETURNING " TOKEN_COLS,
                     3},
    [Q_TOKEN_DEL_POL] = {"token_del_pol",
                         "DELETE FROM agent_policies WHERE subject_kind = 1 "
                         "AND subject = $1::text",
                         1},
    [Q_TOKEN_DEL] = {"token_del",
                     "DELETE FROM service_tokens WHERE id = $1::text "
                     "RETURNING id",
                     1},
    [Q_AGENT_INS] = {"agent_ins",
                     "INSERT INTO agents (name, owner, enabled, created_at, "
                     "updated_at) VALUES ($1::text, $2::text, $3::int, "
                     "$4::bigint, $4::bigint) RETURNING " AGENT_COLS,
                     4},
    [Q_AGENT_UPD] = {"agent_upd",
                     "UPDATE agents SET enabled = CASE WHEN $2::int = 1 THEN "
                     "$3::int ELSE enabled END, owner = CASE WHEN $4::int = 1 "
                     "THEN $5::text ELSE owner END, updated_at = $6::bigint "
                     "WHERE name = $1::text RETURNING " AGENT_COLS,
                     6},
    [Q_AGENT_DEL] = {"agent_del",
                     "DELETE FROM agents WHERE name = $1::text RETURNING name",
                     1},
    [Q_POL_INS] = {"pol_ins",
                   "INSERT INTO agent_policies (id, agent, subject_kind, "
                   "subject, host_pattern, port_min, port_max, protocol, "
                   "created_at, updated_at) SELECT $1::text, $2::text, "
                   "$3::int, $4::text, $5::text, $6::int, $7::int, $8::int, "
                   "$9::bigint, $9::bigint WHERE " SUBJECT_EXISTS("$3", "$4")
                   " RETURNING " POLICY_COLS,
                   9},
    [Q_POL_UPD] = {"pol_upd",
                   "UPDATE agent_policies SET subject_kind = CASE WHEN "
                   "$2::int = 1 THEN $3::int ELSE subject_kind END, subject = "
                   "CASE WHEN $2::int = 1 THEN $4::text ELSE subject END, "
                   "host_pattern = CASE WHEN $5::int = 1 THEN $6::text ELSE "
                   "host_pattern END, port_min = CASE WHEN $7::int = 1 THEN "
                   "$8::int ELSE port_min END, port_max = CASE WHEN $7::int = "
                   "1 THEN $9::int ELSE port_max END, protocol = CASE WHEN "
                   "$10::int = 1 THEN $11::int ELSE protocol END, updated_at "
                   "= $12::bigint WHERE id = $1::text AND ($2::int = 0 OR "
                   SUBJECT_EXISTS("$3", "$4") ") RETURNING " POLICY_COLS,
                   12},
    [Q_GUARD_SCOPES] = {"guard_scopes",
                        "SELECT NOT EXISTS (SELECT 1 FROM service_tokens "
                        "WHERE id = $1::text AND (agent IS NOT NULL) <> "
                        "(($2::int & 2) <> 0))",
                        2},
    [Q_GUARD_OWNER] = {"guard_owner",
                       "WITH RECURSIVE up(name, depth) AS (SELECT $2::text, 0 "
                       "UNION ALL SELECT u.owner, up.depth + 1 FROM users u "
                       "JOIN up ON u.name = up.name WHERE u.owner IS NOT "
                       "NULL AND up.depth < 64) SELECT NOT EXISTS (SELECT 1 "
                       "FROM up WHERE name = $1::text) AND (SELECT "
                       "max(depth) FROM up) < 64",
                       2},
    [Q_POL_DEL] = {"pol_del",
                   "DELETE FROM agent_policies WHERE id = $1::text "
                   "RETURNING id",
                   1},
    PG_POOL_STMTS
    PG_TM_STMTS
};

const pg_stmt *pg_sql_statements(size_t *n) {
  *n = Q_COUNT;
  return stmts;
}
