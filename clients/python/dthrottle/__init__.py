"""dthrottle - Python client of the dthrottle agent's query socket.

    import dthrottle

    client = dthrottle.Client("/run/dthrottle/query.sock")   # or "127.0.0.1:7800"
    if not client.allow("user:" + user_id):
        return too_many_requests()

    @dthrottle.throttle(lambda user, *a, **kw: "export:" + user)   # skipped (None) when throttled
    def export(user, fmt): ...

    @dthrottle.throttle("partner-api", wait=True)   # sleeps for a reserved permit instead
    def call_partner(): ...

    dthrottle.busy("api")   # the service is overloaded: an adaptive rule backs off

Protocol (docs/query-protocol.md): b"<tag>\\n" -> b"OK\\n" | b"NO\\n";
b"RESERVE <tag>\\n" -> b"OK\\n" | b"WAIT <ms>\\n" | b"NO\\n";
b"BUSY <name>\\n" -> b"OK\\n" (an adaptive rule took the signal) | b"NO\\n" (none did)
| b"ERR not allowed\\n" (this user may not send BUSY: --query-admin-uids). A refused
busy signal is an answer, not a failure: busy() returns False, the connection stays
and no back-off starts; counted in stats["not_allowed"].

The agent closes connections silent for --query-idle-timeout (60 s), and one idle
for a second when it needs the room for a new client. A kept connection the agent
closed is noticed before the query is sent, or by an end of file instead of an
answer: the query is then sent once more on a new connection, within the same
deadline, so an idle close never lets a request through unasked. A connection the
agent refuses at once (every slot busy) is a failure as below: fail-safe.

Fail-safe, as the reference daemon asks of its clients: each query has a short
deadline (timeout, 50 ms by default, for connect, send and receive together). If the
agent cannot be reached, does not answer in time, or answers nonsense, the request is
allowed, the connection is dropped (a late answer must not be read as the next one's),
and no query is made for a back-off that doubles from backoff_initial (1 s) up to
backoff_max (30 s); every query in that period is allowed without I/O. The first query
after it reconnects; a successful answer resets the back-off. The back-off is timed by
the client's clock (time.monotonic by default; tests pass a fake one); the per-query
deadline is real time, as sockets wait in real time. A busy signal that cannot
be delivered changes nothing: busy() then returns False, it never raises.

Tags are str (UTF-8) or bytes, 1 to 1024 bytes, without "\\n" or NUL; allow() also
refuses tags starting with "RESERVE " or with "BUSY " and more (the protocol would read
a reservation or a busy signal). An invalid tag is never sent: the call is allowed
(fail-safe) and counted in stats["invalid_tags"], so sanitize (e.g. hash) tags built
from untrusted input. busy() names follow the rules of tags; an invalid one is counted
the same way and not sent (busy() returns False).

A Client keeps one connection, shared by threads under a lock, and reconnects in a
forked child (the parent's connection is never used by two processes).
No dependencies beyond the standard library.
"""

import functools
import os
import socket
import threading
import time

__all__ = ["Client", "Throttled", "throttle", "busy", "configure", "default_client", "DEFAULT_ENDPOINT"]
__version__ = "0.1.0"

# The endpoint of the default client: $DTHROTTLE_ENDPOINT, else this path.
DEFAULT_ENDPOINT = "/run/dthrottle/query.sock"
MAX_TAG_BYTES = 1024
_MAX_ANSWER_BYTES = 64


_NOT_ALLOWED = b"ERR not allowed"


class _AgentClosed(OSError):
    """The agent closed the connection before any byte of the answer."""


class Throttled(Exception):
    """Raised by @throttle(..., raise_on_throttle=True) when the call is throttled."""

    def __init__(self, tag):
        super().__init__("throttled: %r" % (tag,))
        self.tag = tag


def _encode(tag):
    """The tag's bytes, or None if it cannot be encoded (a lone surrogate): invalid."""
    if isinstance(tag, bytes):
        return tag
    try:
        return str(tag).encode("utf-8")
    except UnicodeEncodeError:
        return None


def _valid(tag):
    return tag is not None and 0 < len(tag) <= MAX_TAG_BYTES and b"\n" not in tag and b"\0" not in tag


def _is_command(tag):
    """True if the server would read this line as a command, not as a query of `tag`:
    "RESERVE ..." (even "RESERVE " alone), or "BUSY " followed by at least one byte."""
    return tag.startswith(b"RESERVE ") or (tag.startswith(b"BUSY ") and len(tag) > 5)


def _is_ip(family, text):
    try:
        socket.inet_pton(family, text.split("%", 1)[0] if family == socket.AF_INET6 else text)
        return True
    except (OSError, ValueError):
        return False


def parse_host_port(text):
    """(host, port) of "HOST:PORT" by the grammar of include/dthrottle/client/endpoint.hpp
    (the C++ client's and the agent's): an IPv4 address, an IPv6 address in brackets
    ("[::1]:7800"), or a host name; a port from 1 to 65535. Raises ValueError with the reason
    otherwise (a bare IPv6 address is refused: its port cannot be told from its last group)."""
    def fail(why):
        raise ValueError("%r: %s" % (text, why))
    shape = "expected HOST:PORT, e.g. 127.0.0.1:7800"
    if "://" in text:
        fail(shape + " (no scheme)")
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            fail("no ']' closes the IPv6 address")
        host = text[1:close]
        if not _is_ip(socket.AF_INET6, host):
            fail("brackets hold an IPv6 address, and %r is not one" % host)
        if close + 1 == len(text):
            fail(shape)
        if text[close + 1] != ":":
            fail("expected ':' and the port after ']'")
        port = text[close + 2:]
    else:
        host, sep, port = text.rpartition(":")
        if not sep:
            fail(shape)
        if not host:
            fail("needs a host name or address, " + shape)
        if host == "*":
            fail("'*' (every address) is only for listening")
        if _is_ip(socket.AF_INET6, host):
            fail("an IPv6 address goes in brackets, e.g. [%s]:%s" % (host, port))
        if _is_ip(socket.AF_INET6, text):
            fail("an IPv6 address goes in brackets, followed by the port: [ADDRESS]:PORT")
        if all(c.isdigit() or c == "." for c in host):
            if not _is_ip(socket.AF_INET, host):
                fail("%r is not an IPv4 address (four numbers from 0 to 255)" % host)
        elif len(host) > 253 or not all(c.isascii() and (c.isalnum() or c in "-._") for c in host):
            fail("%r is not a host name or address" % host)
    if not (port.isascii() and port.isdigit()) or len(port) > 5 or not 1 <= int(port) <= 65535:
        fail("the port must be from 1 to 65535")
    return host, int(port)


class Client:
    """One connection to the agent; see the module documentation for the fail-safe rules.

    endpoint: a unix socket path ("/run/x.sock", "./x.sock", "unix:/run/x.sock") or
    "HOST:PORT" ("127.0.0.1:7800", "[::1]:7800"). None: $DTHROTTLE_ENDPOINT or
    DEFAULT_ENDPOINT. clock: a function returning seconds that times the back-off
    (time.monotonic; a test passes one it advances by hand).
    """

    def __init__(self, endpoint=None, timeout=0.05, backoff_initial=1.0, backoff_max=30.0, clock=time.monotonic):
        self.endpoint = endpoint or os.environ.get("DTHROTTLE_ENDPOINT", DEFAULT_ENDPOINT)
        self.timeout = timeout
        self._clock = clock
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self._backoff = backoff_initial
        self._retry_at = float("-inf")  # no back-off yet, whatever the clock's origin
        self._sock = None
        self._buf = b""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.stats = {"answered": 0, "failures": 0, "backed_off": 0, "invalid_tags": 0, "connects": 0,
                      "not_allowed": 0}

    def allow(self, tag):
        """True if the request tagged `tag` should be served (or the agent is unavailable)."""
        t = _encode(tag)
        if not _valid(t) or _is_command(t):
            return self._invalid()
        answer = self._ask(t)
        return answer != b"NO"

    def reserve(self, tag):
        """A reserved permit: 0.0 (go now), seconds to sleep before going (the permit is
        yours then, do not ask again), or None (denied: the wait would be too long or
        too many permits are reserved). Fail-safe: 0.0 when the agent is unavailable."""
        t = _encode(tag)
        if not _valid(t):
            self._invalid()
            return 0.0
        answer = self._ask(b"RESERVE " + t)
        if answer == b"NO":
            return None
        if answer is not None and answer.startswith(b"WAIT "):
            return int(answer[5:]) / 1000.0
        return 0.0

    def busy(self, name):
        """Signals that the service behind `name` is overloaded (docs/query-protocol.md,
        BUSY): the packet rule named `name`, else the tag rule the tag `name` falls under,
        backs off if it is adaptive. True if an adaptive rule took the signal; False if
        the agent answered that none did, refused it (this user is not in the agent's
        --query-admin-uids: counted in stats["not_allowed"], no back-off), is unavailable
        (the usual back-off applies), or `name` is invalid (as for tags; counted in
        stats["invalid_tags"], not sent)."""
        n = _encode(name)
        if not _valid(n):
            self._invalid()
            return False
        return self._ask(b"BUSY " + n) == b"OK"

    @property
    def backing_off(self):
        """True while queries are skipped after a failure."""
        return self._clock() < self._retry_at

    def close(self):
        with self._lock:
            self._disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- internals -----------------------------------------------------------------------

    def _invalid(self):
        with self._lock:
            self.stats["invalid_tags"] += 1
        return True

    def _ask(self, line):
        """Sends line + b"\\n" and returns the answer line, or None on any failure or
        during a back-off (the caller then fails safe)."""
        with self._lock:
            if self._pid != os.getpid():  # forked: never share the parent's connection
                self._sock, self._buf, self._pid = None, b"", os.getpid()
            if self._clock() < self._retry_at:
                self.stats["backed_off"] += 1
                return None
            deadline = time.monotonic() + self.timeout
            try:
                try:
                    reused = self._sock is not None and not self._closed_by_agent()
                    answer = self._exchange(line, deadline)
                except _AgentClosed:
                    if not reused:
                        raise
                    # A kept connection the agent had closed (idle): it never read the line.
                    self._disconnect()
                    answer = self._exchange(line, deadline)
                if answer == _NOT_ALLOWED:
                    self.stats["not_allowed"] += 1
                elif answer not in (b"OK", b"NO") and not (answer.startswith(b"WAIT ") and answer[5:].isdigit()):
                    raise OSError("unexpected answer %r" % (answer,))
            except (OSError, ValueError):
                self._fail()
                return None
            self.stats["answered"] += 1
            self._backoff = self.backoff_initial
            return answer

    def _exchange(self, line, deadline):
        if self._sock is None:
            self._connect(deadline)
        self._sock.settimeout(max(deadline - time.monotonic(), 1e-4))
        try:
            self._sock.sendall(line + b"\n")
        except (BrokenPipeError, ConnectionResetError) as e:
            raise _AgentClosed(str(e))
        return self._read_line(deadline)

    def _closed_by_agent(self):
        """True (and the connection dropped) if the agent closed the kept connection, or
        sent something no query asked for."""
        try:
            self._sock.setblocking(False)
            try:
                self._sock.recv(1, socket.MSG_PEEK)  # data or end of file: either way, not ours
            finally:
                self._sock.setblocking(True)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            pass
        self._disconnect()
        return True

    def _connect(self, deadline):
        ep = self.endpoint
        if ep.startswith("unix:"):
            ep = ep[5:]
        left = max(deadline - time.monotonic(), 1e-4)
        if ep.startswith("/") or ep.startswith("."):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.settimeout(left)
                s.connect(ep)
            except BaseException:
                s.close()
                raise
        else:
            host, port = parse_host_port(ep)
            s = socket.create_connection((host, port), timeout=left)  # tries each address
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock, self._buf = s, b""
        self.stats["connects"] += 1

    def _read_line(self, deadline):
        while b"\n" not in self._buf:
            if len(self._buf) > _MAX_ANSWER_BYTES:
                raise OSError("answer too long")
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no answer in time")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(256)
            except ConnectionResetError as e:
                raise _AgentClosed(str(e)) if not self._buf else e
            if not chunk:
                raise _AgentClosed("the agent closed the connection") if not self._buf else OSError("closed mid-answer")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _fail(self):
        self._disconnect()
        self.stats["failures"] += 1
        self._retry_at = self._clock() + self._backoff
        self._backoff = min(self._backoff * 2, self.backoff_max)

    def _disconnect(self):
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock, self._buf = None, b""


_default = None
_default_lock = threading.Lock()


def configure(endpoint=None, **options):
    """Replaces the default client (used by @throttle without client=) and returns it.
    options: timeout, backoff_initial, backoff_max, clock (see Client)."""
    global _default
    with _default_lock:
        old, _default = _default, Client(endpoint, **options)
    if old is not None:
        old.close()
    return _default


def default_client():
    """The default client, created on first use from $DTHROTTLE_ENDPOINT."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


def busy(name):
    """Client.busy(name) on the default client: True if an adaptive rule took the signal."""
    return default_client().busy(name)


def throttle(tag, client=None, wait=False, raise_on_throttle=False):
    """Decorator: the call goes ahead only if the agent allows `tag`.

    tag: a string, or a callable given the function's arguments that returns one.
    Throttled calls are skipped and return None, or raise Throttled with
    raise_on_throttle=True. With wait=True the call asks for a reserved permit instead
    (RESERVE) and sleeps until it is due; it is skipped only if the agent denies the
    reservation. client: a Client, default the module's default_client().
    """

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            t = tag(*args, **kwargs) if callable(tag) else tag
            c = client if client is not None else default_client()
            if wait:
                delay = c.reserve(t)
                if delay is not None:
                    if delay > 0:
                        time.sleep(delay)
                    return fn(*args, **kwargs)
            elif c.allow(t):
                return fn(*args, **kwargs)
            if raise_on_throttle:
                raise Throttled(t)
            return None

        return wrapper

    return decorator
