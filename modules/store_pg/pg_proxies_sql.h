/* SPDX-License-Identifier: BSD-2-Clause */
/* pool.store's statements for store_pg (pg_proxies.c): the entries of the
 * one statement table (pg_sql.c includes PG_POOL_STMTS in it, so every
 * connection prepares them after it connects, as the authorization
 * statements). Parameters are text cast in the SQL; keys compare and sort
 * COLLATE "C" (bytes, as SQLite), so pages are the same on both engines.
 * A proxy's groups come as one text column, the names sorted and joined
 * by ',' (a name never has one). */
#ifndef PH_STORE_PG_PROXIES_SQL_H
#define PH_STORE_PG_PROXIES_SQL_H

#define PG_PROXY_COLS                                                       \
  "p.proxy_id, p.protocol, p.host, p.port, p.zone, p.capacity, p.weight, " \
  "p.expires_at_ms, coalesce(p.secret_ref, ''), "                          \
  "coalesce(c.credential_version, 0), p.admin_state, coalesce((SELECT "     \
  "string_agg(g.group_name, ',' ORDER BY g.group_name COLLATE \"C\") FROM " \
  "pool_proxy_groups g WHERE g.proxy_id = p.proxy_id), '')"
#define PG_ROUTE_COLS                                                       \
  "rule_id, position, enabled, host_pattern, port_min, port_max, "         \
  "client_identity, listener, target_group, strategy, on_unavailable, "    \
  "wait_timeout_ms, sticky_key"

#define PG_POOL_STMTS                                                       \
  [Q_POOL_REVISION] = {"pool_revision",                                     \
                       "SELECT revision FROM pool_revision WHERE id = 1",   \
                       0},                                                  \
  [Q_POOL_BUMP] = {"pool_bump",                                             \
                   "UPDATE pool_revision SET revision = revision + 1, "     \
                   "updated_at = to_char(now() AT TIME ZONE 'UTC', "        \
                   "'YYYY-MM-DD HH24:MI:SS') WHERE id = 1 RETURNING "       \
                   "revision",                                              \
                   0},                                                      \
  [Q_POOL_GUARD_REV] = {"pool_guard_rev",                                   \
                        "SELECT coalesce((SELECT $1::bigint = 0 OR "        \
                        "revision = $1::bigint FROM pool_revision WHERE "   \
                        "id = 1), true)",                                   \
                        1},                                                 \
  [Q_POOL_GUARD_COUNT] = {"pool_guard_count",                               \
                          "SELECT CASE WHEN $1::int = 1 THEN (SELECT "      \
                          "count(*) FROM pool_proxies) WHEN $1::int = 2 "   \
                          "THEN (SELECT count(*) FROM pool_routes) ELSE "   \
                          "(SELECT count(*) FROM pool_credentials) END < "  \
                          "$2::bigint",                                     \
                          2},                                               \
  [Q_POOL_LIST_PROXIES] =                                                   \
      {"pool_list_proxies",                                                 \
       "SELECT " PG_PROXY_COLS " FROM pool_proxies p LEFT JOIN "            \
       "pool_credentials c ON c.secret_ref = p.secret_ref WHERE ($1::text " \
       "IS NULL OR p.proxy_id COLLATE \"C\" > $1::text) AND ($2::text IS "  \
       "NULL OR p.proxy_id = $2::text) ORDER BY p.proxy_id COLLATE \"C\" "  \
       "LIMIT $3::bigint",                                                  \
       3},                                                                  \
  [Q_POOL_LIST_ROUTES] = {"pool_list_routes",                               \
                          "SELECT " PG_ROUTE_COLS " FROM pool_routes WHERE " \
                          "position >= $1::bigint AND ($2::text IS NULL "   \
                          "OR rule_id = $2::text) ORDER BY position LIMIT " \
                          "$3::bigint",                                     \
                          3},                                               \
  [Q_POOL_LIST_CREDS] = {"pool_list_creds",                                 \
                         "SELECT secret_ref, credential_version FROM "      \
                         "pool_credentials WHERE ($1::text IS NULL OR "     \
                         "secret_ref COLLATE \"C\" > $1::text) AND "        \
                         "($2::text IS NULL OR secret_ref = $2::text) "     \
                         "ORDER BY secret_ref COLLATE \"C\" LIMIT "         \
                         "$3::bigint",                                      \
                         3},                                                \
  [Q_PROXY_INS] = {"pool_proxy_ins",                                        \
                   "INSERT INTO pool_proxies (proxy_id, protocol, host, "   \
                   "port, zone, capacity, weight, expires_at_ms, "          \
                   "secret_ref, admin_state, created_at_ms, "               \
                   "updated_at_ms) VALUES ($1::text, $2::int, $3::text, "   \
                   "$4::int, $5::text, $6::int, $7::int, $8::bigint, "      \
                   "$9::text, $10::int, $11::bigint, $11::bigint) "         \
                   "RETURNING proxy_id",                                    \
                   11},                                                     \
  [Q_PROXY_UPD] = {"pool_proxy_upd",                                        \
                   "UPDATE pool_proxies SET protocol = $2::int, host = "    \
                   "$3::text, port = $4::int, zone = $5::text, capacity = " \
                   "$6::int, weight = $7::int, expires_at_ms = $8::bigint, " \
                   "secret_ref = $9::text, admin_state = $10::int, "        \
                   "updated_at_ms = $11::bigint WHERE proxy_id = $1::text " \
                   "RETURNING proxy_id",                                    \
                   11},                                                     \
  [Q_PROXY_STATE] = {"pool_proxy_state",                                    \
                     "UPDATE pool_proxies SET admin_state = $2::int, "      \
                     "updated_at_ms = $3::bigint WHERE proxy_id = $1::text " \
                     "RETURNING proxy_id",                                  \
                     3},                                                    \
  [Q_PROXY_DEL] = {"pool_proxy_del",                                        \
                   "DELETE FROM pool_proxies WHERE proxy_id = $1::text "    \
                   "RETURNING proxy_id",                                    \
                   1},                                                      \
  [Q_GROUPS_DEL] = {"pool_groups_del",                                      \
                    "DELETE FROM pool_proxy_groups WHERE proxy_id = "       \
                    "$1::text",                                             \
                    1},                                                     \
  [Q_GROUPS_INS] = {"pool_groups_ins",                                      \
                    "INSERT INTO pool_proxy_groups (proxy_id, group_name) " \
                    "SELECT $1::text, unnest(string_to_array($2::text, "    \
                    "','))",                                                \
                    2},                                                     \
  [Q_ROUTE_INS] = {"pool_route_ins",                                        \
                   "INSERT INTO pool_routes (" PG_ROUTE_COLS ", "           \
                   "created_at_ms, updated_at_ms) VALUES ($1::text, "       \
                   "$2::bigint, $3::int, $4::text, $5::int, $6::int, "      \
                   "$7::text, $8::text, $9::text, $10::text, $11::int, "    \
                   "$12::int, $13::text, $14::bigint, $14::bigint) "        \
                   "RETURNING rule_id",                                     \
                   14},                                                     \
  [Q_ROUTE_UPD] = {"pool_route_upd",                                        \
                   "UPDATE pool_routes SET enabled = $3::int, host_pattern " \
                   "= $4::text, port_min = $5::int, port_max = $6::int, "   \
                   "client_identity = $7::text, listener = $8::text, "      \
                   "target_group = $9::text, strategy = $10::text, "        \
                   "on_unavailable = $11::int, wait_timeout_ms = $12::int, " \
                   "sticky_key = $13::text, updated_at_ms = $14::bigint "   \
                   "WHERE rule_id = $1::text AND $2::bigint >= 0 "          \
                   "RETURNING rule_id",                                     \
                   14},                                                     \
  [Q_ROUTE_MOVE] = {"pool_route_move",                                      \
                    "UPDATE pool_routes SET position = $2::bigint, "        \
                    "updated_at_ms = $3::bigint WHERE rule_id = $1::text "  \
                    "RETURNING rule_id",                                    \
                    3},                                                     \
  [Q_ROUTE_DEL] = {"pool_route_del",                                        \
                   "DELETE FROM pool_routes WHERE rule_id = $1::text "      \
                   "RETURNING rule_id",                                     \
                   1},                                                      \
  [Q_CRED_INS] = {"pool_cred_ins",                                          \
                  "INSERT INTO pool_credentials (secret_ref, "              \
                  "credential_version, created_at_ms, updated_at_ms) "      \
                  "VALUES ($1::text, $2::bigint, $3::bigint, $3::bigint) "  \
                  "RETURNING secret_ref",                                   \
                  3},                                                       \
  [Q_CRED_ROT] = {"pool_cred_rot",                                          \
                  "UPDATE pool_credentials SET credential_version = "       \
                  "credential_version + 1, updated_at_ms = $2::bigint "     \
                  "WHERE secret_ref = $1::text RETURNING secret_ref",       \
                  2},                                                       \
  [Q_CRED_DEL] = {"pool_cred_del",                                          \
                  "DELETE FROM pool_credentials WHERE secret_ref = "        \
                  "$1::text RETURNING secret_ref",                          \
                  1},

#endif
