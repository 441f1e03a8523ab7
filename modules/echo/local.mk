# SPDX-License-Identifier: BSD-2-Clause
# modules/echo: the echo endpoint the checker fetches through a proxy at
# the EGRESS tier (issue 26, CP-6-4): an HTTP/1 listener (the frontend
# kit's) answering GET with the peer address, the headers and the nonce
# as JSON (echo_answer.c, pure and fuzzed).
EXTRA_DIST += t/fuzz/fuzz_echo_answer.c t/integration/echo.sh

if MODULE_ECHO
module_LTLIBRARIES += %D%/echo.la
modules_echo_echo_la_SOURCES = %D%/echo.c %D%/echo_answer.c %D%/echo_answer.h
modules_echo_echo_la_CPPFLAGS = $(AM_CPPFLAGS)
modules_echo_echo_la_LDFLAGS = $(MODULE_LDFLAGS)
modules_echo_echo_la_LIBADD = modules/frontend/libphfrontend.la
dist_samples_DATA += %D%/echo.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_echo_echo_la_SOURCES = %D%/echo_keys.c
CONF_KEYS_C += %D%/echo_keys.c
%D%/echo_keys.c: %D%/echo.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=echo_keys $(srcdir)/%D%/echo.ini.sample >$@.tmp && mv $@.tmp $@

UNIT_TESTS += t/unit/lib/test_echo_answer
t_unit_lib_test_echo_answer_SOURCES = t/unit/lib/test_echo_answer.c \
	modules/checker/chk_echo.c \
	%D%/echo_answer.c %D%/echo_answer.h
t_unit_lib_test_echo_answer_CPPFLAGS = $(AM_CPPFLAGS)
t_unit_lib_test_echo_answer_LDADD = modules/frontend/libphfrontend.la

check_PROGRAMS += t/fuzz/replay_echo_answer
t_fuzz_replay_echo_answer_SOURCES = t/fuzz/replay.c t/fuzz/fuzz_echo_answer.c \
	%D%/echo_answer.c
t_fuzz_replay_echo_answer_CPPFLAGS = $(AM_CPPFLAGS)
t_fuzz_replay_echo_answer_LDADD = modules/frontend/libphfrontend.la

TESTS += t/integration/echo.sh
endif
