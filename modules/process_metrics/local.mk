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
endif
