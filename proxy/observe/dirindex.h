/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_DIRINDEX_H
#define SMBSPLICE_DIRINDEX_H

/* dirindex.h - the two directions of a connection, as an index
 *
 * Theory of operation: every per-direction array (counters, connection
 * records, trace and timing calls) is indexed by enum dir_index; this
 * header gives the enum alone, so that a file naming a direction needs
 * none of the counter types.
 */

enum dir_index {
	DIR_TO_SERVER, /* client -> server: requests */
	DIR_TO_CLIENT, /* server -> client: responses */
	DIR_COUNT
};

#endif /* SMBSPLICE_DIRINDEX_H */
