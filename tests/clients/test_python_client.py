"""test_python_client.py - the Python client (clients/python) against the real query
server (build/query_serve), started by test_python.sh with these rules:

    c:=0.000001/2   burst 2, no refill        d:=0.000001/1   burst 1, no refill
    r:=10/1         a token every 100 ms, RESERVE waits of at most 150 ms
    --busy api      "BUSY api" is answered OK (an adaptive rule took it), any other BUSY NO

Environment: DTHROTTLE_TEST_SOCKET (its unix socket), DTHROTTLE_TEST_TCP (127.0.0.1:PORT),
DTHROTTLE_QUERY_SERVE (the binary, for tests that start their own server).
Every test uses tags of its own, so the shared server's buckets do not interfere.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import dthrottle

SOCK = os.environ.get("DTHROTTLE_TEST_SOCKET", "")
TCP = os.environ.get("DTHROTTLE_TEST_TCP", "")
SERVE = os.environ.get("DTHROTTLE_QUERY_SERVE", "")


class FakeClock:
    """A clock that moves only when the test says: the back-off tests hold on a machine of
    any speed (no margin between a sleep and a back-off)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


# A tick of the fake clock (about 1 ms): these times are binary fractions, so that the
# client's sums and the test's land on the same float.
TICK = 2.0 ** -10


def fast_client(endpoint, clock=None):
    """Back-off 125 ms doubling to 250 ms, timed by clock (a FakeClock; a new one if None)."""
    return dthrottle.Client(endpoint, timeout=0.05, backoff_initial=0.125, backoff_max=0.25,
                            clock=clock if clock is not None else FakeClock())


def wait_for_socket(path, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


class AgainstServer(unittest.TestCase):
    def setUp(self):
        self.assertTrue(SOCK, "DTHROTTLE_TEST_SOCKET is not set: run tests/clients/test_python.sh")
        self.client = dthrottle.Client(SOCK)

    def tearDown(self):
        self.client.close()

    def test_allow_then_throttle(self):
        self.assertEqual([self.client.allow("c:allow") for _ in range(3)], [True, True, False],
                         "burst 2: two OK, then NO")
        self.assertEqual(self.client.stats["answered"], 3)
        self.assertEqual(self.client.stats["connects"], 1, "one connection for every query")

    def test_bytes_and_str_tags_are_the_same_tag(self):
        self.assertTrue(self.client.allow("c:bytes"))
        self.assertTrue(self.client.allow(b"c:bytes"))
        self.assertFalse(self.client.allow("c:bytes"))

    def test_tcp_endpoint(self):
        self.assertTrue(TCP, "DTHROTTLE_TEST_TCP is not set")
        with dthrottle.Client(TCP) as tcp:
            self.assertTrue(tcp.allow("c:tcp"))
            self.assertTrue(self.client.allow("c:tcp"))
            self.assertFalse(tcp.allow("c:tcp"), "unix and TCP clients share the buckets")

    def test_reserve(self):
        self.assertEqual(self.client.reserve("r:res"), 0.0, "a token now")
        wait = self.client.reserve("r:res")
        self.assertIsNotNone(wait)
        self.assertTrue(0.09 <= wait <= 0.1, "the next token is 100 ms away, got %r" % wait)
        self.assertIsNone(self.client.reserve("r:res"), "200 ms is over the 150 ms max wait")

    def test_invalid_tags_are_allowed_without_asking(self):
        for bad in ["", "a\nb", "a\0b", "x" * 1025, "RESERVE x"]:
            self.assertTrue(self.client.allow(bad), "invalid tag %r is allowed" % bad[:20])
        self.assertEqual(self.client.reserve(""), 0.0)
        self.assertEqual(self.client.stats["invalid_tags"], 6)
        self.assertEqual(self.client.stats["answered"], 0, "nothing was sent")
        self.assertTrue(self.client.allow("c:" + "x" * 1022), "1024 bytes is a valid tag")
        self.assertEqual(self.client.stats["answered"], 1)

    def test_tags_starting_with_busy_are_allowed_without_asking(self):
        self.assertTrue(self.client.allow("BUSY x"), "'BUSY x' would be read as a busy signal: allowed")
        self.assertTrue(self.client.allow(b"BUSY api"), "as bytes too")
        self.assertEqual(self.client.stats["invalid_tags"], 2, "both counted as invalid tags")
        self.assertEqual(self.client.stats["answered"], 0, "a tag read as a busy signal must not be sent")
        self.assertTrue(self.client.allow("BUSY "), "'BUSY ' alone is an ordinary tag (no rule: OK)")
        self.assertEqual(self.client.stats["answered"], 1, "'BUSY ' alone is asked")
        self.assertEqual(self.client.stats["invalid_tags"], 2)

    def test_busy_taken(self):
        self.assertIs(self.client.busy("api"), True, "query_serve --busy api takes 'BUSY api': OK")
        self.assertIs(self.client.busy(b"api"), True, "the name as bytes")
        self.assertEqual(self.client.stats["answered"], 2, "both signals were answered by the agent")

    def test_busy_unknown_name(self):
        self.assertIs(self.client.busy("nope"), False, "no adaptive rule 'nope': NO, busy() is False")
        self.assertIs(self.client.busy("api:x"), False, "only the exact name 'api' is taken by query_serve")
        self.assertEqual(self.client.stats["answered"], 2, "the agent answered both signals")
        self.assertFalse(self.client.backing_off, "a NO is an answer, not a failure")

    def test_busy_between_queries(self):
        self.assertTrue(self.client.allow("d:busy-mix"))
        self.assertTrue(self.client.busy("api"))
        self.assertFalse(self.client.allow("d:busy-mix"), "burst 1 spent: the signal did not shift the answers")
        self.assertFalse(self.client.busy("nope"))
        self.assertEqual(self.client.stats["connects"], 1, "one connection for queries and signals")

    def test_busy_tcp_is_refused_without_a_failure(self):
        self.assertTrue(TCP, "DTHROTTLE_TEST_TCP is not set")
        with dthrottle.Client(TCP) as tcp:
            self.assertIs(tcp.busy("api"), False, "'BUSY api' over TCP: ERR not allowed (TCP peers are no admins)")
            self.assertEqual(tcp.stats["not_allowed"], 1, "the refusal is counted")
            self.assertEqual(tcp.stats["failures"], 0, "a refusal is an answer, not a failure")
            self.assertFalse(tcp.backing_off, "no back-off after a refusal")
            self.assertTrue(tcp.allow("d:after-refusal"))
            self.assertEqual(tcp.stats["connects"], 1, "the connection is kept after the refusal")

    def test_busy_invalid_names_are_not_sent(self):
        for bad in ["", "a\nb", "a\0b", "x" * 1025, "\ud800"]:
            self.assertIs(self.client.busy(bad), False, "invalid name %r: not taken" % bad[:20])
        self.assertEqual(self.client.stats["invalid_tags"], 5, "each invalid name is counted")
        self.assertEqual(self.client.stats["answered"], 0, "nothing was sent")
        self.assertFalse(self.client.busy("x" * 1024), "1024 bytes is a valid name (answered NO)")
        self.assertEqual(self.client.stats["answered"], 1)

    def test_threads_share_one_client(self):
        results = []
        lock = threading.Lock()

        def worker():
            for _ in range(50):
                ok = self.client.allow("c:threads")
                with lock:
                    results.append(ok)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(len(results), 400)
        self.assertEqual(results.count(True), 2, "exactly the burst is allowed: no answer was mixed up")
        self.assertEqual(self.client.stats["failures"], 0)


class Endpoint(unittest.TestCase):
    """parse_host_port: the HOST:PORT grammar of include/dthrottle/client/endpoint.hpp."""
    ACCEPTED = [
        ("198.18.0.1:7800", ("198.18.0.1", 7800)),
        ("[2001:2::1]:7800", ("2001:2::1", 7800)),
        ("[fe80::1%eth0]:1", ("fe80::1%eth0", 1)),
        ("localhost:65535", ("localhost", 65535)),
        ("edge-1.example_net:80", ("edge-1.example_net", 80)),
    ]
    REFUSED = [
        ("localhost", "expected HOST:PORT"),
        (":7800", "needs a host name or address"),
        ("*:7800", "only for listening"),
        ("::1:7800", "goes in brackets"),
        ("2001:2::1:7800", "goes in brackets"),
        ("[::1]7800", "expected ':' and the port after ']'"),
        ("[::1:7800", "no ']' closes"),
        ("[localhost]:80", "is not one"),
        ("256.1.1.1:80", "is not an IPv4 address"),
        ("127.1:80", "is not an IPv4 address"),
        ("a b:80", "is not a host name"),
        ("h:0", "from 1 to 65535"),
        ("h:65536", "from 1 to 65535"),
        ("h:+80", "from 1 to 65535"),
        ("h:000080", "from 1 to 65535"),
        ("tcp://h:80", "no scheme"),
    ]

    def test_accepted(self):
        for text, want in self.ACCEPTED:
            self.assertEqual(dthrottle.parse_host_port(text), want, "parse_host_port(%r)" % text)

    def test_refused(self):
        for text, why in self.REFUSED:
            with self.assertRaises(ValueError, msg="%r must be refused (%s)" % (text, why)) as cm:
                dthrottle.parse_host_port(text)
            self.assertIn(why, str(cm.exception), "the reason for %r" % text)

    def test_bare_ipv6_endpoint_allows(self):
        with fast_client("::1:7800") as c:
            self.assertTrue(c.allow("x"), "an endpoint the grammar refuses: fail-safe, allowed")
            self.assertEqual(c.stats["failures"], 1)


class Decorator(unittest.TestCase):
    def setUp(self):
        self.client = dthrottle.Client(SOCK)
        self.calls = []

    def tearDown(self):
        self.client.close()

    def test_skips_when_throttled(self):
        @dthrottle.throttle("d:skip", client=self.client)
        def f(x):
            self.calls.append(x)
            return x * 2

        self.assertEqual(f(21), 42)
        self.assertIsNone(f(1), "throttled: skipped, None")
        self.assertEqual(self.calls, [21])
        self.assertEqual(f.__name__, "f", "functools.wraps keeps the name")

    def test_raises_when_configured(self):
        @dthrottle.throttle("d:raise", client=self.client, raise_on_throttle=True)
        def f():
            self.calls.append(1)

        f()
        with self.assertRaises(dthrottle.Throttled) as cm:
            f()
        self.assertEqual(cm.exception.tag, "d:raise")
        self.assertEqual(self.calls, [1])

    def test_tag_from_the_arguments(self):
        @dthrottle.throttle(lambda user, **kw: "d:user:" + user, client=self.client)
        def f(user, page=0):
            self.calls.append((user, page))
            return True

        self.assertTrue(f("alice", page=1))
        self.assertTrue(f("bob"))
        self.assertIsNone(f("alice", page=2), "alice's bucket is empty, bob's is separate")
        self.assertEqual(self.calls, [("alice", 1), ("bob", 0)])

    def test_wait_sleeps_for_the_reserved_permit(self):
        @dthrottle.throttle("r:wait", client=self.client, wait=True)
        def f():
            self.calls.append(time.monotonic())

        start = time.monotonic()
        f()
        f()
        self.assertEqual(len(self.calls), 2, "both calls went ahead")
        self.assertGreaterEqual(self.calls[1] - start, 0.09, "the second slept for its permit (100 ms)")

    def test_wait_skips_when_reservation_denied(self):
        self.assertEqual(self.client.reserve("r:deny"), 0.0)
        self.assertIsNotNone(self.client.reserve("r:deny"))

        @dthrottle.throttle("r:deny", client=self.client, wait=True)
        def f():
            self.calls.append(1)

        self.assertIsNone(f(), "the wait would exceed the max wait: denied, skipped")
        self.assertEqual(self.calls, [])

    def test_default_client_from_configure(self):
        dthrottle.configure(SOCK)
        try:
            @dthrottle.throttle("d:default")
            def f():
                return "ran"

            self.assertEqual(f(), "ran")
            self.assertIsNone(f())
            self.assertEqual(dthrottle.default_client().stats["answered"], 2)
        finally:
            dthrottle.configure("/nonexistent/dthrottle.sock").close()

    def test_module_busy_uses_the_default_client(self):
        client = dthrottle.configure(SOCK)
        try:
            self.assertIs(dthrottle.busy("api"), True, "dthrottle.busy('api') through the default client: OK")
            self.assertIs(dthrottle.busy("nope"), False)
            self.assertEqual(client.stats["answered"], 2, "both signals went through the configured client")
        finally:
            dthrottle.configure("/nonexistent/dthrottle.sock").close()


class ClosingServer:
    """A fake agent on a unix socket that answers one line per connection with OK, then
    closes it (as the agent does to an idle connection); counts connections and lines."""

    def __init__(self, path):
        self.path, self.connections, self.lines = path, 0, 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                if conn.recv(4096).endswith(b"\n"):
                    self.lines += 1
                    conn.sendall(b"OK\n")
                # the next read sees the client's following line, or its close; either way we close

    def close(self):
        self.sock.close()


class IdleClose(unittest.TestCase):
    def test_a_kept_connection_the_agent_closed_is_replaced_without_failing_open(self):
        work = tempfile.mkdtemp(prefix="dthrottle-closing.")
        path = os.path.join(work, "q.sock")
        server = ClosingServer(path)
        try:
            client = dthrottle.Client(path, timeout=0.5)
            for i in range(3):
                self.assertTrue(client.allow("t%d" % i))
                time.sleep(0.05)  # the server has closed the connection by now
            self.assertEqual(client.stats["failures"], 0, "an idle close is no failure: %r" % (client.stats,))
            self.assertEqual(client.stats["answered"], 3, "every query was asked, none allowed unasked")
            self.assertEqual(server.lines, 3, "the server read each query once")
            self.assertFalse(client.backing_off)
        finally:
            server.close()
            shutil.rmtree(work)


class FailSafe(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dthrottle-pytest.")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_no_server_allows_and_backs_off(self):
        clock = FakeClock()
        c = fast_client(os.path.join(self.dir, "nobody.sock"), clock)
        self.assertTrue(c.allow("t"), "no agent: allow")
        self.assertTrue(c.backing_off)
        self.assertTrue(c.allow("t"))
        self.assertEqual(c.reserve("t"), 0.0, "no agent: go now")
        self.assertEqual(c.stats["failures"], 1)
        self.assertEqual(c.stats["backed_off"], 2, "no connection attempt during the back-off")
        # Each step is checked a tick before its end (still backing off) and at its end.
        clock.advance(0.125 - TICK)
        self.assertTrue(c.backing_off, "a tick before the end of the first back-off (125 ms)")
        clock.advance(TICK)
        self.assertFalse(c.backing_off)
        self.assertTrue(c.allow("t"))
        self.assertEqual(c.stats["failures"], 2, "retried after the first back-off (125 ms)")
        clock.advance(0.25 - TICK)
        self.assertTrue(c.allow("t"))
        self.assertEqual(c.stats["failures"], 2, "the second back-off is 250 ms")
        clock.advance(TICK)
        self.assertTrue(c.allow("t"))
        self.assertEqual(c.stats["failures"], 3)
        clock.advance(0.25)
        self.assertTrue(c.allow("t"))
        self.assertEqual(c.stats["failures"], 4, "capped at backoff_max (250 ms), not 500 ms")
        self.assertEqual(c.stats["backed_off"], 3, "one query fell in a back-off since")

    def test_busy_without_server_is_false_and_backs_off(self):
        clock = FakeClock()
        c = fast_client(os.path.join(self.dir, "nobody.sock"), clock)
        start = time.monotonic()
        self.assertIs(c.busy("api"), False, "no agent: the signal is not delivered, busy() is False")
        self.assertLess(time.monotonic() - start, 1.0, "busy() gave up at once (timeout 50 ms)")
        self.assertTrue(c.backing_off, "a failed busy signal starts the back-off")
        self.assertIs(c.busy("api"), False)
        self.assertTrue(c.allow("t"), "queries are allowed during the back-off")
        self.assertEqual(c.stats["failures"], 1)
        self.assertEqual(c.stats["backed_off"], 2, "no connection attempt during the back-off")
        clock.advance(0.125)
        self.assertIs(c.busy("api"), False)
        self.assertEqual(c.stats["failures"], 2, "retried after the back-off (125 ms)")

    def test_busy_with_a_bad_endpoint_does_not_raise(self):
        c = fast_client("no-port-here")
        self.assertIs(c.busy("api"), False, "an unusable endpoint: False, no exception")
        self.assertEqual(c.stats["failures"], 1)

    def test_bad_endpoint_allows(self):
        c = fast_client("no-port-here")
        self.assertTrue(c.allow("t"))
        self.assertEqual(c.stats["failures"], 1)

    def test_server_that_never_answers(self):
        path = os.path.join(self.dir, "mute.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(4)  # never accepts: the connection completes in the backlog
        try:
            c = fast_client(path)
            start = time.monotonic()
            self.assertTrue(c.allow("slow"), "no answer in time: allow")
            self.assertLess(time.monotonic() - start, 5.0, "the query gave up (timeout 50 ms)")
            self.assertTrue(c.allow("slow2"))
            self.assertEqual((c.stats["connects"], c.stats["failures"], c.stats["backed_off"]), (1, 1, 1))
            conn, _ = listener.accept()
            conn.settimeout(2)
            data = b""
            while True:
                chunk = conn.recv(100)
                if not chunk:
                    break
                data += chunk
            conn.close()
            self.assertEqual(data, b"slow\n", "one query, then the client hung up and backed off")
        finally:
            listener.close()

    def test_reconnects_when_the_agent_comes_back(self):
        self.assertTrue(SERVE, "DTHROTTLE_QUERY_SERVE is not set")
        path = os.path.join(self.dir, "later.sock")
        clock = FakeClock()
        c = fast_client(path, clock)
        self.assertTrue(c.allow("back"))
        self.assertEqual(c.stats["failures"], 1)
        proc = subprocess.Popen([SERVE, "--socket", path, "--tag-rule", "=0.000001/1"],
                                stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_for_socket(path), "query_serve did not create its socket")
            self.assertTrue(c.allow("back"), "backing off: allowed without asking")
            self.assertEqual(c.stats["answered"], 0, "no query during the back-off")
            clock.advance(0.125)
            self.assertTrue(c.allow("back"))
            self.assertFalse(c.allow("back"), "answered by the new agent (burst 1)")
            proc.terminate()
            proc.wait(5)
            self.assertTrue(c.allow("back"), "the agent went away: allow")
            self.assertEqual(c.stats["failures"], 2)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)


if __name__ == "__main__":
    unittest.main()
