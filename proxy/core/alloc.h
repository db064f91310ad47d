/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ALLOC_H
#define SMBSPLICE_ALLOC_H

void alloc_release_free_memory(void);
const char *alloc_name(void);

#endif /* SMBSPLICE_ALLOC_H */
