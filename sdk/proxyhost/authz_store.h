/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxyhost SDK: the "authz.store" service: the authorization repository
 * (users, service tokens, agents, agent policies) of the TunnelMesh
 * server, behind one contract with two providers, store_sqlite (the
 * embedded default) and store_pg (PostgreSQL).
 *
 * A store module provides two services:
 *  - "access" (access.h): the per-stream question AuthorizeStream(token,
 *    agent, protocol, host, port), with the principal a token's id, and
 *    revision(): the current authorization revision, read by
 *    the store's own poll, answered without I/O. An auth_cache in front of
 *    it is the TunnelMesh CachingStreamAuthorizer.
 *  - "authz.store" (this header): authenticating a bearer token, and
 *    reading and writing the authorization data (the admin API and
 *    proxyhostctl use it; nothing on a stream's path does).
 *
 * Service name "authz.store", major 1 (PH_AZ_STORE_MAJOR). Get it at start
 * with service_get_named(ctx, PH_AZ_STORE_SERVICE, provider,
 * PH_AZ_STORE_MAJOR, 0, &self), provider being the store instance the
 * operator named.
 *
 * Threads: loop thread only, for every call and every callback. A store
 * never blocks the loop: store_sqlite runs its statements on the host's
 * helper threads, store_pg talks to PostgreSQL asynchronously on the loop.
 *
 * Callbacks: exactly one per accepted call, on the loop thread, never from
 * inside the call itself, never after cancel returned. Everything a result
 * points to is valid only during the callback: copy what you keep. The
 * provider copies every string of a request before the call returns.
 * Requests still unanswered when the provider is destroyed are dropped
 * without a call (the host destroys a service's users first).
 *
 * The revision: every write below that changes
 * what an authorization may answer raises authorization_revision by
 * exactly one, in the same database transaction as the change, inside
 * the store. A write that fails changes neither the data nor the
 * revision. After a write committed, the store's access revision()
 * reports the new revision before the write's callback runs,
 * so a cache in the same process drops what it holds at once.
 *
 * Secrets: a token's secret is made by the store (at least 128 random
 * bits), returned once in the result of the create or rotate that made
 * it, and never again; the database keeps only a hash of it, compared in
 * constant time. No secret, hash or bearer string appears in a log line,
 * a metric, an error text or an SQL statement's text (they travel as
 * parameters).
 *
 * Names: user and agent names are 1..PH_AZ_NAME_MAX bytes of
 * [a-z0-9._-] starting with a letter or digit. Token ids are made by the
 * store: "tok_" and 16 lower-case hex digits; policy ids "pol_" and 16.
 * A bearer token is "<token id>.<secret>", the secret 43 characters of
 * base64url (256 bits), so that a log may show the id and never the
 * rest.
 */
#ifndef PROXYHOST_AUTHZ_STORE_H
#define PROXYHOST_AUTHZ_STORE_H

#include <stddef.h>
#include <stdint.h>

#define PH_AZ_STORE_SERVICE "authz.store"
#define PH_AZ_STORE_MAJOR 1
#define PH_AZ_STORE_MINOR 0

#define PH_AZ_NAME_MAX 64     /* user and agent names */
#define PH_AZ_ID_LEN 20       /* "tok_" / "pol_" + 16 hex digits */
#define PH_AZ_BEARER_MAX 128  /* a bearer token's length bound */
#define PH_AZ_PATTERN_MAX 255 /* a policy's host pattern */
#define PH_AZ_LIST_MAX 1000   /* rows per list call */

/* Results of every call: a ph_status (abi.h) or one of the two below. */
enum ph_az_status {
  /* PH_OK, PH_EINVAL (a malformed request: a field out of bounds, an
   * unknown kind or field; nothing changed), PH_ENOENT (no such record,
   * or a record it refers to is missing), PH_EEXIST (the name is taken),
   * PH_EBUSY (delete of a user that still owns agents or users), PH_EFULL
   * (the store's bound on calls in flight), PH_ECANCELED (never passed to
   * a callback: cancel suppresses it) */
  PH_AZ_EUNAVAILABLE = -32, /* the database did not answer or failed;
                               nothing was changed */
  PH_AZ_EOUTCOME = -33      /* the connection was lost while the commit
                               was in flight: the write may or may not have
                               happened. List the record to know. */
};

/* What a call is about. */
typedef enum ph_az_kind {
  PH_AZ_USER = 1,
  PH_AZ_TOKEN = 2,
  PH_AZ_AGENT = 3,
  PH_AZ_POLICY = 4
} ph_az_kind;

/* Token scopes (a bit set). */
enum ph_az_scope {
  PH_AZ_SCOPE_STREAM = 1u << 0, /* a client: may open streams through the
                                   agents its policies allow */
  PH_AZ_SCOPE_AGENT = 1u << 1   /* an agent: may connect as the token's
                                   agent */
};

/* Policy subjects: whom a policy allows. */
typedef enum ph_az_subject {
  PH_AZ_SUBJECT_TOKEN = 1, /* one token, by id */
  PH_AZ_SUBJECT_USER = 2   /* every stream token of one user */
} ph_az_subject;

/*
 * The records, as a list returns them and as a create or update takes
 * them. Times are Unix seconds (UTC); 0 is "never" for expires_at and
 * "not revoked" for revoked_at. Strings are NUL-terminated; NULL where a
 * field is absent.
 */
typedef struct ph_az_user {
  const char *name;
  const char *owner; /* the user that owns this one, or NULL. A user is
                        usable only while it and its owner are enabled. */
  int enabled;       /* 1 or 0 (disable/restore) */
  int64_t created_at, updated_at;
} ph_az_user;

typedef struct ph_az_token {
  const char *id;    /* made by the store at create; may be logged */
  const char *user;  /* the owner; the token is usable only while its
                        user is */
  const char *agent; /* PH_AZ_SCOPE_AGENT: the agent it authenticates;
                        NULL for a stream token */
  uint32_t scopes;   /* ph_az_scope bits, not 0 */
  int64_t expires_at;
  int64_t revoked_at;
  int64_t created_at, updated_at;
  int64_t rotated_at; /* the last rotation, 0 if never */
} ph_az_token;

typedef struct ph_az_agent {
  const char *name;
  const char *owner; /* a user */
  int enabled;
  int64_t created_at, updated_at;
} ph_az_agent;

/* Allows subject to open streams through agent to targets whose host
 * matches host_pattern and whose port is in [port_min, port_max].
 * host_pattern: "*" (any), a name ("example.com", exact), "*.example.com"
 * (any name below it, not the name itself), an address ("192.0.2.7",
 * "2001:db8::1") or a CIDR ("10.0.0.0/8", "2001:db8::/32"); names
 * compared in the normal form of access.h. An address target matches
 * only address and CIDR patterns (and "*"); a name only name patterns. */
typedef struct ph_az_policy {
  const char *id; /* made by the store at create */
  const char *agent;
  int subject_kind; /* ph_az_subject */
  const char *subject;
  const char *host_pattern;
  uint16_t port_min, port_max; /* 1..65535, min <= max */
  uint8_t protocol;            /* ph_protocol (PH_PROTO_TCP) */
  int64_t created_at, updated_at;
} ph_az_policy;

/* Which fields an update changes (a bit set; others are left as they
 * are). A field that does not belong to the kind is PH_EINVAL. */
enum ph_az_field {
  PH_AZ_F_ENABLED = 1u << 0,      /* user, agent */
  PH_AZ_F_OWNER = 1u << 1,        /* user (NULL: no owner), agent */
  PH_AZ_F_SCOPES = 1u << 2,       /* token */
  PH_AZ_F_EXPIRES = 1u << 3,      /* token */
  PH_AZ_F_REVOKED = 1u << 4,      /* token: revoke (revoked_at = now);
                                     there is no un-revoke */
  PH_AZ_F_SUBJECT = 1u << 5,      /* policy: subject_kind and subject */
  PH_AZ_F_HOST = 1u << 6,         /* policy */
  PH_AZ_F_PORTS = 1u << 7,        /* policy: port_min and port_max */
  PH_AZ_F_PROTOCOL = 1u << 8      /* policy */
};

/* One record of any kind; kind says which member is meant. */
typedef struct ph_az_record {
  int kind; /* ph_az_kind */
  union {
    ph_az_user user;
    ph_az_token token;
    ph_az_agent agent;
    ph_az_policy policy;
  } u;
} ph_az_record;

/*
 * A write. size = sizeof(ph_az_write) of the caller's headers; zero what
 * you do not use. Growth as in access.h: later minors add fields at the
 * end, a zero field keeps the old behaviour.
 */
typedef enum ph_az_action {
  PH_AZ_CREATE = 1, /* rec holds the new record (ids and times are made
                       by the store and ignored here) */
  PH_AZ_UPDATE = 2, /* rec names the record (name or id) and holds the
                       new values of the fields in `fields` */
  PH_AZ_DELETE = 3, /* rec names the record. Deleting a user deletes its
                       tokens and every policy naming it or one of its
                       tokens (PH_EBUSY while it owns agents or users);
                       deleting an agent deletes its policies and its
                       agent tokens; deleting a token deletes the
                       policies naming it. */
  PH_AZ_ROTATE = 4  /* tokens: a new secret for rec.u.token.id, the old
                       one stops working in the same transaction */
} ph_az_action;

typedef struct ph_az_write {
  uint32_t size;
  int action;      /* ph_az_action */
  uint32_t fields; /* PH_AZ_UPDATE: ph_az_field bits */
  ph_az_record rec;
  void *reserved[4];
} ph_az_write;

typedef struct ph_az_write_result {
  uint32_t size;      /* the provider's sizeof */
  int status;         /* PH_OK or a ph_az_status */
  uint64_t revision;  /* PH_OK: the revision after the write (it moved
                         by one); else 0 */
  ph_az_record rec;   /* PH_OK: the record as stored (kind 0 after a
                         delete) */
  const char *bearer; /* create/rotate of a token: "<id>.<secret>", the
                         only time it is ever shown; NULL otherwise. The
                         provider wipes it after the callback. */
  const char *detail; /* not PH_OK: a short reason for the operator
                         ("owner does not exist"), never data, secrets or
                         database text; may be NULL */
  void *reserved[4];
} ph_az_write_result;

typedef void (*ph_az_write_cb)(void *arg, const ph_az_write_result *res);

/* A list: records of one kind in the order of their name or id, after
 * `after` (exclusive; NULL: from the start), at most limit
 * (1..PH_AZ_LIST_MAX). Filters: user (tokens of that user, users owned by
 * it, agents owned by it) and agent (policies and agent tokens of that
 * agent); NULL: no filter. */
typedef struct ph_az_list {
  uint32_t size;
  int kind;
  const char *after;
  uint32_t limit;
  const char *user;
  const char *agent;
  void *reserved[4];
} ph_az_list;

typedef struct ph_az_list_result {
  uint32_t size;
  int status;               /* PH_OK or a ph_az_status */
  const ph_az_record *recs; /* n records */
  size_t n;
  int more;                 /* 1 when records remain after the last */
  uint64_t revision;        /* the revision the rows were read at */
  void *reserved[4];
} ph_az_list_result;

typedef void (*ph_az_list_cb)(void *arg, const ph_az_list_result *res);

/* Authentication of a bearer token: who is it? */
typedef enum ph_az_auth_verdict {
  PH_AZ_AUTH_OK = 1,         /* known, not revoked, not expired, its user
                                (and the user's owner) enabled, and for an
                                agent token its agent enabled */
  PH_AZ_AUTH_DENY = 2,       /* anything else; the reason is not told to
                                the peer (a log line may say it, by id) */
  PH_AZ_AUTH_UNAVAILABLE = 3 /* the store could not answer: deny */
} ph_az_auth_verdict;

typedef struct ph_az_auth_result {
  uint32_t size;
  int verdict;         /* ph_az_auth_verdict; zero is no verdict: deny */
  ph_az_token token;   /* PH_AZ_AUTH_OK: the token (no secret) */
  uint32_t ttl_ms;     /* how long the caller may keep this answer */
  uint64_t revision;   /* the revision it was computed under */
  void *reserved[4];
} ph_az_auth_result;

typedef void (*ph_az_auth_cb)(void *arg, const ph_az_auth_result *res);

typedef struct ph_az_store_v1 {
  /* Authenticates "<id>.<secret>" (len bytes, at most PH_AZ_BEARER_MAX;
   * copied and wiped). The secret is compared in constant time against
   * the stored hash; a malformed bearer is a DENY, not an error. Returns
   * an id > 0, or PH_EINVAL (NULL bearer or cb), PH_ENOMEM, and then cb
   * is never called. */
  int64_t (*authenticate)(void *self, const char *bearer, size_t len,
                          ph_az_auth_cb cb, void *arg);
  /* Runs one write in one transaction with its revision step. Returns an
   * id > 0, or a negative ph_status (PH_EINVAL for a NULL or malformed
   * request, PH_ENOMEM) and then cb is never called. */
  int64_t (*write)(void *self, const ph_az_write *w, ph_az_write_cb cb,
                   void *arg);
  /* Reads one page. Returns an id > 0 or a negative ph_status, as write. */
  int64_t (*list)(void *self, const ph_az_list *l, ph_az_list_cb cb,
                  void *arg);
  /* Abandons a call: its callback is not called. A write already sent to
   * the database may still commit. PH_OK or PH_ENOENT. */
  int (*cancel)(void *self, int64_t id);
} ph_az_store_v1;

#endif
