"""The multichannel notice: a server that lets clients go around smbsplice
is said so, once per connection, and counted.

Against a throwaway Samba, through smbsplice with /metrics:

- Samba 4.17's default offers multichannel in its NEGOTIATE response:
  two smbclient sessions give one warning line each, naming the
  connection, and smbsplice_multichannel_total{kind="offered"} counts 2;
- smbtorture's smb2.ioctl.network_interface_info asks the server for its
  interface list (FSCTL_QUERY_NETWORK_INTERFACE_INFO): the answer is
  logged once for its connection and counted as kind="interface_list";
- with `server multi channel support = no` a session gives no line, and
  both counts stay 0.
"""
import re
import subprocess

from harness import Proxy, Samba, check, metric, need, run, scrape

OFFERED = r"warning: conn (\S+): the server offers SMB3 multichannel; .*see README\)$"
LISTED = r"warning: conn (\S+): the server sent the client its network interface list .*around smbsplice$"


def counts(px):
    m = scrape(px.stats_port)
    return (metric(m, "smbsplice_multichannel_total", kind="offered"),
            metric(m, "smbsplice_multichannel_total", kind="interface_list"))


def main():
    need("smbtorture", "samba-testsuite")
    smb = Samba(conf_extra="[global]\nserver multi channel support = yes\n")
    px = Proxy(smb.addr, stats=True)
    for _ in range(2):
        smb.smbclient(px.port, cmd="ls")
    lines = px.wait_log(OFFERED, count=2)
    px.wait_log(r" conn \S+ -> .* end=", count=2)
    conns = [c["client"] for c in px.conn_lines()]
    check(len(lines) == 2 and sorted(lines) == sorted(conns),
          f"multichannel offered: one line per connection, naming it ({lines}, connections {conns})")
    check(counts(px) == (2, 0), f"... counted: (offered, interface_list) = {counts(px)}")

    argv = ["smbtorture", "//127.0.0.1/share", "-p", str(px.port), "-U", f"root%{smb.password}",
            "smb2.ioctl.network_interface_info"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    check(re.search(r"^success: network_interface_info", r.stdout, re.M),
          f"smbtorture smb2.ioctl.network_interface_info succeeds through smbsplice "
          f"({(r.stdout + r.stderr).strip().splitlines()[-1:]})")
    listed = px.wait_log(LISTED)
    check(len(listed) == 1, f"the interface list is logged once: {listed}")
    offered, il = counts(px)
    check(il >= 1 and offered >= 3, f"... counted: (offered, interface_list) = {(offered, il)}")
    px.stop()
    smb.stop()

    smb = Samba(conf_extra="[global]\nserver multi channel support = no\n")
    px = Proxy(smb.addr, stats=True)
    smb.smbclient(px.port, cmd="ls")
    px.wait_log(r" conn \S+ -> .* end=")
    check(not re.search(OFFERED, px.log(), re.M) and counts(px) == (0, 0),
          f"server multi channel support = no: no line, counts {counts(px)}")
    px.stop()
    smb.stop()


if __name__ == "__main__":
    run(main)
