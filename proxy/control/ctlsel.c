// SPDX-License-Identifier: GPL-2.0-or-later
/* ctlsel.c - the groups `kill` names: `kill client ADDR[:PORT]`, `kill
 *	      backend ADDR[:PORT]`, `kill user [DOMAIN\\]NAME`
 *
 * Theory of operation: a command's words become a struct conn_sel
 * (conn/connview.h), which each worker matches against its own
 * connections. Only numeric addresses are read: a name would have the
 * main thread wait on DNS while every control client waits behind it.
 * An argument is checked printable before it is echoed in the answer
 * and the log line.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "control/ctlsel.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/**
 * printable() - is a command's argument fit to be echoed and logged
 * @s:		the word
 * @max:	its longest length
 *
 * Return: true for 1 to @max printable ASCII characters.
 */
static bool printable(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= max || s[n] < 0x21 || s[n] > 0x7e)
			return false;
	return n > 0;
}

/**
 * port_of() - a port number, 1 to 65535, in decimal digits alone
 * @s:	the text
 * @p:	set to it
 *
 * Return: true if @s is one.
 */
static bool port_of(const char *s, unsigned *p)
{
	size_t n = strspn(s, "0123456789");

	if (!n || n > 5 || s[n])
		return false;
	*p = (unsigned)atoi(s);
	return *p >= 1 && *p <= 65535;
}

/**
 * sel_addr() - a numeric address, with or without a port: 192.0.2.7,
 *		192.0.2.7:445, 2001:db8::7, [2001:db8::7], [2001:db8::7]:445
 * @arg:	the text, printable (printable())
 * @sel:	its @addr, @has_addr and @port are set
 *
 * A name is not looked up: the main thread would wait on DNS.
 *
 * Return: true if @arg is one.
 */
static bool sel_addr(const char *arg, struct conn_sel *sel)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)&sel->addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&sel->addr;
	const char *colon = strchr(arg, ':'), *src = arg, *port = NULL, *rb;
	char host[INET6_ADDRSTRLEN];
	size_t n = strlen(arg);
	unsigned p = 0;

	if (arg[0] == '[') {
		rb = strchr(arg, ']');
		if (!rb || (rb[1] && rb[1] != ':'))
			return false;
		src = arg + 1;
		n = (size_t)(rb - src);
		port = rb[1] ? rb + 2 : NULL;
	} else if (colon && !strchr(colon + 1, ':')) {
		n = (size_t)(colon - arg); /* IPv4:PORT; two colons are IPv6 */
		port = colon + 1;
	}
	if (!n || n >= sizeof(host) || (port && !port_of(port, &p)))
		return false;
	memcpy(host, src, n);
	host[n] = '\0';
	memset(&sel->addr, 0, sizeof(sel->addr));
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)p);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
	} else {
		return false;
	}
	sel->has_addr = true;
	sel->port = port != NULL;
	return true;
}

/**
 * sel_client() - `kill client ADDR[:PORT]`
 * @arg:	the argument
 * @sel:	set to the selector
 *
 * Return: true if @arg is an address.
 */
static bool sel_client(const char *arg, struct conn_sel *sel)
{
	sel->kind = CONN_SEL_CLIENT;
	return printable(arg, INET6_ADDRSTRLEN + 8) && sel_addr(arg, sel);
}

/**
 * sel_backend() - `kill backend HOST:PORT`: as the listener names it, or
 *		   `kill backend ADDR[:PORT]`: a numeric address (and port)
 *		   its name resolved to
 * @arg:	the argument
 * @sel:	set to the selector
 *
 * Return: true if @arg could name a backend.
 */
static bool sel_backend(const char *arg, struct conn_sel *sel)
{
	struct conn_sel a = { 0 };

	sel->kind = CONN_SEL_BACKEND;
	if (!printable(arg, sizeof(sel->text) - 1))
		return false;
	snprintf(sel->text, sizeof(sel->text), "%s", arg);
	if (sel_addr(arg, &a)) { /* an address alone: any port of it */
		sel->addr = a.addr;
		sel->has_addr = true;
		sel->port = a.port;
	}
	return true;
}

/**
 * sel_user() - `kill user NAME` or `kill user DOMAIN\\NAME`: every
 *		connection whose session setup named that user in clear
 * @arg:	the argument
 * @sel:	set to the selector
 *
 * Bytes from 0x80 up are taken as they come, so that a name `conns`
 * shows in UTF-8 can be given back; control characters, spaces and DEL
 * are not (the words are split at spaces, and the argument is logged).
 *
 * Return: true if @arg could be a user's name.
 */
static bool sel_user(const char *arg, struct conn_sel *sel)
{
	size_t n = 0;

	sel->kind = CONN_SEL_USER;
	for (; arg[n]; n++)
		if (n >= sizeof(sel->text) - 1 ||
		    (unsigned char)arg[n] < 0x21 || arg[n] == 0x7f)
			return false;
	if (!n || arg[n - 1] == '\\')
		return false;
	snprintf(sel->text, sizeof(sel->text), "%s", arg);
	return true;
}

/**
 * struct kill_kind - a group `kill` can name
 * @word:	its word after `kill`
 * @parse:	makes the selector of its argument
 * @bad:	the complaint for an argument it refuses
 */
static const struct kill_kind {
	const char *word;
	bool (*parse)(const char *arg, struct conn_sel *sel);
	const char *bad;
} kill_kinds[] = {
	{ "client", sel_client,
	  "bad client address: want ADDR, ADDR:PORT or [ADDR6]:PORT, numeric IPv4 or IPv6" },
	{ "backend", sel_backend,
	  "bad backend: want HOST:PORT as listeners prints it, or ADDR[:PORT] (at most 127 printable characters)" },
	{ "user", sel_user,
	  "bad user: want NAME or DOMAIN\\NAME as conns prints it (at most 127 bytes, no spaces or control characters)" },
};

/**
 * ctlsel_parse() - the selector of `kill WORD ARG`
 * @word:	the group's word (client, backend, user)
 * @arg:	its argument
 * @sel:	set to the selector
 * @bad:	set to the complaint when -1 is returned
 *
 * Return: 0 if @sel is set, -1 if @word names a group and @arg is not
 * one of it, -2 if @word names no group.
 */
int ctlsel_parse(const char *word, const char *arg, struct conn_sel *sel,
		 const char **bad)
{
	for (size_t i = 0; i < ARRAY_SIZE(kill_kinds); i++) {
		if (strcmp(word, kill_kinds[i].word))
			continue;
		if (kill_kinds[i].parse(arg, sel))
			return 0;
		*bad = kill_kinds[i].bad;
		return -1;
	}
	return -2;
}
