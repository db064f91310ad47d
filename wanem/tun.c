// SPDX-License-Identifier: GPL-2.0-or-later
/* tun.c - a tun device in a network namespace, up, with its MTU
 *
 * Theory of operation: a tun device belongs to the namespace of the
 * thread that created it (the one that opened /dev/net/tun and attached
 * it with TUNSETIFF), and its descriptor keeps working from anywhere. So
 * the main thread enters each side's namespace in turn (proxy/netns.c),
 * makes that side's device there, sets its MTU and brings it up through a
 * socket of that namespace, and comes home. The device lives as long as
 * the descriptor: when smbsplice-wanem exits, both devices and their
 * addresses and routes vanish, whatever way it ends.
 *
 * The device is IFF_TUN | IFF_NO_PI: each read() is one IP packet, each
 * write() injects one, IPv4 or IPv6 by its version nibble. Addresses and
 * routes are the caller's business (ip addr, ip route).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if.h>
#include <linux/if_tun.h>

#include "common/netns.h"
#include "tun.h"

/**
 * make() - create, size and raise the device in the current namespace
 * @ifname:	its name
 * @mtu:	its MTU
 * @err:	for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: the non-blocking descriptor, or -1 with @err set.
 */
static int make(const char *ifname, unsigned mtu, char *err, size_t errlen)
{
	struct ifreq ifr = { 0 };
	int fd, s = -1;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "/dev/net/tun: %s", strerror(errno));
		return -1;
	}
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr)) {
		snprintf(err, errlen, "cannot make tun device %s: %s%s", ifname,
			 strerror(errno),
			 errno == EBUSY || errno == EINVAL
				 ? " (a device of that name is there already)"
			 : errno == EPERM ? " (it needs CAP_NET_ADMIN)"
					  : "");
		goto fail;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto fail;
	}
	ifr.ifr_mtu = (int)mtu;
	if (ioctl(s, SIOCSIFMTU, &ifr)) {
		snprintf(err, errlen, "%s: cannot set MTU %u: %s", ifname, mtu,
			 strerror(errno));
		goto fail;
	}
	if (ioctl(s, SIOCGIFFLAGS, &ifr)) {
		snprintf(err, errlen, "%s: %s", ifname, strerror(errno));
		goto fail;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr)) {
		snprintf(err, errlen, "%s: cannot bring it up: %s", ifname,
			 strerror(errno));
		goto fail;
	}
	close(s);
	return fd;
fail:
	if (s >= 0)
		close(s);
	close(fd);
	return -1;
}

/**
 * tun_open() - a tun device in a namespace, up
 * @ns:		the namespace's path, or "" for the current one
 * @ifname:	the device's name
 * @mtu:	its MTU
 * @err:	for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: the non-blocking descriptor, or -1 with @err set.
 */
int tun_open(const char *ns, const char *ifname, unsigned mtu, char *err,
	     size_t errlen)
{
	char why[200];
	int nsfd, fd;

	if (!*ns)
		return make(ifname, mtu, err, errlen);
	nsfd = netns_open(ns, true, err, errlen);
	if (nsfd < 0)
		return -1;
	if (netns_enter(nsfd)) {
		snprintf(err, errlen, "%s: %s", ns, strerror(errno));
		close(nsfd);
		return -1;
	}
	fd = make(ifname, mtu, why, sizeof(why));
	if (fd < 0)
		snprintf(err, errlen, "%s (in %s)", why, ns);
	close(nsfd);
	if (netns_enter(netns_home())) {
		snprintf(err, errlen,
			 "cannot return to the namespace it started in: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
