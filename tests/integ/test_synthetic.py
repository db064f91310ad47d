"""Synthetic SMB streams (smbgen.py) through smbsplice over real sockets.

Eight connections at once, both directions at the same time, random chunk
sizes and short pauses on both ends, with 4 KiB thresholds for every class
and only 4 pipes for all of them, so that the framed splice path, the copy
fallback when no pipe is free, and the opaque fallback after a corruption
all run. Every byte must arrive exactly, each way (length and sha256).

smbgen's reference framer says, for every stream, what smbsplice's framer
must count: messages per command, transform and SMB1 frames, payloads per
class and decision, payload bytes, interim and error READ responses, and
whether the stream falls back to opaque. /metrics must agree exactly.

Set SMBGEN_SEED to replay a run; the seed is printed first.
"""
import os
import random
import time

import smbgen
from harness import Proxy, TestFailure, check, metric, run, scrape

CONNS = 8


def pick_pairs(base, profile, conns, opaque=0, truncated=0):
    """Stream pairs for consecutive seeds from @base. The generator decides
    by the seed which streams it corrupts or cuts short; seeds are skipped
    while the slots left are needed for at least @opaque connections that
    fall back to opaque and @truncated connections with a truncated tail."""
    pairs, seed = [], base
    while len(pairs) < conns:
        if seed - base > 10000:
            raise TestFailure(f"no {conns} {profile} stream pairs from seed {base} meet the needs")
        p = smbgen.Pair(seed, profile)
        seed += 1
        left = conns - len(pairs) - 1
        need_o = opaque - sum(q.opaque() for q in pairs) - p.opaque()
        need_t = truncated - sum(q.truncated() for q in pairs) - p.truncated()
        if max(need_o, need_t) <= left:
            pairs.append(p)
    return pairs


def run_config(label, args, pairs, pace, each_class=True):
    """Run @pairs through a proxy with @args; check bytes and counters.
    With @each_class, every payload class must have been spliced; without
    (two pipes among eight stalling connections: which class gets a pipe
    is chance), only that something was."""
    holder = [None]
    srv = smbgen.make_server(holder, pace)
    px = Proxy(srv.addr, *args, stats=True)
    tot = smbgen.Totals()
    for p in pairs:
        tot.add(p)
        print(f"{label}: seed {p.seed}: {p.up.describe()}", flush=True)
        print(f"{label}: seed {p.seed}: {p.down.describe()}", flush=True)
    t0 = time.monotonic()
    batch = smbgen.run_batch(px, holder, pairs, pace, timeout=60)
    srv.join(count=len(pairs))
    took = time.monotonic() - t0
    check(not srv.errors, f"{label}: server saw no errors ({srv.errors})")
    for p in pairs:
        res = batch.results[p.seed]
        check(not res.errors, f"{label}: seed {p.seed}: no transfer errors ({res.errors})")
        for d, why in res.mismatches().items():
            s = p.up if d == "to_server" else p.down
            check(why is None, f"{label}: seed {p.seed} {d}: {len(s.data)} bytes exact, sha256 {s.sha256[:16]}"
                  + (f" -- MISMATCH: {why}" if why else ""))
    print(f"{label}: {sum(tot.bytes.values()) / 1048576:.1f} MiB in {took:.1f} s", flush=True)

    m = smbgen.wait_idle(scrape, px.stats_port, len(pairs))
    for ok, what in smbgen.compare_metrics(m, tot):
        check(ok, f"{label}: {what}")

    def spliced(d, cls):
        return metric(m, "smbsplice_payload_bytes_total", direction=d, **{"class": cls}, path="splice")

    due = {c: sum(tot.dir[d][("payloads", c, "splice")] for d in smbgen.DIRECTIONS) for c in smbgen.CLASSES}
    check(all(due.values()), f"{label}: the streams hold payloads to splice in every class ({due})")

    read, write = spliced("to_client", "read"), spliced("to_server", "write")
    other = spliced("to_client", "other") + spliced("to_server", "other")
    if each_class:
        check(read > 0, f"{label}: READ data was spliced ({read:.0f} B)")
        check(write > 0, f"{label}: WRITE data was spliced ({write:.0f} B)")
        check(other > 0, f"{label}: other payloads (transforms, large messages) were spliced ({other:.0f} B)")
    else:
        check(read + write + other > 0,
              f"{label}: payloads were spliced (READ {read:.0f} B, WRITE {write:.0f} B, other {other:.0f} B)")
    denied = metric(m, "smbsplice_pipe_denied_total")
    check(denied > 0, f"{label}: pipes ran out and the copy pump served ({denied:.0f} times)")
    check(metric(m, "smbsplice_pipes_lent") == 0, f"{label}: no pipe is lent once every connection ended")
    px.stop()
    srv.close()
    return tot


def main():
    base = int(os.environ.get("SMBGEN_SEED", random.randrange(1 << 32)))
    print(f"SMBGEN_SEED={base}", flush=True)
    pace = smbgen.Pace()

    pairs = pick_pairs(base << 8, "valid", CONNS, truncated=2)
    tot = run_config("valid streams, 4 pipes", smbgen.ARGS_4K + ["--max-pipes", "4"], pairs, pace)
    check(tot.opaque == 0, "valid streams: the reference framer finds nothing wrong with them")
    down, up = tot.dir["to_client"], tot.dir["to_server"]
    check(all(down[k] for k in (("interim",), ("read_errors",), ("frames", "encrypted"), ("messages", "read"))),
          "valid streams: interim, error and data READ responses and encrypted frames to the client")
    check(all(up[k] for k in (("messages", "write"), ("frames", "smb1"), ("frames", "encrypted"))),
          "valid streams: WRITE requests, SMB1 and encrypted frames to the server")

    pairs = pick_pairs((base << 8) + 100, "corrupt", CONNS, opaque=3, truncated=2)
    tot = run_config("corrupted streams, 4 pipes of 8K", smbgen.ARGS_4K + ["--max-pipes", "4", "--pipe-size", "8K"],
                     pairs, pace)
    check(tot.opaque >= 3, f"corrupted streams: {tot.opaque} connections fell back to opaque, as predicted")

    pairs = pick_pairs((base << 8) + 200, "small", CONNS, opaque=1, truncated=1)
    stalling = smbgen.Pace(send_pause=0.01, recv_pause=0.1, long_p=0.05, long=0.05)
    run_config("short streams, stalling receivers, 2 pipes, 4K buffer",
               smbgen.ARGS_4K + ["--max-pipes", "2", "--buffer-size", "4K"], pairs, stalling, each_class=False)


if __name__ == "__main__":
    run(main, alarm=150)
