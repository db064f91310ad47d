"""The benchmark's run order is fair to every contestant.

`make bench` runs its contestants interleaved, round by round, and a run
is measurably slower right after some contestants (after direct's, on
path-contention, the server is still busy). A rotation of one fixed order
keeps every neighbour, so one contestant would always follow direct. This
checks contrib/bench's run_order() and interleaved():

- every round runs each contestant once;
- over n rounds (2n when n is odd) each ordered pair of contestants is
  adjacent equally often, and each contestant starts a round equally often;
- interleaved() runs them in that order, and keeps a failed run as
  {"failed": why} in its place without stopping the rest.
"""
import collections
import os
import sys

from harness import SRCDIR, check, run

sys.path.insert(0, os.path.join(SRCDIR, "contrib", "bench"))
import bench  # noqa: E402


def balanced(n, order=bench.run_order):
    """Why order(n, .) is unfair, or None."""
    rounds = 2 * n if n % 2 else n
    rows = [order(n, r) for r in range(rounds)]
    if any(sorted(row) != list(range(n)) for row in rows):
        return f"a round misses or repeats a contestant: {rows}"
    pairs = collections.Counter((row[i], row[i + 1]) for row in rows for i in range(n - 1))
    if len(pairs) != n * (n - 1) or len(set(pairs.values())) > 1:
        return f"ordered pairs unevenly adjacent over {rounds} rounds: {dict(pairs)}"
    firsts = collections.Counter(row[0] for row in rows)
    if len(firsts) != n or len(set(firsts.values())) != 1:
        return f"rounds started unevenly: {dict(firsts)}"
    return None


def check_balance():
    why = {n: balanced(n) for n in range(1, 10)}
    check(not any(why.values()), "1 to 9 contestants: each runs once a round, every ordered pair is adjacent "
          f"equally often and each starts a round equally often {[(n, w) for n, w in why.items() if w]}")
    rotation = balanced(4, lambda n, r: [(x + r) % n for x in range(n)])
    check(rotation and "unevenly adjacent" in rotation, f"the same check refuses a rotation: {rotation}")


class Front:
    def __init__(self, name):
        self.name = name


def check_interleaved():
    ran = []

    def measure(front, fn):
        ran.append(front.name)
        if front.name == "b" and len(ran) <= 4:
            raise RuntimeError("refused")
        return {"rate": len(ran)}

    real, bench.measure = bench.measure, measure
    try:
        res = bench.interleaved([Front(x) for x in "abcd"], None, 5, "test")
    finally:
        bench.measure = real
    want = [["abcd"[i] for i in bench.run_order(4, r)] for r in range(5)]
    check(ran == [x for row in want for x in row], f"interleaved() follows run_order(): {ran}")
    check(set(res) == set("abcd") and all(len(v) == 5 for v in res.values()), f"five results each: {res}")
    check(res["b"][0] == {"failed": "refused"} and "rate" in res["b"][-1],
          f"a failed run is kept in its place and the rounds go on: {res['b']}")


def main():
    check_balance()
    check_interleaved()


if __name__ == "__main__":
    run(main)
