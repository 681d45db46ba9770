#!/usr/bin/env python3
"""Loop lag while periodic work runs (issue 11 item 2): one raftns node holding BROKERS x TOPICS
(stock-shaped whole registrations, raftns-bench setup), then for DURATION seconds rounds of
sequential 322 keep-alives (one connection per broker) while a PUT_KV every WRITE_S seconds keeps
checkpoints (--checkpoint-ms) and snapshots (--snapshot-threshold) coming. Prints the rounds, the
lag histogram of that phase, and what the node logged about its snapshots and digests.
usage: scripts/periodic-lag.py BUILD_DIR DURATION [raftns args...]
  env: B (300), T (10000), WRITE_S (0 = no writes)"""
import json, os, socket, subprocess, sys, time, statistics, tempfile, urllib.request, shutil
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "process"))
import nsclient
BUILD = sys.argv[1]; DUR = float(sys.argv[2]); EXTRA = sys.argv[3:]
B = int(os.environ.get("B", "300")); T = int(os.environ.get("T", "10000"))
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
d = tempfile.mkdtemp(prefix="offloop-")
C, R, H = port(), port(), port()
log = open(d + "/log", "w")
srv = subprocess.Popen([BUILD + "/raftns", "--id", "1", "--data-dir", d + "/d", "--client-addr",
    "127.0.0.1:%d" % C, "--raft-addr", "127.0.0.1:%d" % R, "--http-addr", "127.0.0.1:%d" % H,
    "--log-level", "info"] + EXTRA, stdout=log, stderr=subprocess.STDOUT)
bench = None
try:
    dl = time.monotonic() + 10
    while True:
        try: socket.create_connection(("127.0.0.1", C), 0.2).close(); break
        except OSError:
            if time.monotonic() > dl: raise
            time.sleep(0.1)
    t0 = time.monotonic()
    bench = subprocess.Popen([BUILD + "/raftns-bench", "-a", "127.0.0.1:%d" % C, "-c", "1", "--mix",
        "alltopics=100", "--count", "1", "--brokers", str(B), "--topics", str(T), "--topic-pool",
        str(T), "--split", "0", "--setup-conns", "4", "--pid", str(srv.pid), "--json", "--hold",
        "900", "--grace", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = bench.stdout.readline()
    print("load %.1f s" % (time.monotonic() - t0), flush=True)
    conns = [nsclient.Conn("127.0.0.1:%d" % C, timeout=30) for _ in range(B)]
    def lagm():
        m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % H, timeout=5).read().decode()
        return {l.split()[0]: float(l.split()[1]) for l in m.splitlines() if l.startswith("raftns_event_loop_lag_seconds_bucket")}
    lag0 = lagm()
    import threading
    stop_w = threading.Event()
    WRITE_S = float(os.environ.get("WRITE_S", "0"))
    def writer():
        w = nsclient.Conn("127.0.0.1:%d" % C, timeout=30)
        k = 0
        while not stop_w.wait(WRITE_S):
            k += 1
            w.request(nsclient.PUT_KV_CONFIG, {"namespace": "offloop", "key": "k%d" % (k % 50),
                      "value": str(k)}, timeout=30)
        w.close()
    wt = threading.Thread(target=writer) if WRITE_S > 0 else None
    if wt: wt.start()
    rounds = []
    t1 = time.monotonic()
    while time.monotonic() - t1 < DUR:
        s0 = time.monotonic()
        for i, c in enumerate(conns):
            ext = {"brokerAddr": "10.%d.%d.%d:10911" % ((i >> 16) & 255, (i >> 8) & 255, i & 255),
                   "brokerName": "bench-b%d" % i, "clusterName": "BenchCluster", "brokerId": "0"}
            c.request(322, ext, b'{"counter":1,"stateVersion":0,"timestamp":1700000000000}', timeout=60)
        rounds.append(time.monotonic() - s0)
        time.sleep(0.05)
    stop_w.set()
    if wt: wt.join()
    rounds.sort()
    print("rounds n=%d median %.3f p90 %.3f max %.3f" % (len(rounds), statistics.median(rounds),
          rounds[int(len(rounds) * 0.9)], rounds[-1]))
    lag1 = lagm()
    print("IDLE lag cumulative le->ticks:", {k.split('"')[1]: int(lag1[k] - lag0.get(k, 0)) for k in lag1})
    m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % H, timeout=5).read().decode()
    for ln in m.splitlines():
        if ln.startswith("raftns_event_loop") or ln.startswith("raftns_process_resident"):
            print(ln)
    st = open("/proc/%d/status" % srv.pid).read()
    print([l for l in st.splitlines() if l.startswith(("VmRSS", "VmHWM"))])
    print(os.getloadavg())
finally:
    if bench: bench.kill(); bench.wait()
    srv.terminate(); srv.wait()
    log.close()
    NLOG = [0]
    import re
    took = [float(x) for x in re.findall(r"(?:took a snapshot of \d+ bytes|froze a snapshot at index \d+) in ([\d.]+) ms", open(d + "/log").read())]
    waited = [float(x) for x in re.findall(r"computed off the loop.*?\(([\d.]+) ms waited", open(d + "/log").read())]
    print("loop part of snapshots (ms): n=%d max %.1f median %.1f" % (len(took), max(took or [0]), statistics.median(took or [0])))
    print("digests off the loop: n=%d, waited max %.1f ms" % (len(waited), max(waited or [0])))
    for ln in open(d + "/log"):
        if "snapshot" in ln or "digest" in ln or "restored" in ln:
            NLOG[0] += 1
            if NLOG[0] <= int(os.environ.get("SHOWLOG", "8")): print(ln.rstrip())
    shutil.rmtree(d)
