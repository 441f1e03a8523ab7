/* SPDX-License-Identifier: BSD-2-Clause */
/* Every SQL statement store_pg runs, prepared on each connection after it
 * connects (pg_pool.h). Values always travel as parameters, never in the
 * text. Names compare and sort with COLLATE "C" (bytes, as SQLite does),
 * so pages and cursors are the same on both engines whatever the
 * database's collation. */
#ifndef PH_STORE_PG_SQL_H
#define PH_STORE_PG_SQL_H

#include <stddef.h>

#include "pg_pool.h"

enum pg_sql_id {
  Q_REVISION = 0, /* -> revision */
  Q_BUMP,         /* the revision step of a write -> revision */
  Q_FACTS,        /* $1 token id, $2 agent -> an access check's facts */
  Q_POLICIES,     /* $1 agent, $2 token id, $3 port, $4 protocol */
  Q_AUTHN,        /* $1 token id -> token, hash, user/owner/agent state */
  Q_LIST_USERS,   /* lists: $1 after, $2 user, $3 agent, $4 limit */
  Q_LIST_TOKENS,
  Q_LIST_AGENTS,
  Q_LIST_POLICIES,
  Q_USER_INS,     /* $1 name, $2 owner, $3 enabled, $4 now */
  Q_USER_UPD,     /* $1 name, $2 set enabled, $3 enabled, $4 set owner,
                     $5 owner, $6 now */
  Q_USER_DEL_POL, /* $1 name: policies naming the user or its tokens */
  Q_USER_DEL,     /* $1 name */
  Q_TOKEN_INS,    /* $1 id, $2 user, $3 agent, $4 scopes, $5 hash,
                     $6 expires, $7 now */
  Q_TOKEN_UPD,    /* $1 id, $2 set scopes, $3 scopes, $4 set expires,
                     $5 expires, $6 revoke, $7 now */
  Q_TOKEN_ROT,    /* $1 id, $2 hash, $3 now */
  Q_TOKEN_DEL_POL,/* $1 id */
  Q_TOKEN_DEL,    /* $1 id */
  Q_AGENT_INS,    /* as Q_USER_INS */
  Q_AGENT_UPD,    /* as Q_USER_UPD */
  Q_AGENT_DEL,    /* $1 name (its policies and tokens cascade) */
  Q_POL_INS,      /* $1 id, $2 agent, $3 kind, $4 subject, $5 host,
                     $6 min, $7 max, $8 protocol, $9 now */
  Q_POL_UPD,      /* $1 id, $2 set subject, $3 kind, $4 subject,
                     $5 set host, $6 host, $7 set ports, $8 min, $9 max,
                     $10 set protocol, $11 protocol, $12 now */
  Q_POL_DEL,      /* $1 id */
  /* Guards: one row, 't' when the write may go on. */
  Q_GUARD_SCOPES, /* $1 token id, $2 new scopes: the agent scope goes with
                     the token's agent, and only with it */
  Q_GUARD_OWNER,  /* $1 user, $2 new owner: no owner loop (64 levels) */
  /* pool.store (pg_proxies_sql.h, pg_proxies.c) */
  Q_POOL_REVISION,     /* -> revision */
  Q_POOL_BUMP,         /* the pool revision step -> revision */
  Q_POOL_GUARD_REV,    /* $1 expect_revision (0: any) -> 't' */
  Q_POOL_GUARD_COUNT,  /* $1 1 proxies / 2 routes / 3 credentials, $2
                          bound -> 't' */
  Q_POOL_LIST_PROXIES, /* $1 after, $2 key, $3 limit */
  Q_POOL_LIST_ROUTES,  /* $1 from position, $2 key, $3 limit */
  Q_POOL_LIST_CREDS,   /* $1 after, $2 key, $3 limit */
  Q_PROXY_INS,         /* $1..$10 the row, $11 now */
  Q_PROXY_UPD,
  Q_PROXY_STATE,       /* $1 id, $2 state, $3 now */
  Q_PROXY_DEL,         /* $1 id (its groups cascade) */
  Q_GROUPS_DEL,        /* $1 id */
  Q_GROUPS_INS,        /* $1 id, $2 names joined by ',' */
  Q_ROUTE_INS,         /* $1..$13 the row, $14 now */
  Q_ROUTE_UPD,         /* as insert; the position ($2) is not changed */
  Q_ROUTE_MOVE,        /* $1 id, $2 position, $3 now */
  Q_ROUTE_DEL,         /* $1 id */
  Q_CRED_INS,          /* $1 ref, $2 version, $3 now */
  Q_CRED_ROT,          /* $1 ref, $2 now */
  Q_CRED_DEL,          /* $1 ref */
  Q_TM_HEARTBEAT,      /* tm.presence (pg_presence_sql.h) */
  Q_TM_AGENT_UP,
  Q_TM_AGENT_LEFT,
  Q_TM_NODE_LEAVE,
  Q_TM_AGENTS_SYNC,
  Q_TM_READ,
  Q_COUNT
};

/* Columns of the records, in the order pg_record.c reads them. */
enum { COL_USER_N = 5, COL_TOKEN_N = 9, COL_AGENT_N = 5, COL_POLICY_N = 10 };

/* The table, indexed by pg_sql_id; *n = Q_COUNT. */
const pg_stmt *pg_sql_statements(size_t *n);

#endif
