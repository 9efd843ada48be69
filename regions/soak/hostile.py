"""Slow and hostile connections beside official-SDK writers (issue 32).

The parent starts ``python -m regions.otsserver`` (``wire._Server``) with
the front end's limits at their defaults but the deadlines short
(``SERVER_ARGS``: 3 s idle, 2 s for a whole head, 2 s for a whole body, so
that a wave lasts seconds), one region that does not split (the server's
memory is then the front end's and the writes') and 64 KiB memtables (the
writers update their counter rows thousands of times: with the default
8 MiB, every read of such a row decodes all its versions in the memtable,
and the writers slow down by 3x within a minute, waves or not), and
``clients`` writer processes: the wire
experiment's (``wire.client``), whose every operation shows a loss, a
phantom or a double application, and which time each SDK call.  The writers
run alone for ``QUIET_S``, then the parent sends ``count`` waves of hostile
connections from one asyncio loop, each wave's connections at once, each
wave ``GAP_S`` after the last one ended (the writers alone again: the quiet
latency is theirs in these windows, so that both are measured on the same
store as it grows):

* ``slow_head``: a request head sent a byte every 100 ms (it would take a
  minute): cut off by the head deadline (408, then a close);
* ``slow_body``: a signed head, then its body a byte every 100 ms: cut off by
  the body deadline (408);
* ``forged``: a head with a forged signature declaring a 5 MiB body, then
  1 MiB of it as fast as it goes: refused at once (403) before the body is
  read, which is drained and dropped;
* ``idle``: a connection that sends nothing: dropped at the idle timeout;
* ``garbage``: 1 to 2,000 random bytes (half of them ending in a blank line):
  a 4xx or a close, never a 5xx;
* every fourth wave instead ``over_cap``: ``MAX_CONNECTIONS + 20``
  connections at once, sending nothing: the excess answered 503
  ``OTSServerBusy`` at once, the rest dropped when idle.

Each hostile connection must end as its kind says (never with another
answer: wrong; a 5xx: a crash), and no later than twice its bound plus
``SLACK_S`` (a hang: two shared cores delay a deadline, not double it); the
latest of each kind is in the stats.  The server's RSS is sampled every
0.2 s; a peak under the waves more than ``RSS_GROWTH_BOUND`` above the quiet
windows' is a failure.  The writers must
meet no error and no unknown outcome (each would be a crash); after a clean
stop the store is checked as the wire experiment checks it (``wire._check``:
nothing lost, no phantom, nothing applied twice).  The summary's stats give
the writers' p50 and p99 latency, quiet and beside the waves.

    python -m regions.soak hostile --seed 1 --count 8
"""
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

from regions.otsserver.auth import content_md5, format_date, v2_signature

from . import wire
from .harness import child_env, start

__all__ = ["run", "main", "percentile"]

TIMEOUT_S, HEAD_DEADLINE_S, BODY_DEADLINE_S = 3.0, 2.0, 2.0
MAX_CONNECTIONS = 256           # the server's default
SERVER_ARGS = ("--no-console", "-D", "memtable_bytes=64KiB", "-D", "split_policy=constant",
               "-D", "max_region_bytes=1GiB", "-D", "maintenance_interval=0.05",
               "--timeout", "%g" % TIMEOUT_S,
               "--head-deadline", "%g" % HEAD_DEADLINE_S,
               "--body-deadline", "%g" % BODY_DEADLINE_S,
               "--max-connections", str(MAX_CONNECTIONS))
TRICKLE_S = 0.1                 # a slow client's byte every 100 ms
SLACK_S = 3.0                   # later than its bound by this: a hang (2 loaded cores)
QUIET_S = 3.0
GAP_S = 1.0
DECLARED = 5 << 20
RSS_GROWTH_BOUND = 100 << 20
KINDS = ("slow_head", "slow_body", "forged", "idle", "garbage", "over_cap")
#: What each kind may end with (a status, "closed": EOF without a reply, "reset"),
#: and its bound in seconds from the connection.
EXPECTED = {
    "slow_head": ({408, "closed"}, HEAD_DEADLINE_S + TRICKLE_S),
    "slow_body": ({408, "closed"}, BODY_DEADLINE_S + TRICKLE_S),
    "forged": ({403, "reset"}, 0.0),
    "idle": ({"closed"}, TIMEOUT_S),
    "garbage": (set(range(400, 500)) | {"closed", "reset"}, HEAD_DEADLINE_S),
    "over_cap": ({503, "closed"}, TIMEOUT_S),
}


def percentile(values, q: float):
    """The ``q``-quantile (0 to 1) of ``values`` by the nearest rank; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered))) - 1))]


# -- the hostile connections -------------------------------------------------------
def _signed_head(api: str, body: bytes, length: int, forged: bool = False) -> bytes:
    """A head as the SDK writes it (V2 signature), declaring ``length`` bytes."""
    headers = {"x-ots-date": format_date(), "x-ots-apiversion": "2015-12-31",
               "x-ots-accesskeyid": wire.KEY_ID, "x-ots-instancename": wire.INSTANCE,
               "x-ots-contentmd5": content_md5(body)}
    headers["x-ots-signature"] = "forged" if forged else v2_signature(wire.SECRET, api, headers)
    lines = ["POST /%s HTTP/1.1" % api, "Host: 127.0.0.1", "Content-Length: %d" % length]
    lines += ["%s: %s" % kv for kv in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _script(kind: str, rng: random.Random):
    """What a connection of ``kind`` sends: ``(chunks, seconds between them)``."""
    if kind == "slow_head":
        head = _signed_head("PutRow", b"", 0) + b"x-pad: " + b"p" * 400 + b"\r\n\r\n"
        return [head[i:i + 1] for i in range(len(head))], TRICKLE_S
    if kind == "slow_body":
        body = bytes(rng.randrange(256) for _ in range(600))
        return [_signed_head("PutRow", body, len(body))] + \
            [body[i:i + 1] for i in range(len(body))], TRICKLE_S
    if kind == "forged":
        return [_signed_head("PutRow", b"", DECLARED, forged=True)] + [b"\0" * 65536] * 16, 0.0
    if kind == "garbage":
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000)))
        return [junk + (b"\r\n\r\n" if rng.random() < 0.5 else b"")], 0.0
    return [], 0.0                      # idle, over_cap


async def _connection(port: int, chunks, every: float, bound: float):
    """Connect, send ``chunks`` ``every`` seconds apart while no answer comes,
    read to the end; ``(outcome, seconds from the connection to its end)``,
    outcome a status, "closed", "reset" or "hang" (open past ``bound``)."""
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as e:
        return "connect: %s" % e.strerror, 0.0
    reading = asyncio.ensure_future(reader.read())
    try:
        for chunk in chunks:
            if reading.done():
                break
            writer.write(chunk)
            await writer.drain()
            if every:
                await asyncio.wait([reading], timeout=every)
        reply = await asyncio.wait_for(reading, max(0.0, t0 + bound - time.monotonic()))
    except asyncio.TimeoutError:
        return "hang", time.monotonic() - t0
    except ConnectionError:
        try:
            reply = await asyncio.wait_for(reading, SLACK_S)
        except (ConnectionError, asyncio.TimeoutError):
            return "reset", time.monotonic() - t0
    finally:
        reading.cancel()
        writer.close()
    if not reply:
        return "closed", time.monotonic() - t0
    status = reply.split(b" ", 2)[1] if reply.startswith(b"HTTP/1.") else b""
    return (int(status) if status.isdigit() else reply[:40]), time.monotonic() - t0


def _wave(rng: random.Random, number: int) -> dict:
    """How many connections of each kind wave ``number`` opens (together
    below the cap, but for ``over_cap``)."""
    if number % 4 == 3:
        return {"over_cap": MAX_CONNECTIONS + 20}
    return {"slow_head": rng.randint(10, 25), "slow_body": rng.randint(10, 25),
            "forged": rng.randint(20, 60), "idle": rng.randint(40, 100),
            "garbage": rng.randint(5, 15)}


async def _run_wave(port: int, plan: dict, rng: random.Random):
    jobs, kinds = [], []
    for kind, n in plan.items():
        for _ in range(n):
            chunks, every = _script(kind, rng)
            jobs.append(_connection(port, chunks, every, 2 * EXPECTED[kind][1] + SLACK_S))
            kinds.append(kind)
    return list(zip(kinds, await asyncio.gather(*jobs)))


def _judge(summary, st, wave: int, results):
    """Count each connection's end against its kind's expectation."""
    busy = 0
    for kind, (outcome, seconds) in results:
        st[kind] += 1
        st["slowest_" + kind] = round(max(st.get("slowest_" + kind, 0.0), seconds), 2)
        busy += outcome == 503
        allowed, _ = EXPECTED[kind]
        if outcome == "hang":
            summary.failure("hangs", f"wave {wave}: a {kind} connection still open after "
                                     f"{seconds:.1f} s")
        elif outcome not in allowed:
            kind_of = "crashes" if isinstance(outcome, int) and outcome >= 500 else "wrong"
            summary.failure(kind_of, f"wave {wave}: a {kind} connection ended with {outcome!r}")
    if "over_cap" in dict(results):
        st["refused_at_cap"] += busy
        if busy < 20:
            summary.failure("wrong", f"wave {wave}: {busy} of {MAX_CONNECTIONS + 20} connections "
                                     "refused at the cap, expected at least 20")


# -- the server's memory ----------------------------------------------------------------
def rss_bytes(pid: int) -> int:
    """The resident set of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise ValueError(f"no VmRSS for {pid}")


class _RssSampler(threading.Thread):
    """The peak RSS of ``pid``, sampled every 0.2 s until ``stop()``."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self._done = pid, 0, threading.Event()
        self.start()

    def run(self):
        while not self._done.wait(0.2):
            try:
                self.peak = max(self.peak, rss_bytes(self.pid))
            except (OSError, ValueError):
                return

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


# -- the run ---------------------------------------------------------------------------
def _latencies(path: str):
    """``[[start, seconds], ...]`` of a writer's SDK calls (its ``L`` line)."""
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if line.startswith(b"L "):
                return json.loads(line[2:])
    return []


def _latency_stats(st, logs, windows):
    calls = [c for path in logs for c in _latencies(path)]
    for name, spans in windows.items():
        seconds = [dt for t, dt in calls if any(t0 <= t < t1 for t0, t1 in spans)]
        st[f"{name}_calls"] = len(seconds)
        for q in (50, 99):
            value = percentile(seconds, q / 100)
            st[f"{name}_p{q}_ms"] = None if value is None else round(value * 1000, 1)


def run(seed: int, count: int = None, seconds: float = None, dir: str = None, clients: int = 3,
        stats: dict = None, quiet_s: float = QUIET_S):
    """``count`` waves of hostile connections (8 when neither ``count`` nor
    ``seconds`` is given) beside ``clients`` SDK writers, in ``dir``
    (harness.WorkDir).  ``summary.verified`` counts the writers'
    acknowledged operations checked plus the hostile connections judged;
    ``quiet_s``: how long the writers run alone first."""
    if count is None and seconds is None:
        count = 8
    summary, work, rng, st = start(
        "hostile", "slow heads and bodies, forged 5 MiB bodies, idle, garbage and over-cap "
                   "connections beside SDK writers", seed, dir, stats,
        KINDS + ("refused_at_cap",))
    data, env, stop = work.path("data"), child_env(), work.path("stop")
    server = wire._Server(data, wire._free_port(), env, SERVER_ARGS)
    logs = [work.path(f"acks-{c}.log") for c in range(clients)]
    writers = []
    server.start()
    try:
        output = []                     # the server's log, drained so that it never blocks
        drain = threading.Thread(target=lambda: output.extend(server.proc.stdout), daemon=True)
        drain.start()
        wire._create_table(server.endpoint)
        writers += [subprocess.Popen(
            [sys.executable, "-c", wire._CLIENT, server.endpoint, str(c), logs[c],
             str(rng.getrandbits(32)), stop], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env) for c in range(clients)]
        windows = _waves(summary, work, rng, st, server, logs, count, seconds, quiet_s)
        open(stop, "w").close()
        wire._finish_writers(summary, writers)
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(60)
        drain.join(10)
    finally:
        for proc in writers + [server.proc]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if code != 0:
        summary.failure("crashes", f"the server's SIGTERM stop exited with {code}: "
                                   f"{b''.join(output).decode(errors='replace')[-1500:]}")
    st["front_end_log_lines"] = sum(b"regions.otsserver.http" in line for line in output)
    with open(work.path("server.log"), "wb") as f:     # kept with the directory after a failure
        f.writelines(output)
    _latency_stats(st, logs, windows)
    wire._check(summary, data, logs, st)
    if st.get("unknown") or st.get("unknown_bumps"):
        summary.failure("crashes", f"the writers met {st.get('unknown', 0)} errors or broken "
                                   f"connections and {st.get('unknown_bumps', 0)} unknown bumps")
    return work.finish(summary)


def _waves(summary, work, rng, st, server, logs, count, seconds, quiet_s):
    """The quiet phase, then the waves with a quiet gap after each; the
    server's peak RSS of both into ``st``; their windows of
    ``time.monotonic()``, ``{"quiet": [(start, end), ...], "hostile": [...]}``."""
    while not all(os.path.exists(p) and os.path.getsize(p) for p in logs):
        time.sleep(0.05)                # every writer has begun
    windows, peaks = {"quiet": [], "hostile": []}, {"quiet": 0, "hostile": 0}

    def phase(name, work_of):
        sampler, t0 = _RssSampler(server.proc.pid), time.monotonic()
        result = work_of()
        windows[name].append((t0, time.monotonic()))
        peaks[name] = max(peaks[name], sampler.stop())
        return result

    phase("quiet", lambda: time.sleep(quiet_s))
    while work.more(summary, count, seconds):
        results = phase("hostile", lambda: asyncio.run(
            _run_wave(server.port, _wave(rng, summary.cycles), rng)))
        _judge(summary, st, summary.cycles, results)
        summary.verified += len(results)
        summary.cycles += 1
        phase("quiet", lambda: time.sleep(GAP_S))
    st["server_rss_quiet_mib"] = round(peaks["quiet"] / (1 << 20), 1)
    st["server_rss_peak_mib"] = round(peaks["hostile"] / (1 << 20), 1)
    if peaks["hostile"] - peaks["quiet"] > RSS_GROWTH_BOUND:
        summary.failure("wrong", f"the server's RSS rose from {peaks['quiet'] >> 20} MiB to "
                                 f"{peaks['hostile'] >> 20} MiB under the waves")
    return windows


def main(argv=None) -> int:
    return wire.writers_main("hostile", "waves of hostile connections (default 8)", __doc__, run,
                             argv)
