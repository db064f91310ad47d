// SPDX-License-Identifier: GPL-2.0-or-later
/* config_file.c - reading the INI config file
 *
 * Theory of operation: the file is parsed with libinih, not by hand, into
 * a list of what it says, in order: each section as it starts and each
 * key = value, with its line. What the keys mean is options.c's business:
 * options_load() applies the list, so a key means in the file exactly
 * what its option means on the command line. This file knows sections,
 * keys and lines, and nothing of any option; it calls nothing above it.
 *
 * libinih says which section a key is in, not where a section starts: a
 * section given twice in a row ([a] ... [a]) would read as one, and its
 * second "listen" as the same key given twice. So read_line() notes each
 * line that libinih will take for a section's start (its first character
 * other than a blank is '['), and the next key starts a section entry even
 * when its name is the one before; options.c then says "[a] appears twice"
 * however the two are placed.
 *
 * The read stops at the first line that is not INI at all, or a key
 * before any section; options_load() applies the entries before that
 * line first, so that whichever error comes first in the file is the one
 * reported, with FILE:LINE.
 *
 * libinih reads a line into a buffer whose size was fixed when the library
 * was built, and a longer line is cut: its tail would be parsed as a line
 * of its own, so a long comment ending in "workers = 0" would set workers.
 * The file is therefore read here, a whole line at a time, and a line that
 * would not fit the buffer libinih offers stops the read with FILE:LINE.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ini.h>

#include "conf/config_file.h"

#define CONFIG_SECTION_LEN 256

/**
 * struct reader - the file, handed to libinih a line at a time
 * @f:		the file
 * @buf:	the last line read (getline())
 * @cap:	its allocation
 * @line:	its number
 * @too_long:	line number of a line too long for libinih, 0 if none
 * @limit:	the longest line libinih takes, once one was too long
 * @out:	what was read so far
 * @section:	the current section's name, to see when it changes
 * @read_errno:	why the file could not be read to its end, 0 if it could
 * @header:	the line of the last section start read since the last key,
 *		0 if none
 * @why:	why the read stopped at a line, if libinih does not say
 */
struct reader {
	FILE *f;
	char *buf;
	size_t cap;
	int line;
	int too_long;
	size_t limit;
	struct config_text *out;
	char section[CONFIG_SECTION_LEN];
	int read_errno;
	int header;
	char why[200];
};

/**
 * starts_section() - would libinih take this line for a section's start
 * @s:		the line
 * @first:	it is the file's first line, which may begin with a UTF-8
 *		byte order mark that libinih skips
 *
 * Return: true if its first character other than a blank is '['.
 */
static bool starts_section(const char *s, bool first)
{
	if (first && !strncmp(s, "\xEF\xBB\xBF", 3))
		s += 3;
	while (isspace((unsigned char)*s))
		s++;
	return *s == '[';
}

/**
 * read_line() - libinih's reader: the next whole line, or the end
 * @str:	libinih's buffer
 * @num:	its size
 * @stream:	the struct reader
 *
 * A line that does not fit in @num bytes with a newline and a NUL is not
 * cut: the read ends there, and config_file_read() reports it. A "\r" before
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

	if (n < 0) {
		/* A directory opens, and says EISDIR at the first read. */
		r->read_errno = ferror(r->f) ? errno : 0;
		return NULL;
	}
	if (num < 4)
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
	if (starts_section(str, r->line == 1))
		r->header = r->line;
	return str;
}

/**
 * add_entry() - one more thing the file says
 * @r:		the read
 * @section:	its section
 * @key:	its key, or NULL for a section starting
 * @value:	its value
 * @line:	its line
 *
 * Return: 1, or 0 if memory ran out (the read stops, and says so).
 */
static int add_entry(struct reader *r, const char *section, const char *key,
		     const char *value, int line)
{
	struct config_text *t = r->out;
	struct config_entry *e;

	if (t->n == t->cap) {
		unsigned cap = t->cap ? 2 * t->cap : 32;
		struct config_entry *grown =
			realloc(t->e, cap * sizeof(*grown));

		if (!grown)
			goto nomem;
		t->e = grown;
		t->cap = cap;
	}
	e = &t->e[t->n];
	*e = (struct config_entry){ .line = line };
	e->section = strdup(section);
	e->key = key ? strdup(key) : NULL;
	e->value = key ? strdup(value) : NULL;
	if (!e->section || (key && (!e->key || !e->value))) {
		free(e->section);
		free(e->key);
		free(e->value);
		goto nomem;
	}
	t->n++;
	return 1;
nomem:
	snprintf(r->why, sizeof(r->why), "out of memory");
	return 0;
}

/**
 * on_key() - libinih's handler: one key, or a new section
 * @user:	the struct reader
 * @section:	the section the key is in
 * @key:	the key, or NULL when a section starts
 * @value:	its value
 *
 * Return: 1 to go on, 0 to stop the read at this line.
 */
static int on_key(void *user, const char *section, const char *key,
		  const char *value)
{
	struct reader *r = user;

	if (key && !*section) {
		snprintf(
			r->why, sizeof(r->why),
			"%s: a key before any section; put it under [global] or a listener's [name]",
			key);
		return 0;
	}
	/* libinih may or may not say when a section starts: a key after a
	 * section's line, or of another section than the last one, starts
	 * it too. */
	if (!key || r->header || strcmp(section, r->section)) {
		int at = r->header ? r->header : r->line;

		r->header = 0;
		snprintf(r->section, sizeof(r->section), "%s", section);
		if (!add_entry(r, section, NULL, NULL, at))
			return 0;
		if (!key)
			return 1;
	}
	return add_entry(r, section, key, value, r->line);
}

/**
 * config_file_read() - read a config file into a list of what it says
 * @path:	the file
 * @t:		filled with the entries before the first bad line, which
 *		the caller frees with config_file_free_text() whatever
 *		the result
 * @err:	buffer for the complaint, with FILE:LINE when a line is bad
 * @errlen:	its size
 *
 * Return: 0 if the whole file was read; a line number if the read stopped
 * at that line, with @err set (the entries before it are in @t); -1 if
 * the file could not be opened or read to its end, with @err set to
 * "FILE: cannot be read: " and why: nothing more, for this file cannot
 * know why the process is who it is (reload.c adds --user's part).
 */
int config_file_read(const char *path, struct config_text *t, char *err,
		     size_t errlen)
{
	struct reader rd = { .out = t };
	int line;

	*t = (struct config_text){ 0 };
	ini_stop_on_first_error = true;
	ini_allow_multiline = false;
	rd.f = fopen(path, "re");
	if (!rd.f) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot be read: %s", path,
			 strerror(e));
		return -1;
	}
	line = ini_parse_stream(read_line, &rd, on_key, &rd);
	/* A key before it failed: that is the first error. */
	if (rd.too_long && (!line || line > rd.too_long)) {
		line = rd.too_long;
		snprintf(rd.why, sizeof(rd.why), "line longer than %zu bytes",
			 rd.limit);
	}
	free(rd.buf);
	fclose(rd.f);
	if (rd.read_errno) {
		snprintf(err, errlen, "%s: cannot be read: %s", path,
			 strerror(rd.read_errno));
		return -1;
	}
	if (line < 0) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	if (line > 0)
		snprintf(
			err, errlen, "%s:%d: %s", path, line,
			*rd.why ? rd.why
				: "not a section, a key = value, or a comment");
	return line;
}

/**
 * config_file_free_text() - free what config_file_read() read
 * @t:	the list
 */
void config_file_free_text(struct config_text *t)
{
	for (unsigned i = 0; i < t->n; i++) {
		free(t->e[i].section);
		free(t->e[i].key);
		free(t->e[i].value);
	}
	free(t->e);
	*t = (struct config_text){ 0 };
}
