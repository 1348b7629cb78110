# SPDX-License-Identifier: BSD-3-Clause
"""The hostile inputs of the hostile-network suite, and a second, independent implementation of
the connecting side of libreduce's bootstrap handshake (src/transport/bootstrap/handshake.h) to
build the ones that need it: a wrong proof, a replayed handshake, a truncated one.

Every attack takes (host, port, stop) and runs until it is done or `stop` (a threading.Event)
is set; it returns a short text of what the port did (refused, closed, reset, answered).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import socket
import ssl
import struct
import time

MAGIC = 0x5342524C
VERSION = 2
HELLO, CHALLENGE, AUTH, WELCOME, REFUSED = 1, 2, 3, 4, 5
HEADER = struct.Struct("<IHHI")
CONNECT_TIMEOUT_S = 5.0


def frame(kind: int, body: bytes) -> bytes:
    return HEADER.pack(MAGIC, VERSION, kind, len(body)) + body


SCOPE = 0  # the communicator a hello names: none (these attacks target one job's reducer)


def proof(secret: bytes, listener_side: bool, connector_nonce: bytes, listener_nonce: bytes,
          signed: bytes = b"") -> bytes:
    """The listener's proof, or the connector's over `signed` (its tag and worker address)."""
    msg = (b"libreduce-bootstrap-v2" + (b"L" if listener_side else b"C") + connector_nonce
           + listener_nonce + struct.pack("<Q", SCOPE) + signed)
    return hmac.new(secret, msg, hashlib.sha256).digest()


def recv_frame(sock: socket.socket) -> tuple[int, bytes] | None:
    """One frame, or None when the peer closed or reset first."""
    def exactly(n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                part = sock.recv(n - len(data))
            except (ConnectionError, socket.timeout):
                return None
            if not part:
                return None
            data += part
        return data
    head = exactly(HEADER.size)
    if head is None:
        return None
    magic, version, kind, length = HEADER.unpack(head)
    if magic != MAGIC or version != VERSION or length > 1 << 17:
        raise ValueError(f"not a bootstrap frame: {head!r}")
    body = exactly(length)
    return None if body is None else (kind, body)


def connect(host: str, port: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def challenge_of(sock: socket.socket) -> tuple[bytes, bytes, bytes] | None:
    """Sends a hello; returns (our nonce, listener nonce, listener proof) or None."""
    nonce = os.urandom(32)
    sock.sendall(frame(HELLO, nonce + struct.pack("<Q", SCOPE)))
    got = recv_frame(sock)
    if got is None or got[0] != CHALLENGE or len(got[1]) != 64:
        return None
    return nonce, got[1][:32], got[1][32:]


def is_bootstrap_port(host: str, port: int, secret: bytes) -> bool:
    """True when the port answers a hello with a challenge that proves `secret`."""
    try:
        with connect(host, port) as sock:
            got = challenge_of(sock)
    except (OSError, ValueError):
        return False
    return got is not None and hmac.compare_digest(got[2], proof(secret, True, got[0], got[1]))


def auth_body(secret: bytes, cn: bytes, ln: bytes) -> bytes:
    # A tag and an address that never reach UCX: every attack's proof is wrong or never sent.
    signed = struct.pack("<Q", 0x5EED) + b"\x01" * 64
    return proof(secret, False, cn, ln, signed) + signed


# --- attacks ------------------------------------------------------------------------------

def _outcome(sock: socket.socket) -> str:
    try:
        sock.settimeout(0.5)
        data = sock.recv(4096)
        return "closed" if not data else f"answered {len(data)} B"
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "held open"
    except OSError as e:
        return f"error {e.errno}"


def _verdict(reply) -> str:
    if reply is None:
        return "closed"
    return "refused" if reply[0] == REFUSED else f"answered frame type {reply[0]}"


def repeat(send_once):
    """An attack that repeats one connection's worth of hostile bytes until stopped."""
    def attack(host: str, port: int, stop) -> str:
        outcomes: dict[str, int] = {}
        rounds = 0
        while rounds < 3 or not stop.is_set():
            rounds += 1
            try:
                with connect(host, port) as sock:
                    what = send_once(sock)
            except OSError as e:
                what = f"connect error {e.errno}"
            except ValueError:
                what = "answered a non-bootstrap frame"
            outcomes[what] = outcomes.get(what, 0) + 1
        return ", ".join(f"{k} x{v}" for k, v in sorted(outcomes.items()))
    return attack


def raw(payload: bytes):
    def send_once(sock: socket.socket) -> str:
        try:
            sock.sendall(payload)
        except OSError:
            return "reset while sending"
        return _outcome(sock)
    return repeat(send_once)


def tls_client_hello() -> bytes:
    """The bytes a real TLS client sends first, from Python's ssl module."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname="reducer.example")
    try:
        conn.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


HTTP_REQUEST = (b"GET /healthz HTTP/1.1\r\nHost: reducer\r\nUser-Agent: probe/1.0\r\n"
                b"Accept: */*\r\n\r\n")


def truncated_handshake(secret: bytes):
    def send_once(sock: socket.socket) -> str:
        got = challenge_of(sock)
        if got is None:
            return "no challenge"
        whole = frame(AUTH, auth_body(secret, got[0], got[1]))
        sock.sendall(whole[: len(whole) // 2])
        return "truncated auth sent"
    return repeat(send_once)


def wrong_proof(secret: bytes):
    def send_once(sock: socket.socket) -> str:
        got = challenge_of(sock)
        if got is None:
            return "no challenge"
        sock.sendall(frame(AUTH, auth_body(secret + b"-wrong", got[0], got[1])))
        return _verdict(recv_frame(sock))
    return repeat(send_once)


def replayed_handshake(secret: bytes):
    """Captures a correct hello + auth for one challenge, then replays them on new connections."""
    captured: list[bytes] = []

    def send_once(sock: socket.socket) -> str:
        if not captured:
            got = challenge_of(sock)
            if got is None:
                return "no challenge"
            captured.append(frame(HELLO, got[0] + struct.pack("<Q", SCOPE)))
            captured.append(frame(AUTH, auth_body(secret, got[0], got[1])))
            return "captured"
        sock.sendall(captured[0])
        if recv_frame(sock) is None:
            return "no challenge"
        sock.sendall(captured[1])
        return _verdict(recv_frame(sock))
    return repeat(send_once)


def held_open(count: int):
    """`count` connections that never send a byte, held until stopped (slowloris)."""
    def attack(host: str, port: int, stop) -> str:
        socks = []
        failed = 0
        for _ in range(count):
            try:
                socks.append(socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S))
            except OSError:
                failed += 1
        stop.wait()
        still_open = 0
        for s in socks:
            s.setblocking(False)
            try:
                s.recv(1)  # b"": closed by the port's owner
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
            s.close()
        closed = len(socks) - still_open
        return f"{len(socks)} opened, {failed} failed, {closed} closed by it"
    return attack


def connect_close(count: int):
    def attack(host: str, port: int, stop) -> str:
        failed = 0
        start = time.monotonic()
        for _ in range(count):
            try:
                socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
            except OSError:
                failed += 1
        return f"{count} in {time.monotonic() - start:.1f} s, {failed} failed"
    return attack


# --- what each port must answer ---------------------------------------------------------------

GARBAGE = {"closed", "reset", "reset while sending"}
# A worker's port disappears when its job ends, during the attack: connecting then fails.
WORKER_GONE = {"connect error 111", "connect error 104"}
HANDSHAKE_ATTACKS = {
    # attack: (what libreduce's bootstrap port answers, what a UCX port answers)
    "truncated handshake": ({"truncated auth sent"}, {"no challenge"}),
    "wrong HMAC": ({"refused"}, {"no challenge"}),
    "replayed handshake": ({"captured", "refused"}, {"no challenge"}),
}
# The bootstrap holds at most this many unauthenticated connections (LIBREDUCE_BOOTSTRAP_PENDING's
# default) and closes the oldest beyond it; the metrics endpoint holds this many clients.
BOOTSTRAP_PENDING = 256
METRICS_CLIENTS = 32


def scrapes(address: str) -> bool:
    """True when the metrics endpoint at host:port answers a scrape with 200."""
    host, _, port = address.rpartition(":")
    try:
        with connect(host, int(port)) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: reducer\r\n\r\n")
            sock.settimeout(CONNECT_TIMEOUT_S)
            return sock.recv(12).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def unexpected(name: str, kind: str, owner: str, outcome: str) -> list[str]:
    """The parts of an attack's outcome a port of `kind` ("bootstrap", "ucx" or "metrics") must
    never give: an answer to garbage (the metrics endpoint's HTTP errors aside), a challenge on
    a UCX port, a forged proof accepted, an idle flood held beyond the port's bound. [] when it
    answered as it must."""
    if name.endswith("idle connections"):
        opened, _, rest = outcome.partition(" opened, ")
        closed = int(rest.split(", ")[1].split()[0]) if ", " in rest else 0
        bound = {"bootstrap": BOOTSTRAP_PENDING, "metrics": METRICS_CLIENTS}.get(kind)
        if bound is not None and closed < int(opened) - bound:
            return [f"only {closed} of {opened} idle connections closed (at most {bound} may "
                    f"wait)"]
        return []
    if name.endswith("connect/close"):
        return [] if outcome.endswith(" 0 failed") else [outcome]
    allowed = set(GARBAGE)
    if name in HANDSHAKE_ATTACKS:
        bootstrap, ucx = HANDSHAKE_ATTACKS[name]
        allowed = set(bootstrap if kind == "bootstrap" else ucx)
    if owner == "worker":
        allowed |= WORKER_GONE | {"closed", "no challenge"}
    if kind == "metrics":
        # An HTTP endpoint: garbage gets an HTTP error, or is held until its 2 s deadline; a
        # bootstrap hello is no HTTP request.
        allowed = GARBAGE | {"held open", "no challenge", "truncated auth sent"}
    kinds = [part.rsplit(" x", 1)[0] for part in outcome.split(", ") if part]
    return [k for k in kinds if k not in allowed
            and not (kind == "metrics" and k.startswith("answered "))]


def all_attacks(secret: bytes) -> list[tuple[str, object]]:
    rng = os.urandom
    return [
        ("zeros 16 B", raw(bytes(16))),
        ("zeros 100 KB", raw(bytes(100_000))),
        ("zeros 1 MiB", raw(bytes(1 << 20))),
        ("random 64 B", raw(rng(64))),
        ("random 4 KiB", raw(rng(4096))),
        ("random 1 MiB", raw(rng(1 << 20))),
        ("0xff 100 KB", raw(b"\xff" * 100_000)),
        ("HTTP request", raw(HTTP_REQUEST)),
        ("TLS ClientHello", raw(tls_client_hello())),
        ("truncated handshake", truncated_handshake(secret)),
        ("wrong HMAC", wrong_proof(secret)),
        ("replayed handshake", replayed_handshake(secret)),
        ("1000 idle connections", held_open(1000)),
        ("10000 connect/close", connect_close(10_000)),
    ]
