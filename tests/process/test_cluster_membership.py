"""Membership through raftnsctl (issue 3 item 7): a 4th node listed in the cluster file without
bootstrap joins with `member add`, becomes ready and converges; `member list` shows 4 voters with
their addresses on every node's /status; `member remove 4` leaves 3 and writes still work;
`leader transfer 2` moves leadership; `member remove <leader>` hands leadership over first and
then removes the old leader."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
from clusterh import T, write_until_acked  # noqa: E402
from harness import observed, wait_until  # noqa: E402

RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
SECRET = "raftns-test-secret"


def ctl(nodes, *args):
    a = [RAFTNSCTL, "--secret", SECRET, "--timeout-ms", str(int(T(15.0) * 1000))]
    for nd in nodes:
        a += ["-n", "127.0.0.1:%d" % nd.client_port]
    return subprocess.run(a + list(args), capture_output=True, timeout=T(60.0), text=True)


def members_of(nodes):
    r = ctl(nodes, "--json", "member", "list")
    if r.returncode != 0:
        raise AssertionError("member list: %s %s" % (r.stdout, r.stderr))
    return {m["id"]: m for m in json.loads(r.stdout)["members"]}


def members_are(nodes, ids):
    """observed(): does `member list` through nodes name exactly ids?"""
    ms = sorted(members_of(nodes))
    return observed(ms == sorted(ids), "members %r" % ms)


def status_members(nd):
    return {m["id"]: m for m in nd.status().get("members", [])}


class Membership(unittest.TestCase):
    def setUp(self):
        del harness.TEST_NODES[:]
        self.brokers = []
        self.cluster = c = clusterh.Cluster(4)
        c.config["nodes"][3]["bootstrap"] = False  # node 4 joins later
        with open(c.config_path, "w") as f:
            json.dump(c.config, f, indent=2)
        for i in (1, 2, 3):
            c[i].start(wait=False)
        c.wait_ready(nodes=[c[1], c[2], c[3]])
        c.leader(nodes=[c[1], c[2], c[3]])

    def tearDown(self):
        for b in self.brokers:
            b.close()
        self.cluster.cleanup(check=True)

    def broker(self, **kw):
        b = clusterh.Broker(**kw)
        self.brokers.append(b)
        return b

    def three(self):
        return [self.cluster[i] for i in (1, 2, 3)]

    def test_add_list_remove_transfer(self):
        c = self.cluster
        b = self.broker(name="broker-m", addr="127.0.0.1:45911", topics=["TopicM1", "TopicM2"])
        write_until_acked(b, c[1])
        n4 = c[4]
        n4.start(wait=False)
        r = ctl(self.three(), "member", "add", "4", "127.0.0.1:%d" % n4.raft_port,
                "127.0.0.1:%d" % n4.client_port, n4.http_addr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        n4.wait_ready(T(30.0))
        c.wait_converged(nodes=c.all())
        ms = members_of(self.three())
        self.assertEqual(sorted(ms), [1, 2, 3, 4])
        self.assertTrue(all(m["role"] == "voter" for m in ms.values()), ms)
        self.assertEqual(ms[4]["client"], "127.0.0.1:%d" % n4.client_port)
        self.assertEqual(ms[4]["raft"], "127.0.0.1:%d" % n4.raft_port)
        for nd in c.all():  # replicated addresses on every node
            sm = wait_until(lambda nd=nd: (lambda m: m if 4 in m and m[4].get("client") else
                                           None)(status_members(nd)), T(10.0),
                            "member 4 in /status of node %d" % nd.id)
            self.assertEqual(sm[4]["client"], "127.0.0.1:%d" % n4.client_port)
            self.assertEqual(sm[4]["http"], n4.http_addr)
        b.counter += 1
        write_until_acked(b, n4)  # the new member takes writes too

        r = ctl(self.three(), "member", "remove", "4")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_until(lambda: members_are(self.three(), [1, 2, 3]), T(10.0),
                   "3 members after remove")
        n4.stop()
        b.counter += 1
        b.drop(n4)
        write_until_acked(b, c[2])
        c.wait_converged(nodes=self.three())

        r = ctl(self.three(), "leader", "transfer", "2")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        ld = c.leader(nodes=self.three())
        self.assertEqual(ld.id, 2)

    def test_remove_the_leader_hands_over_first(self):
        c = self.cluster
        old = c.leader(nodes=self.three())
        b = self.broker(name="broker-l", addr="127.0.0.1:46911", topics=["TopicL1", "TopicL2"])
        r = ctl([old], "member", "remove", str(old.id))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rest = [nd for nd in self.three() if nd.id != old.id]
        wait_until(lambda: members_are(rest, [nd.id for nd in rest]), T(10.0),
                   "the old leader removed")
        new = c.leader(nodes=rest)
        self.assertNotEqual(new.id, old.id)
        old.stop()
        write_until_acked(b, rest[0])
        c.wait_converged(nodes=rest)


if __name__ == "__main__":
    clusterh.main()
