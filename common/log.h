/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_LOG_H
#define SMBSPLICE_LOG_H

#include <stdint.h>

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

extern int log_verbosity;
extern const char *log_ident;

/**
 * struct log_limit - the rate limit of one kind of log line, in one thread
 * @window:	start of the current window, in whole seconds
 * @sent:	lines written in it
 * @dropped:	lines suppressed since the last one written
 */
struct log_limit {
	int64_t window;
	unsigned sent;
	unsigned long dropped;
};

/* Lines of one kind a thread may write per LOG_LIMIT_WINDOW seconds. */
#define LOG_LIMIT_BURST	 10
#define LOG_LIMIT_WINDOW 10

/**
 * struct log_field - a field of a line, for the journal (log_fields())
 * @name:	capitals, digits and '_', not starting with '_'; NULL ends
 *		a list of fields
 * @value:	its value, a string
 */
struct log_field {
	const char *name;
	const char *value;
};

void log_at(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void log_fields(const struct log_field *f, enum log_level lvl, const char *fmt,
		...) __attribute__((format(printf, 3, 4)));
void log_limited(struct log_limit *l, const struct log_field *f,
		 enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
unsigned long log_limit_expired(struct log_limit *l);
int log_start(void);
void log_stop(void);
void log_use_syslog(void);
void log_reopen(void);
uint64_t log_dropped(void);

#define log_err(...)  log_at(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                                         \
	do {                                                                   \
		if (log_verbosity > 0)                                         \
			log_at(LOG_LVL_DEBUG, __VA_ARGS__);                    \
	} while (0)

/* A line that may repeat for every client (a refusal, a parse failure):
 * at most LOG_LIMIT_BURST per LOG_LIMIT_WINDOW seconds per call site and
 * thread, and the next one written says how many were suppressed. */
#define log_rate(lvl, ...) log_rate_fields(NULL, lvl, __VA_ARGS__)
/* The same, with fields for the journal as log_fields() takes them. */
#define log_rate_fields(f, lvl, ...)                                           \
	do {                                                                   \
		static __thread struct log_limit log_rate_l_;                  \
		log_limited(&log_rate_l_, f, lvl, __VA_ARGS__);                \
	} while (0)

#endif /* SMBSPLICE_LOG_H */
