#!/usr/bin/env python3
"""http_client.py - a hostile HTTP client for tests/security/test_http.sh.

Every mode prints one JSON object on stdout; every loop is bounded in time.

  raw PORT REQUEST          send REQUEST (Python escapes: \\r \\n \\x00) on one
                            connection; report the status of every response
                            and whether the server closed the connection
  slow PORT TOKEN ...       open --conns connections from --addrs loopback
                            addresses (127.0.0.10 and up), each trickling one
                            byte of its request headers every --interval s;
                            meanwhile time GET /healthz and an authenticated
                            GET /api/v1/whoami on fresh connections; then wait
                            (at most --wait s) until the server has cut them;
                            with --body N each sends complete headers of a
                            POST declaring an N-byte body and trickles that
  perip PORT ADDR N         open N connections from ADDR and send nothing:
                            how many did the server refuse (close at once)?
  slowbody PORT TOKEN LEN   send complete headers declaring a LEN-byte body,
                            then trickle the body: when is it cut?
  slowread PORT PATH RATE   GET PATH ten times, pipelined, with a small
                            receive buffer, then take the answers at RATE
                            bytes a second (0: at once): how many arrived
                            whole, when was the connection cut? (60 s at most)
"""
import http.client
import json
import resource
import select
import socket
import sys
import time


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n if hard == resource.RLIM_INFINITY else min(n, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def statuses(data):
    out = []
    for line in data.split(b"\r\n"):
        if line.startswith(b"HTTP/1."):
            parts = line.split(b" ")
            if len(parts) >= 2 and parts[1].isdigit():
                out.append(int(parts[1]))
    return out


def mode_raw(port, request, wait=2.0):
    req = request.encode("latin-1").decode("unicode_escape").encode("latin-1")
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(req)
    data, closed = b"", False
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            b = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            closed = True
            break
        if not b:
            closed = True
            break
        data += b
    s.close()
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    return {"statuses": statuses(data), "closed": closed,
            "body": body[:300].decode("latin-1")}


def probe(port, path, token=None, src="127.0.0.250"):
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                       source_address=(src, 0))
        h = {"Authorization": "Bearer " + token} if token else {}
        c.request("GET", path, headers=h)
        st = c.getresponse().status
        c.close()
    except OSError as e:
        st = "error: %s" % e
    return st, time.monotonic() - t0


def probe_until_ok(port, path, token, limit):
    """Retry a probe (a refused connection is retried) until 200; seconds taken."""
    t0 = time.monotonic()
    tries = 0
    while True:
        tries += 1
        st, _ = probe(port, path, token)
        if st == 200 or time.monotonic() - t0 > limit:
            return st, time.monotonic() - t0, tries
        time.sleep(0.1)


def mode_slow(port, token, conns, addrs, interval, wait, until_ok, body=0):
    raise_nofile(conns + 256)
    t_start = time.monotonic()
    socks, refused = {}, 0
    for i in range(conns):
        src = "127.0.0.%d" % (10 + i % addrs)
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((src, 0))
            s.settimeout(3)
            s.connect(("127.0.0.1", port))
            if body:
                s.sendall(b"POST /api/v1/login HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % body)
            else:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            s.setblocking(False)
            socks[s.fileno()] = {"s": s, "opened": time.monotonic(), "next": 0.0}
        except OSError:
            refused += 1
            try:
                s.close()
            except OSError:
                pass
    t_opened = time.monotonic()
    probes, closed, answered = [], [], 0
    probe_at = [t_opened + 0.5, t_opened + 1.5] if not until_ok else [t_opened + 0.2]

    def sweep(now):
        nonlocal answered
        pl = select.poll()
        for fd in socks:
            pl.register(fd, select.POLLIN)
        for fd, _ in pl.poll(0):
            if fd in socks:
                c = socks.pop(fd)
                try:
                    b = c["s"].recv(4096)
                except OSError:
                    b = b""
                if b:
                    answered += 1
                closed.append(now - c["opened"])
                c["s"].close()
        for fd in list(socks):
            c = socks[fd]
            if now >= c["next"]:
                c["next"] = now + interval
                try:
                    c["s"].send(b"a")
                except OSError:
                    socks.pop(fd)
                    closed.append(now - c["opened"])
                    c["s"].close()

    end = t_opened + wait
    while socks and time.monotonic() < end:
        now = time.monotonic()
        if probe_at and now >= probe_at[0]:
            probe_at.pop(0)
            for path, tok in (("/healthz", None), ("/api/v1/whoami", token)):
                tries = 1
                if until_ok:
                    st, dt, tries = probe_until_ok(port, path, tok, until_ok)
                else:
                    st, dt = probe(port, path, tok)
                probes.append({"path": path, "status": st, "seconds": round(dt, 3),
                               "tries": tries, "open_slow": len(socks)})
        sweep(time.monotonic())
        time.sleep(0.05)
    left = len(socks)
    for c in socks.values():
        c["s"].close()
    return {
        "opened": conns - refused, "refused": refused,
        "open_seconds": round(t_opened - t_start, 2),
        "probes": probes,
        "probe_max_seconds": max([p["seconds"] for p in probes] or [99]),
        "probe_ok": all(p["status"] == 200 for p in probes) and len(probes) >= 2,
        "closed": len(closed), "still_open": left, "answered": answered,
        "close_min": round(min(closed or [0]), 2), "close_max": round(max(closed or [0]), 2),
    }


def mode_perip(port, addr, n):
    raise_nofile(n + 256)
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((addr, 0))
        s.settimeout(3)
        try:
            s.connect(("127.0.0.1", port))
            socks.append(s)
        except OSError:
            s.close()
    time.sleep(1.0)
    refused = 0
    for s in socks:
        r, _, _ = select.select([s], [], [], 0)
        if r:
            try:
                b = s.recv(1)
            except OSError:
                b = b""
            if not b:
                refused += 1
    # connections the server kept still answer
    kept = None
    for s in socks:
        try:
            s.settimeout(3)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            st = statuses(s.recv(4096))
            if st:
                kept = st[0]
                break
        except OSError:
            continue
    for s in socks:
        s.close()
    return {"connected": len(socks), "refused": refused, "kept_answers": kept}


def mode_slowbody(port, token, length, wait=20.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(("POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{"
               % (token, length)).encode())
    s.setblocking(False)
    t0 = time.monotonic()
    sent, answered, closed_after = 1, b"", None
    while time.monotonic() - t0 < wait:
        r, _, _ = select.select([s], [], [], 0.25)
        if r:
            try:
                b = s.recv(4096)
            except OSError:
                b = b""
            if not b:
                closed_after = time.monotonic() - t0
                break
            answered += b
        try:
            s.send(b" ")
            sent += 1
        except OSError:
            closed_after = time.monotonic() - t0
            break
    s.close()
    return {"closed_after": None if closed_after is None else round(closed_after, 2),
            "sent": sent, "statuses": statuses(answered)}


def mode_slowread(port, path, rate, wait=60.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rate > 0:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    # ten requests pipelined: ten answers are more than the kernel's buffers hold
    # (an answer that fits in them frees the server at once; only a bigger one waits)
    one = "GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path
    s.sendall((one * 9 + one.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")).encode())
    t0 = time.monotonic()
    data = b""
    closed_after = None
    step = 0.25
    while time.monotonic() - t0 < wait:
        try:
            if rate > 0:
                time.sleep(step)
                chunk = s.recv(max(1, int(rate * step)))
            else:
                chunk = s.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            closed_after = time.monotonic() - t0
            break
        data += chunk
    s.close()
    # the answers: how many arrived whole
    whole, rest = 0, data
    while True:
        head, sep, body = rest.partition(b"\r\n\r\n")
        if not sep:
            break
        length = None
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
        if length is None or len(body) < length:
            break
        whole += 1
        rest = body[length:]
    return {"bytes": len(data), "answers": whole, "complete": whole == 10,
            "closed_after": None if closed_after is None else round(closed_after, 2)}


def main(argv):
    mode = argv[1]
    if mode == "raw":
        out = mode_raw(int(argv[2]), argv[3])
    elif mode == "slow":
        opts = {"--conns": 1000, "--addrs": 100, "--interval": 0.5, "--wait": 20.0,
                "--until-ok": 0.0, "--body": 0}
        for k, v in zip(argv[4::2], argv[5::2]):
            opts[k] = type(opts[k])(v)
        out = mode_slow(int(argv[2]), argv[3], opts["--conns"], opts["--addrs"],
                        opts["--interval"], opts["--wait"], opts["--until-ok"], opts["--body"])
    elif mode == "perip":
        out = mode_perip(int(argv[2]), argv[3], int(argv[4]))
    elif mode == "slowbody":
        out = mode_slowbody(int(argv[2]), argv[3], int(argv[4]))
    elif mode == "slowread":
        out = mode_slowread(int(argv[2]), argv[3], float(argv[4]))
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
