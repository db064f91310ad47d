/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONFIG_FILE_H
#define SMBSPLICE_CONFIG_FILE_H

#include <stddef.h>

/**
 * struct config_entry - one thing a config file says
 * @section:	the section it is in
 * @key:	the key, or NULL where @section starts
 * @value:	its value, NULL where @section starts
 * @line:	its line in the file
 */
struct config_entry {
	char *section;
	char *key;
	char *value;
	int line;
};

/**
 * struct config_text - what a config file says, in order
 * @e:		the entries
 * @n:		how many
 * @cap:	how many @e has room for
 */
struct config_text {
	struct config_entry *e;
	unsigned n, cap;
};

int config_file_read(const char *path, struct config_text *t, char *err,
		     size_t errlen);
void config_file_free_text(struct config_text *t);

#endif /* SMBSPLICE_CONFIG_FILE_H */
