// SPDX-License-Identifier: GPL-2.0-or-later
/* test_config.c - the config file: listeners from sections, [global], the
 * command line over [global], and one line naming file, line and key for
 * every kind of mistake */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/options.h"

static struct config c;
static char path[64];

/* Write @text to a fresh file; its name is in @path. */
static void write_file(const char *text)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/smbsplice-test-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Parse "smbsplice -c FILE [extra]" for the file @text. */
static enum opt_result parse(const char *text, const char *extra1,
			     const char *extra2, char *err, size_t errlen)
{
	char *argv[] = { "smbsplice",	 "-c",		 path,
			 (char *)extra1, (char *)extra2, NULL };
	int argc = extra1 ? (extra2 ? 5 : 4) : 3;
	enum opt_result r;

	write_file(text);
	r = options_parse(&c, argc, argv, false, err, errlen);
	unlink(path);
	return r;
}

static void test_two_listeners(void **state)
{
	char err[256] = "";

	assert_int_equal(parse("# two listeners, one process\n"
			       "[global]\n"
			       "workers = 3\n"
			       "max-pipes = 64\n"
			       "stats = 127.0.0.1:9445\n"
			       "\n"
			       "[office]\n"
			       "listen = 127.0.0.1:4450\n"
			       "backend = 127.0.0.1:1445\n"
			       "backend = 127.0.0.1:1446\n"
			       "read-threshold = 64K\n"
			       "allow = 192.0.2.0/24\n"
			       "allow = 2001:db8::/32\n"
			       "\n"
			       "[wan]\n"
			       "listen = [::1]:4451\n"
			       "backend = [::1]:2445\n"
			       "mode = tcp\n"
			       "keepalive = off\n"
			       "no-splice = yes\n"
			       "transparent = no\n",
			       NULL, NULL, err, sizeof(err)),
			 OPT_OK);
	assert_int_equal(c.nls, 2);
	assert_int_equal(c.o.workers, 3);
	assert_int_equal(c.o.max_pipes, 64);
	assert_true(c.o.stats.len > 0);
	assert_string_equal(c.ls[0].name, "office");
	assert_int_equal(c.ls[0].nbackends, 2);
	assert_int_equal(c.ls[0].th.min[SMB_CLASS_READ], 65536);
	assert_int_equal(c.ls[0].nallow, 2);
	assert_int_equal(c.ls[0].mode, MODE_SMB);
	assert_string_equal(c.ls[1].name, "wan");
	assert_int_equal(c.ls[1].mode, MODE_TCP);
	assert_int_equal(c.ls[1].keepalive.idle, 0);
	assert_false(c.ls[1].splice);
	assert_false(c.ls[1].transparent);
	/* Defaults per listener are the command line's. */
	assert_int_equal(c.ls[1].th.min[SMB_CLASS_WRITE],
			 OPT_DEFAULT_THRESHOLD);
	assert_string_equal(c.o.config, path);
}

/* The command line's process-wide options win over [global]. */
static void test_command_line_over_global(void **state)
{
	char err[256] = "";

	assert_int_equal(
		parse("[global]\nworkers = 3\nmax-pipes = 64\n"
		      "[a]\nlisten = 127.0.0.1:1\nbackend = 127.0.0.1:2\n",
		      "--workers", "1", err, sizeof(err)),
		OPT_OK);
	assert_int_equal(c.o.workers, 1);
	assert_int_equal(c.o.max_pipes, 64);
	/* A list on the command line replaces the file's, as a value does. */
	assert_int_equal(
		parse("[global]\nstats-allow = 192.0.2.0/24\n"
		      "stats-allow = 198.51.100.0/24\n"
		      "[a]\nlisten = 127.0.0.1:1\nbackend = 127.0.0.1:2\n",
		      "--stats-allow", "10.0.0.0/8", err, sizeof(err)),
		OPT_OK);
	assert_int_equal(c.o.nstats_allow, 1);
	assert_int_equal(c.o.stats_allow[0].addr[0], 10);
}

/* Each mistake: exit status 2 (OPT_BAD), one line, naming file, line and
 * key. */
static void expect_bad(const char *text, const char *extra1, const char *extra2,
		       const char *needle1, const char *needle2)
{
	char err[512] = "";

	assert_int_equal(parse(text, extra1, extra2, err, sizeof(err)),
			 OPT_BAD);
	if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
		fail_msg("'%s' lacks '%s' or '%s'", err, needle1,
			 needle2 ? needle2 : "");
	assert_null(strchr(err, '\n'));
}

static void test_mistakes(void **state)
{
	static const char lst[] =
		"listen = 127.0.0.1:1\nbackend = 127.0.0.1:2\n";
	char text[512];

	snprintf(text, sizeof(text), "[a]\n%sfrobnicate = 1\n", lst);
	expect_bad(text, NULL, NULL, ":4: unknown key 'frobnicate'", path);
	snprintf(text, sizeof(text), "[a]\n%sworkers = 2\n", lst);
	expect_bad(text, NULL, NULL, ":4: workers belongs in [global]", NULL);
	expect_bad("[global]\nread-threshold = 64K\n", NULL, NULL,
		   ":2: read-threshold belongs in a listener's section", NULL);
	snprintf(text, sizeof(text), "[a]\n%sread-threshold = huge\n", lst);
	expect_bad(text, NULL, NULL, ":4: read-threshold 'huge'", NULL);
	snprintf(text, sizeof(text), "[a]\n%smode = tcp\nmode = smb\n", lst);
	expect_bad(text, NULL, NULL, ":5: mode given twice", NULL);
	snprintf(text, sizeof(text), "[a]\n%s[b]\n%s[a]\n%s", lst, lst, lst);
	expect_bad(text, NULL, NULL, "[a] appears twice", NULL);
	/* In a row too: libinih reads the two as one section. */
	snprintf(text, sizeof(text), "[a]\n%s [a]\n%s", lst, lst);
	expect_bad(text, NULL, NULL, ":4: [a] appears twice", NULL);
	snprintf(text, sizeof(text),
		 "[global]\nworkers = 1\n[global]\nworkers = 2\n[a]\n%s", lst);
	expect_bad(text, NULL, NULL, ":3: [global] appears twice", NULL);
	snprintf(text, sizeof(text),
		 "[global]\nworkers = 1\n[a]\n%s[global]\nworkers = 2\n", lst);
	expect_bad(text, NULL, NULL, ":6: [global] appears twice", NULL);
	snprintf(text, sizeof(text), "[a]\n%stransparent = maybe\n", lst);
	expect_bad(text, NULL, NULL, ":4: transparent 'maybe'", NULL);
	expect_bad("listen = 127.0.0.1:1\n", NULL, NULL,
		   "a key before any section", NULL);
	expect_bad("[a]\nthis is not ini\n", NULL, NULL, ":2:", NULL);
	expect_bad("[a]\nlisten = 127.0.0.1:1\n", NULL, NULL,
		   "listener a: listen and backend are both required", NULL);
	snprintf(text, sizeof(text), "[a]\n%s[b]\n%s", lst, lst);
	expect_bad(text, NULL, NULL, "both listen on 127.0.0.1:1", NULL);
	expect_bad("[global]\n", NULL, NULL, "no listener", NULL);
	snprintf(text, sizeof(text), "[a]\n%s", lst);
	expect_bad(text, "--mode", "tcp", "listeners are described in the file",
		   NULL);
	snprintf(text, sizeof(text), "[a]\n%shelp = yes\n", lst);
	expect_bad(text, NULL, NULL, "unknown key 'help'", NULL);
	/* '#' starts a comment only at the start of a line */
	snprintf(text, sizeof(text), "[a]\n%sallow = 10.0.0.0/8 # office\n",
		 lst);
	expect_bad(
		text, NULL, NULL,
		":4: allow '10.0.0.0/8 # office': expected a network such as 192.0.2.0/24, 2001:db8::/32 or an address; a comment after a value starts with ';', not '#'",
		NULL);
}

/* libinih cuts a line at its buffer's size and parses the tail as a line
 * of its own: a long line is refused, not cut into a live setting. */
static void test_long_line(void **state)
{
	static const char lst[] =
		"listen = 127.0.0.1:1\nbackend = 127.0.0.1:2\n";
	char text[6000], fits[200];
	char err[512] = "";

	snprintf(fits, sizeof(fits), "# %0*d", 150, 0);
	snprintf(text, sizeof(text), "[global]\n%s\n[a]\n%s", fits, lst);
	assert_int_equal(parse(text, NULL, NULL, err, sizeof(err)), OPT_OK);

	snprintf(text, sizeof(text), "[global]\n# %0*d workers = 0\n[a]\n%s",
		 5000, 0, lst);
	expect_bad(text, NULL, NULL, ":2: line longer than ", path);
	assert_non_null(strstr(text, "workers = 0"));
	/* Exactly the limit it names fits, one more does not, CRLF or not. */
	{
		char cut[80];
		unsigned limit;

		parse(text, NULL, NULL, cut, sizeof(cut));
		assert_int_equal(sscanf(strstr(cut, "longer than "),
					"longer than %u bytes", &limit),
				 1);
		assert_true(limit >= 150 && limit < 5000);
		for (int crlf = 0; crlf < 2; crlf++) {
			snprintf(text, sizeof(text), "[a]\n%s# %0*d%s\n", lst,
				 (int)limit - 2, 0, crlf ? "\r" : "");
			assert_int_equal(
				parse(text, NULL, NULL, err, sizeof(err)),
				OPT_OK);
			snprintf(text, sizeof(text), "[a]\n%s# %0*d%s\n", lst,
				 (int)limit - 1, 0, crlf ? "\r" : "");
			expect_bad(text, NULL, NULL, ":4: line longer than ",
				   NULL);
		}
	}
	/* The same at the end of a file without a final newline. */
	snprintf(text, sizeof(text), "[a]\n%s# %0*d", lst, 3000, 0);
	expect_bad(text, NULL, NULL, ":4: line longer than ", NULL);
}

static void test_missing_file(void **state)
{
	char *argv[] = { "smbsplice", "-c", "/nonexistent/smbsplice.conf",
			 NULL };
	char err[256] = "";

	assert_int_equal(options_parse(&c, 3, argv, false, err, sizeof(err)),
			 OPT_BAD);
	assert_non_null(strstr(
		err,
		"/nonexistent/smbsplice.conf: cannot be read: No such file"));
}

/* Every option but the command line's own is a config key, and --help
 * names every one. */
static void test_every_option_documented(void **state)
{
	char *help = NULL, name[80];
	size_t len = 0;
	FILE *f = open_memstream(&help, &len);
	bool in_file;
	const char *o;

	options_usage(f);
	fclose(f);
	for (unsigned i = 0; (o = options_name(i, &in_file)); i++) {
		snprintf(name, sizeof(name), "--%s", o);
		if (!strstr(help, name))
			fail_msg("--help lacks %s", name);
	}
	assert_true(options_count() > 30);
	free(help);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_listeners),
		cmocka_unit_test(test_command_line_over_global),
		cmocka_unit_test(test_mistakes),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_every_option_documented),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
