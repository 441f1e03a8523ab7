# SPDX-License-Identifier: BSD-2-Clause
# modules/process_metrics/local.mk: the process_metrics module
# (included from Makefile.am; paths are from the top).
if MODULE_PROCESS_METRICS
module_LTLIBRARIES += %D%/process_metrics.la
modules_process_metrics_process_metrics_la_SOURCES = \
	%D%/process_metrics.c \
	modules/lib/metric_table.c modules/lib/metric_table.h
modules_process_metrics_process_metrics_la_LDFLAGS = $(MODULE_LDFLAGS)
dist_samples_DATA += %D%/process_metrics.ini.sample
# The key table, from the sample (Makefile.am: GEN_CONF_KEYS).
nodist_modules_process_metrics_process_metrics_la_SOURCES = %D%/process_metrics_keys.c
CONF_KEYS_C += %D%/process_metrics_keys.c
%D%/process_metrics_keys.c: %D%/process_metrics.ini.sample $(GEN_CONF_KEYS_AWK)
	$(GEN_CONF_KEYS) -v table=pm_keys $(srcdir)/%D%/process_metrics.ini.sample >$@.tmp && mv $@.tmp $@
endif
