/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_LOG_H
#define SMBSPLICE_LOG_H

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

extern int log_verbosity;

void log_at(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...)  log_at(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)                                                         \
	do {                                                                   \
		if (log_verbosity > 0)                                         \
			log_at(LOG_LVL_DEBUG, __VA_ARGS__);                    \
	} while (0)

#endif /* SMBSPLICE_LOG_H */
