"""Real Samba through smbsplice: smbclient get and put of a 256 MiB random
file, checksummed; an encrypted session; and what the metrics and the log
line say about it: READ and WRITE payloads spliced, dialect, encryption."""
import os
import time

from harness import (Proxy, Samba, check, file_sha256, metric, random_file, run, scrape, TMPDIR)

MIB = 256


def main():
    smb = Samba()
    # Encrypted frames are spliced only above --other-threshold (off by
    # default): set it, to test that path too.
    px = Proxy(smb.addr, "--other-threshold", "1M", stats=True)
    src = os.path.join(smb.share, "big.bin")
    want = random_file(src, MIB)

    got_path = os.path.join(smb.dir, "fetched.bin")
    t0 = time.monotonic()
    smb.smbclient(px.port, cmd=f"get big.bin {got_path}")
    secs = time.monotonic() - t0
    check(file_sha256(got_path) == want, f"get of {MIB} MiB through smbsplice is byte-exact ({MIB / secs:.0f} MiB/s)")

    m = scrape(px.stats_port)
    spliced = metric(m, "smbsplice_payload_bytes_total", direction="to_client", **{"class": "read"}, path="splice")
    check(spliced > (MIB << 20) * 0.9, f"READ payload bytes spliced: {spliced:.0f} of {MIB << 20}")
    check(metric(m, "smbsplice_messages_total", direction="to_client", command="read") > 0, "READ responses counted")

    up = os.path.join(smb.dir, "up.bin")
    up_sum = random_file(up, MIB)
    smb.smbclient(px.port, cmd=f"put {up} uploaded.bin")
    check(file_sha256(os.path.join(smb.share, "uploaded.bin")) == up_sum, f"put of {MIB} MiB through smbsplice is byte-exact")
    m = scrape(px.stats_port)
    spliced = metric(m, "smbsplice_payload_bytes_total", direction="to_server", **{"class": "write"}, path="splice")
    check(spliced > (MIB << 20) * 0.9, f"WRITE payload bytes spliced: {spliced:.0f} of {MIB << 20}")

    enc_path = os.path.join(smb.dir, "fetched-enc.bin")
    smb.smbclient(px.port, "--client-protection=encrypt", cmd=f"get big.bin {enc_path}")
    check(file_sha256(enc_path) == want, "encrypted get through smbsplice is byte-exact")
    m = scrape(px.stats_port)
    check(metric(m, "smbsplice_frames_total", direction="to_client", kind="encrypted") > 0, "encrypted frames counted")
    check(metric(m, "smbsplice_payload_bytes_total", direction="to_client", **{"class": "other"}, path="splice")
          > (MIB << 20) * 0.9, "large encrypted frames spliced")
    check(metric(m, "smbsplice_opaque_fallbacks_total") == 0, "no connection fell back to opaque")

    lines = px.wait_log(r"^.* conn .* end=fin .*$", count=3)
    check(all(" smb dialect=3.1.1 " in l for l in lines), "log lines name dialect 3.1.1")
    check(any(" reads=" in l and "reads=0/" not in l for l in lines), "log line counts READs")
    check(any("writes=0/" not in l for l in lines), "log line counts WRITEs")
    check(any("encrypted=yes" in l for l in lines), "log line notes encryption")
    for p in (got_path, up, enc_path):
        os.unlink(p)
    px.stop()
    smb.stop()


if __name__ == "__main__":
    run(main)
