"""Process tests of what monitoring reads from a 3-node cluster: every /metrics family has
# HELP and # TYPE (before its samples), raftns_build_info matches `raftns --version`, the process_*
families hold plausible values, the leader exports a lag series per member, HEAD works on
/healthz like GET (load balancers), and every metric that docs/grafana-dashboard.json and
docs/prometheus-alerts.yml name exists in some node's /metrics. It does not judge thresholds."""

import http.client
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, observed, wait_until  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DASHBOARD = os.path.join(ROOT, "docs", "grafana-dashboard.json")
ALERTS = os.path.join(ROOT, "docs", "prometheus-alerts.yml")
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
REFERENCED = re.compile(r"\b((?:raftns|process)_[a-z0-9_]+)\b")


def parse_exposition(text):
    """{family: {"help": bool, "type": str|None, "samples": [names], "first": line no}} and a
    list of problems (a sample before its family's HELP/TYPE, malformed lines)."""
    fams, problems = {}, []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(None, 3)
            if len(parts) < 4:
                problems.append("line %d: %r" % (no, line))
                continue
            f = fams.setdefault(parts[2], {"help": False, "type": None, "samples": []})
            if parts[1] == "HELP":
                f["help"] = True
            else:
                f["type"] = parts[3].strip()
            continue
        if line.startswith("#"):
            continue
        m = NAME.match(line)
        if m is None:
            problems.append("line %d: %r" % (no, line))
            continue
        name = m.group(0)
        fam = name
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and fams.get(base, {}).get("type") == "histogram":
                fam = base
        if fam not in fams:
            problems.append("line %d: sample %s before its # HELP / # TYPE" % (no, name))
            fams[fam] = {"help": False, "type": None, "samples": []}
        fams[fam]["samples"].append(name)
    return fams, problems


def sample_value(text, name, labels=""):
    for line in text.splitlines():
        if line.startswith(name + labels + " ") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(None, 1)[1])
    return None


def http_request(addr, method, path):
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=T(5))
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def referenced_metrics():
    """Metric names used by the dashboard's expressions and the alert rules' expr lines."""
    names = set()
    with open(DASHBOARD) as f:
        dash = json.load(f)
    for p in dash["panels"]:
        for t in p.get("targets", []):
            names |= set(REFERENCED.findall(t["expr"]))
    names |= set(REFERENCED.findall(dash["templating"]["list"][1]["query"]))
    with open(ALERTS) as f:
        for line in f:
            s = line.strip()
            if s.startswith("expr:"):
                names |= set(REFERENCED.findall(s))
    return names


class MetricsCatalog(clusterh.ClusterTestCase):

    def metrics_of(self, nd):
        code, body = nd.http_get("/metrics")
        self.assertEqual(code, 200)
        return body.decode("utf-8")

    def test_every_family_has_help_and_type(self):
        for nd in self.cluster.all():
            nd.request(ns.GET_BROKER_CLUSTER_INFO)  # a request family with samples
            fams, problems = parse_exposition(self.metrics_of(nd))
            self.assertEqual(problems, [], "node %d" % nd.id)
            missing = sorted(f for f, v in fams.items() if not v["help"] or not v["type"])
            self.assertEqual(missing, [], "node %d: families without # HELP or # TYPE" % nd.id)
            self.assertGreater(len(fams), 40)
            for f, v in fams.items():
                self.assertIn(v["type"], ("counter", "gauge", "histogram"), f)
                if v["type"] == "counter":
                    self.assertTrue(f.endswith("_total"), f)

    def test_build_and_process_metrics(self):
        out = subprocess.run([harness.RAFTNS_BIN, "--version"], capture_output=True,
                             timeout=T(10)).stdout.decode()
        m = re.match(r"raftns (\S+) \(git (\S+)\)", out)
        self.assertIsNotNone(m, out)
        nd = self.cluster.all()[0]
        text = self.metrics_of(nd)
        self.assertIn('raftns_build_info{version="%s",revision="%s"} 1' % m.groups(), text)
        st = nd.status()
        self.assertEqual((st["version"], st["git_revision"]), m.groups())
        now = time.time()
        start = sample_value(text, "process_start_time_seconds")
        self.assertTrue(now - 3600 < start <= now + 1, (start, now))
        self.assertGreater(sample_value(text, "process_resident_memory_bytes"), 1 << 20)
        fds = sample_value(text, "process_open_fds")
        real_fds = len(os.listdir("/proc/%d/fd" % nd.pid))
        self.assertTrue(abs(fds - real_fds) <= 5, (fds, real_fds))
        self.assertGreaterEqual(sample_value(text, "process_max_fds"), fds)
        cpu = sample_value(text, "process_cpu_seconds_total")
        with open("/proc/%d/stat" % nd.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        proc_cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        self.assertTrue(abs(cpu - proc_cpu) < 0.5 + 0.2 * proc_cpu, (cpu, proc_cpu))

    def test_leader_exports_lag_per_member(self):
        leader = self.cluster.leader()

        def lag_series():
            text = self.metrics_of(leader)
            peers = sorted(re.findall(r'raftns_raft_follower_lag_entries\{peer="(\d+)"\}', text))
            return observed(peers == ["1", "2", "3"], peers)
        wait_until(lag_series, T(10), "a lag series per member on the leader")
        for nd in self.cluster.followers(leader):
            self.assertNotIn('raftns_raft_follower_lag_entries{', self.metrics_of(nd))
        # a paused follower falls behind while writes go on
        follower = self.cluster.followers(leader)[0]
        follower.pause()
        try:
            for i in range(5):
                broker = self.broker(name="broker-lag-%d" % i, addr="127.0.0.1:%d" % (20000 + 2 * i))
                clusterh.write_until_acked(broker, leader)

            def lagging():
                v = sample_value(self.metrics_of(leader), "raftns_raft_follower_lag_entries",
                                 '{peer="%d"}' % follower.id)
                return observed(v is not None and v >= 5, v)
            wait_until(lagging, T(10), "the paused member's lag >= 5 entries")
        finally:
            follower.resume()

        def caught_up():
            v = sample_value(self.metrics_of(leader), "raftns_raft_follower_lag_entries",
                             '{peer="%d"}' % follower.id)
            return observed(v == 0, v)
        wait_until(caught_up, T(15), "the resumed member's lag back to 0")

    def test_head_healthz(self):
        nd = self.cluster.all()[0]
        code, headers, body = http_request(nd.http_addr, "GET", "/healthz")
        hcode, hheaders, hbody = http_request(nd.http_addr, "HEAD", "/healthz")
        self.assertEqual((code, body), (200, b"ok\n"))
        self.assertEqual(hcode, 200)
        self.assertEqual(hbody, b"")
        self.assertEqual(hheaders.get("Content-Length"), headers.get("Content-Length"))
        hcode, _, _ = http_request(nd.http_addr, "HEAD", "/status")
        self.assertEqual(hcode, 200)
        pcode, _, _ = http_request(nd.http_addr, "POST", "/healthz")
        self.assertEqual(pcode, 405)

    def test_dashboard_and_alerts_use_existing_metrics(self):
        names = referenced_metrics()
        self.assertGreater(len(names), 15)
        present = set()
        for nd in self.cluster.all():
            nd.request(ns.GET_BROKER_CLUSTER_INFO)
            for f, v in parse_exposition(self.metrics_of(nd))[0].items():
                present |= set(v["samples"])
        missing = sorted(names - present)
        self.assertEqual(missing, [], "referenced by the dashboard or the alert rules but "
                                      "absent from every node's /metrics")
        with open(ALERTS) as f:
            text = f.read()
        for alert in ("RaftnsNoLeader", "RaftnsNodeNotReady", "RaftnsDiverged",
                      "RaftnsCommitLag", "RaftnsExpiryStorm"):
            self.assertIn("alert: " + alert, text)


if __name__ == "__main__":
    clusterh.main()
