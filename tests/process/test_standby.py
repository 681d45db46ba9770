"""Read replicas (raftnsctl member add ... --role standby, member promote|demote): with 3 voters
and 2 standbys, `member list` and /status show the roles; a standby serves reads from its own
state and takes a broker's registration and heartbeats; with both standbys and one voter stopped
a write still commits (2 of the 3 voters; it would need 3 of 5 if standbys voted); the stopped
standbys catch up when they return; promote makes a standby a voter and demote makes it a
standby again, and a demotion of the leader or a role a member already has is refused by name."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from clusterh import T  # noqa: E402
from harness import observed, wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
SECRET = "raftns-test-secret"


def ctl(nodes, *args):
    a = [RAFTNSCTL, "--secret", SECRET, "--timeout-ms", str(int(T(15.0) * 1000))]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    return subprocess.run(a + list(args), capture_output=True, timeout=T(60.0), text=True)


def roles(nodes):
    r = ctl(nodes, "--json", "member", "list")
    if r.returncode != 0:
        raise AssertionError("member list: %s %s" % (r.stdout, r.stderr))
    return {m["id"]: m["role"] for m in json.loads(r.stdout)["members"]}


VOTERS_AND_STANDBYS = {1: "voter", 2: "voter", 3: "voter", 4: "standby", 5: "standby"}


class Standby(unittest.TestCase):
    def setUp(self):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = c = clusterh.Cluster(5)
        for i in (3, 4):
            c.config["nodes"][i]["bootstrap"] = False  # nodes 4 and 5 join as standbys
        with open(c.config_path, "w") as f:
            json.dump(c.config, f, indent=2)
        for i in (1, 2, 3):
            c[i].start(wait=False)
        c.wait_ready(nodes=self.voters())
        c.leader(nodes=self.voters())
        for i in (4, 5):
            nd = c[i]
            nd.start(wait=False)
            r = ctl(self.voters(), "member", "add", str(i), "127.0.0.1:%d" % nd.raft_port,
                    "127.0.0.1:%d" % nd.client_port, nd.http_addr, "--role", "standby")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        c.wait_ready(nodes=[c[4], c[5]])

    def tearDown(self):
        for b in self.brokers:
            b.close()
        self.cluster.cleanup(check=True)

    def voters(self):
        return [self.cluster[i] for i in (1, 2, 3)]

    def put(self, nd, key, value, timeout=None):
        return nd.request(ns.PUT_KV_CONFIG, {"namespace": "sb", "key": key, "value": value},
                          timeout=timeout)

    def test_standbys_replicate_serve_reads_and_do_not_count(self):
        c = self.cluster
        self.assertEqual(roles(self.voters()), VOTERS_AND_STANDBYS)
        st = c[4].status()
        self.assertEqual({m["id"]: m["role"] for m in st["members"]}, VOTERS_AND_STANDBYS)
        r = ctl([c[4]], "status")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = {ln.split()[0]: ln.split()[1] for ln in r.stdout.splitlines()[1:]}
        self.assertEqual(rows["4"], "follower/standby", r.stdout)
        self.assertIn(rows["1"], ("leader", "follower"), r.stdout)

        # writes through a standby, reads and heartbeats served by the standby itself
        b = clusterh.Broker(name="broker-s", addr="127.0.0.1:45931", topics=["TopicS1", "TopicS2"])
        self.brokers.append(b)
        self.assertEqual(b.register(c[4]).code, 0)
        c.wait_converged()
        for i in (4, 5):
            r = clusterh.route(c[i], "TopicS1")
            self.assertEqual(r.code, 0, r.remark)
            self.assertNotIn("raftnsServedBy", r.ext or {}, "standby %d forwarded a read" % i)
            self.assertEqual(b.heartbeat(c[i]).code, 0)

        # the standbys' liveness reports reach the leader: only they heard broker-s
        leader = c.leader()

        def leader_merged():
            r = ctl([leader], "--json", "brokers")
            if r.returncode != 0:
                return observed(False, r.stderr)
            rows = {d["brokerName"]: d for d in json.loads(r.stdout)["brokers"]}
            seen = {e["node"]: e for e in rows["broker-s"]["lastHeartbeat"]}
            return observed(seen[leader.id].get("agoMs", 0) is None and
                            "seenAgoMs" in seen[leader.id] and
                            seen[4].get("agoMs") is not None, seen)
        wait_until(leader_merged, T(15.0), "the leader merged the standbys' reports")

        # both standbys and one voter down: 2 of 3 voters still commit
        other = [nd for nd in self.voters() if nd.id != leader.id][0]
        for nd in (c[4], c[5], other):
            nd.stop()
        r = self.put(leader, "with-standbys-down", "1", timeout=T(10.0))
        self.assertEqual(r.code, 0, "write not committed without the standbys: %r" % r.remark)
        for nd in (c[4], c[5], other):
            nd.start(wait=False)
        c.wait_ready()
        c.wait_converged()
        for i in (4, 5):
            r = c[i].request(ns.GET_KV_CONFIG, {"namespace": "sb", "key": "with-standbys-down"})
            self.assertEqual((r.code, (r.ext or {}).get("value")), (0, "1"))

    def test_promote_and_demote(self):
        c = self.cluster
        r = ctl(self.voters(), "member", "promote", "4")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_until(lambda: observed(roles(self.voters()).get(4) == "voter", roles(self.voters())),
                   T(15.0), "node 4 a voter")
        r = ctl(self.voters(), "member", "promote", "4")
        self.assertEqual(r.returncode, 1)
        self.assertIn("member 4 is already a voter", r.stderr)
        r = ctl(self.voters(), "member", "demote", "4")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_until(lambda: observed(roles(self.voters()) == VOTERS_AND_STANDBYS,
                                    roles(self.voters())), T(15.0), "node 4 a standby again")
        leader = c.leader()
        r = ctl([leader], "member", "demote", str(leader.id))
        self.assertEqual(r.returncode, 1)
        self.assertIn("is the leader; transfer leadership first", r.stderr)
        r = ctl(self.voters(), "member", "demote", "9")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no member 9", r.stderr)
        r = ctl(self.voters(), "leader", "transfer", "4")
        self.assertEqual(r.returncode, 1)
        self.assertIn("member 4 is a standby and cannot lead", r.stderr)
        # a standby asked directly relays the change to the leader
        r = ctl([c[5]], "member", "promote", "5")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_until(lambda: observed(roles(self.voters()).get(5) == "voter", roles(self.voters())),
                   T(15.0), "node 5 a voter")
        self.assertEqual(self.put(c[5], "after-promote", "1").code, 0)


if __name__ == "__main__":
    harness.main()
