/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONFIG_FILE_H
#define SMBSPLICE_CONFIG_FILE_H

#include <stddef.h>

#include "options.h"

enum opt_result config_load(struct config *c, const char *path, char *err,
			    size_t errlen);

#endif /* SMBSPLICE_CONFIG_FILE_H */
