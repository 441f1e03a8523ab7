/* SPDX-License-Identifier: BSD-2-Clause */
/* The Lua scripts of lua/, as C strings. Defined in the generated
 * ro_lua.c (scripts/embed-sql.sh, run by local.mk); only ro_scripts.c
 * reads them. */
#ifndef PH_RO_LUA_H
#define PH_RO_LUA_H

extern const char ro_lua_prelude[];
extern const char ro_lua_register[];
extern const char ro_lua_next_version[];
extern const char ro_lua_issue[];
extern const char ro_lua_ack[];
extern const char ro_lua_runtime[];
extern const char ro_lua_outcomes[];
extern const char ro_lua_assign[];
extern const char ro_lua_owned[];
extern const char ro_lua_usable[];
extern const char ro_lua_extract[];
extern const char ro_lua_checker_register[];
extern const char ro_lua_checker_alive[];
extern const char ro_lua_health[];
extern const char ro_lua_members[];
extern const char ro_lua_passive[];

#endif
