/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OPTIONS_TABLE_H
#define SMBSPLICE_OPTIONS_TABLE_H

/* options_table.h - the option table, for options*.c alone
 *
 * Theory of operation: one row per option, named field by field. The
 * parsing (options.c) walks the rows; the apply functions
 * (options_set.c) read their own row for the option's name and limits,
 * so that a limit is written once, in its row, and every complaint that
 * states it is formatted from there.
 */

#include <stdbool.h>
#include <stddef.h>

#include "conf/options.h"

enum scope {
	SCOPE_PROCESS,	/* one value for the whole process */
	SCOPE_LISTENER, /* one value per listener */
};

struct opt_def;

/**
 * typedef apply_fn - applies one value of an option
 * @d:		the option's row
 * @o:		the process-wide settings
 * @l:		the listener's, NULL in a config file's [global]
 * @arg:	the value; NULL for a flag on the command line
 * @err:	buffer for the one-line complaint, which names the option
 * @errlen:	its size
 *
 * Return: OPT_OK, OPT_EXIT (--help, --version) or OPT_BAD.
 */
typedef enum opt_result (*apply_fn)(const struct opt_def *d, struct options *o,
				    struct listen_opts *l, const char *arg,
				    char *err, size_t errlen);

/**
 * typedef same_fn - do two settings agree on a restart-only option
 * @a:	the settings in force
 * @b:	the ones just read
 *
 * Return: true if they do.
 */
typedef bool (*same_fn)(const struct options *a, const struct options *b);

/**
 * struct opt_def - one option
 * @name:		long name, and key in a config file
 * @shortc:		short letter, 0 if none
 * @metavar:		what its value looks like in --help; NULL for a flag
 * @help:		--help text; lines after the first start with a newline
 * @scope:		SCOPE_PROCESS or SCOPE_LISTENER
 * @repeat:		may be given more than once, each adding a value
 * @cli_only:		a command-line option only, not a config file key
 * @restart_only:	a reload cannot change it (it sized something made
 *			at start); a reload that does is told so
 * @min:		smallest value accepted, for a number
 * @max:		largest value accepted, for a number; for a list, how
 *			many values it holds
 * @off:		"off" is accepted too, and means 0
 * @positive:		for seconds: 0 is refused, only more is accepted; a
 *			number's limits are whole, and seconds may be 0.5
 * @hint:		words a refusal adds after what it expects, such as an
 *			example or what 0 means; NULL for none. The words
 *			differ from option to option, so the row holds them
 *			for the one apply function those options share
 *			(timeouts, sizes)
 * @field:		where the setting lives: an offset into struct options,
 *			or for SCOPE_LISTENER struct listen_opts
 * @size:		its size, for comparing it across a reload
 * @apply:		applies one value
 * @same:		compares it across a reload, if bytes cannot
 */
struct opt_def {
	const char *name;
	int shortc;
	const char *metavar;
	const char *help;
	enum scope scope;
	bool repeat;
	bool cli_only;
	bool restart_only;
	unsigned long long min, max;
	bool off;
	bool positive;
	const char *hint;
	size_t field, size;
	apply_fn apply;
	same_fn same;
};

/* How many rows opt_table has: options_table.c checks it against the
 * table itself, which is declared without a size for that reason. */
#define OPT_TABLE_LEN 66

extern const struct opt_def opt_table[];

const struct opt_def *opt_find(const char *name);
const struct opt_def *opt_find_short(int c);
void opt_number_text(unsigned long long v, bool size, char *out, size_t len);

#define OPT_APPLY(fn)                                                          \
	enum opt_result fn(const struct opt_def *d, struct options *o,         \
			   struct listen_opts *l, const char *arg, char *err,  \
			   size_t errlen)

OPT_APPLY(opt_set_count);
OPT_APPLY(opt_set_true);
OPT_APPLY(opt_set_false);
OPT_APPLY(opt_set_endpoint);
OPT_APPLY(opt_set_listen);
OPT_APPLY(opt_add_backend);
OPT_APPLY(opt_set_mode);
OPT_APPLY(opt_set_size);
OPT_APPLY(opt_set_threshold);
OPT_APPLY(opt_set_first_frame);
OPT_APPLY(opt_set_check);
OPT_APPLY(opt_set_quic_retry);
OPT_APPLY(opt_add_quic_allow);
OPT_APPLY(opt_add_quic_deny);
OPT_APPLY(opt_set_netns);
OPT_APPLY(opt_add_allow);
OPT_APPLY(opt_set_sockbuf);
OPT_APPLY(opt_add_proxy_from);
OPT_APPLY(opt_add_stats_allow);
OPT_APPLY(opt_set_source_prefix6);
OPT_APPLY(opt_set_keepalive);
OPT_APPLY(opt_set_congestion);
OPT_APPLY(opt_set_source);
OPT_APPLY(opt_set_mptcp);
OPT_APPLY(opt_set_config);
OPT_APPLY(opt_set_user);
OPT_APPLY(opt_set_trace);
OPT_APPLY(opt_set_text);
OPT_APPLY(opt_set_trace_max);
OPT_APPLY(opt_set_seconds);
OPT_APPLY(opt_set_verbose);
OPT_APPLY(opt_show_help);
OPT_APPLY(opt_show_version);

bool opt_same_stats(const struct options *a, const struct options *b);
bool opt_same_stats_allow(const struct options *a, const struct options *b);
bool opt_same_user(const struct options *a, const struct options *b);
bool opt_same_trace(const struct options *a, const struct options *b);

#endif /* SMBSPLICE_OPTIONS_TABLE_H */
