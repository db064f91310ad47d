// SPDX-License-Identifier: GPL-2.0-or-later
/* outbuf.c - an answer of the control socket, built in bounded memory
 *
 * Theory of operation: a command's answer is printed into a buffer that
 * doubles as it fills, up to a bound the caller sets (CONTROL_ANSWER_MAX):
 * an answer that would pass the bound, or that memory cannot hold, stays
 * as it was and is marked cut (@full), so the client is told rather than
 * the process growing without end.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "control/outbuf.h"

/**
 * outbuf_printf() - add to an answer
 * @ob:		the answer
 * @fmt:	printf() format
 *
 * Past @ob->max, or out of memory, the answer stays as it was and is
 * marked cut.
 */
void outbuf_printf(struct outbuf *ob, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ob->full)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(ob->p ? ob->p + ob->len : NULL,
			      ob->p ? ob->cap - ob->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (ob->p && ob->len + (size_t)n < ob->cap) {
			ob->len += (size_t)n;
			return;
		}
		size_t want = ob->cap ? ob->cap * 2 : 65536;
		char *p;

		while (want <= ob->len + (size_t)n)
			want *= 2;
		if (want > ob->max || !(p = realloc(ob->p, want))) {
			ob->full = true;
			return;
		}
		ob->p = p;
		ob->cap = want;
	}
}

/**
 * outbuf_json_str() - add a JSON string
 * @ob:	the answer
 * @s:	the text, or NULL for null
 */
void outbuf_json_str(struct outbuf *ob, const char *s)
{
	if (!s) {
		outbuf_printf(ob, "null");
		return;
	}
	outbuf_printf(ob, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			outbuf_printf(ob, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			outbuf_printf(ob, "\\u%04x", ch);
		else
			outbuf_printf(ob, "%c", ch);
	}
	outbuf_printf(ob, "\"");
}
