// SPDX-License-Identifier: GPL-2.0-or-later
/* config_file.c - reading the INI config file
 *
 * Theory of operation: the file is parsed with libinih, not by hand. Its
 * [global] section holds the process-wide settings; every other section
 * is one listener, named by the section. Keys are the long options'
 * names, and each key goes through options_apply(), so a key means in the
 * file exactly what its option means on the command line; a key that may
 * repeat on the command line (backend, allow, congestion, stats-allow) may
 * repeat in a section. Flags take yes or no.
 *
 * The parse stops at the first error, and the complaint names the file,
 * the line and the key: an unknown key, a key in the wrong section, a bad
 * value, a section twice, or a line that is not INI at all. Nothing is
 * half applied: the caller gets a whole configuration or an error.
 *
 * libinih reads a line into a buffer whose size was fixed when the library
 * was built, and a longer line is cut: its tail would be parsed as a line
 * of its own, so a long comment ending in "workers = 0" would set workers.
 * The file is therefore read here, a whole line at a time, and a line that
 * would not fit the buffer libinih offers stops the parse with FILE:LINE.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ini.h>

#include "config_file.h"

/**
 * struct load - the state of one parse
 * @c:		the configuration being filled
 * @l:		the current section's listener, NULL in [global]
 * @section:	the current section's name
 * @seen:	keys given in the current section
 * @err:	the complaint, once a key failed
 * @errlen:	its size
 */
struct load {
	struct config *c;
	struct listen_opts *l;
	char section[OPT_NAME_LEN];
	bool seen[128];
	char *err;
	size_t errlen;
};

/**
 * struct reader - the file, handed to libinih a line at a time
 * @f:		the file
 * @buf:	the last line read (getline())
 * @cap:	its allocation
 * @line:	its number
 * @too_long:	line number of a line too long for libinih, 0 if none
 * @limit:	the longest line libinih takes, once one was too long
 */
struct reader {
	FILE *f;
	char *buf;
	size_t cap;
	int line;
	int too_long;
	size_t limit;
};

/**
 * read_line() - libinih's reader: the next whole line, or the end
 * @str:	libinih's buffer
 * @num:	its size
 * @stream:	the struct reader
 *
 * A line that does not fit in @num bytes with a newline and a NUL is not
 * cut: the parse ends there, and config_load() reports it. A "\r" before
 * the newline is dropped (libinih would strip it anyway).
 *
 * Return: @str, or NULL at the end of the file, on a read error, or after
 * a line too long.
 */
static char *read_line(char *str, int num, void *stream)
{
	struct reader *r = stream;
	ssize_t n = getline(&r->buf, &r->cap, r->f);
	size_t body;

	if (n < 0 || num < 4)
		return NULL;
	r->line++;
	body = (size_t)n;
	while (body && (r->buf[body - 1] == '\n' || r->buf[body - 1] == '\r'))
		body--;
	/* The text goes on with "\n" and a NUL. */
	if (body > (size_t)num - 2) {
		r->too_long = r->line;
		r->limit = (size_t)num - 2;
		return NULL;
	}
	memcpy(str, r->buf, body);
	memcpy(str + body, "\n", 2);
	return str;
}

/**
 * start_section() - a new section begins
 * @ld:		the parse
 * @name:	its name
 *
 * Return: 1 to go on, 0 after setting the complaint.
 */
static int start_section(struct load *ld, const char *name)
{
	struct config *c = ld->c;

	if (strlen(name) >= sizeof(ld->section) || !*name) {
		snprintf(ld->err, ld->errlen,
			 "[%s]: a section name of 1 to %zu characters, please",
			 name, sizeof(ld->section) - 1);
		return 0;
	}
	snprintf(ld->section, sizeof(ld->section), "%s", name);
	memset(ld->seen, 0, sizeof(ld->seen));
	if (!strcmp(name, "global")) {
		ld->l = NULL;
		return 1;
	}
	for (unsigned i = 0; i < c->nls; i++)
		if (!strcmp(c->ls[i].name, name)) {
			snprintf(
				ld->err, ld->errlen,
				"[%s] appears twice; each listener is one section",
				name);
			return 0;
		}
	if (c->nls == CONFIG_MAX_LISTENERS) {
		snprintf(ld->err, ld->errlen, "[%s]: at most %u listeners",
			 name, CONFIG_MAX_LISTENERS);
		return 0;
	}
	ld->l = &c->ls[c->nls++];
	listen_opts_defaults(ld->l, name);
	return 1;
}

/**
 * on_key() - libinih's handler: one key, or a new section
 * @user:	the parse
 * @section:	the section the key is in
 * @key:	the key, or NULL when a section starts
 * @value:	its value
 *
 * Return: 1 to go on, 0 to stop the parse at this line.
 */
static int on_key(void *user, const char *section, const char *key,
		  const char *value)
{
	struct load *ld = user;

	if (!key)
		return start_section(ld, section);
	if (!*section) {
		snprintf(
			ld->err, ld->errlen,
			"%s: a key before any section; put it under [global] or a listener's [name]",
			key);
		return 0;
	}
	if (strcmp(section, ld->section) && !start_section(ld, section))
		return 0;
	return options_apply(ld->c, ld->l, key, value, ld->seen, ld->err,
			     ld->errlen) == OPT_OK;
}

/**
 * config_load() - read a config file into @c
 * @c:		the configuration, with defaults; its listeners come from
 *		the file
 * @path:	the file
 * @err:	buffer for the one-line complaint, on OPT_BAD
 * @errlen:	its size
 *
 * Return: OPT_OK or OPT_BAD.
 */
enum opt_result config_load(struct config *c, const char *path, char *err,
			    size_t errlen)
{
	char why[400] = "";
	struct load ld = { .c = c, .err = why, .errlen = sizeof(why) };
	struct reader rd = { 0 };
	int line;

	_Static_assert(sizeof(ld.seen) >= 64, "a seen flag per option");
	options_defaults(&c->o);
	c->nls = 0;
	ini_stop_on_first_error = true;
	ini_allow_multiline = false;
	rd.f = fopen(path, "re");
	if (rd.f) {
		line = ini_parse_stream(read_line, &rd, on_key, &ld);
		/* A key before it failed: that is the first error. */
		if (rd.too_long && (!line || line > rd.too_long)) {
			line = rd.too_long;
			snprintf(why, sizeof(why), "line longer than %zu bytes",
				 rd.limit);
		}
		free(rd.buf);
		fclose(rd.f);
	} else {
		line = -1;
	}
	if (line < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s%s", path,
			 line == -1 ? strerror(e) : "out of memory",
			 line == -1 && e == EACCES && geteuid()
				 ? " (smbsplice no longer runs as root: the"
				   " file must be readable by its --user)"
				 : "");
		return OPT_BAD;
	}
	if (line > 0) {
		snprintf(err, errlen, "%s:%d: %s", path, line,
			 *why ? why
			      : "not a section, a key = value, or a comment");
		return OPT_BAD;
	}
	/* The file names itself, so that a reload reads it again. */
	snprintf(c->o.config, sizeof(c->o.config), "%s", path);
	return OPT_OK;
}
