#!/usr/bin/env python3
"""scale_submit.py - the submitting side of bench/scale_sim.sh.

  scale_submit.py fill URL TOKEN TENANTS N       queue N jobs over tenants t1..tTENANTS
                                                 as fast as 8 keep-alive connections go
  scale_submit.py rate URL TOKEN TENANTS RATE S  RATE submits a second for S seconds
                                                 (open loop over 4 connections)

Prints one JSON object: ok, bad, p50_ms, p99_ms, max_ms, seconds.  Jobs are one
GPU of class gpu1 running `sleep 3599.77` (ended by their agents at the bench's end:
--stop-workloads-on-exit); they start only as quota allows.
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def conn(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def submit(c, url, token, tenant, k):
    body = json.dumps({"name": "s%d" % k, "class": "gpu1", "command": ["sleep", "3599.77"]})
    t0 = time.monotonic()
    try:
        c.request("POST", "/api/v1/tenants/%s/projects/p/jobs" % tenant, body=body,
                  headers={"Authorization": "Bearer " + token,
                           "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        st = r.status
    except (OSError, http.client.HTTPException):
        st = 0
    return st, (time.monotonic() - t0) * 1000.0


def summary(lat, ok, bad, seconds):
    lat.sort()
    pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 2) if lat else None
    return {"ok": ok, "bad": bad, "p50_ms": pick(0.50), "p99_ms": pick(0.99),
            "max_ms": round(lat[-1], 2) if lat else None, "seconds": round(seconds, 2)}


def run(url, token, tenants, n, threads, interval):
    """n submits over `threads` connections; one every `interval` s overall (0: flat out)."""
    lat, lock = [], threading.Lock()
    counts = {"ok": 0, "bad": 0}
    t_start = time.monotonic()

    def worker(w):
        c = conn(url)
        for k in range(w, n, threads):
            if interval:
                due = t_start + k * interval
                d = due - time.monotonic()
                if d > 0:
                    time.sleep(d)
            st, ms = submit(c, url, token, "t%d" % (1 + k % tenants), k)
            if st == 0:
                c.close()
                c = conn(url)
            with lock:
                lat.append(ms)
                counts["ok" if st == 201 else "bad"] += 1
        c.close()

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return summary(lat, counts["ok"], counts["bad"], time.monotonic() - t_start)


def main(argv):
    mode, url, token, tenants = argv[1], argv[2], argv[3], int(argv[4])
    if mode == "fill":
        out = run(url, token, tenants, int(argv[5]), 8, 0)
    elif mode == "rate":
        rate, secs = float(argv[5]), float(argv[6])
        out = run(url, token, tenants, int(rate * secs), 4, 1.0 / rate)
    else:
        sys.exit("usage: scale_submit.py fill|rate URL TOKEN TENANTS ...")
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
