"""What a new operator runs from README and docs/ (issue 12, "How it will be checked"), for the
rough edges that review found: each test is one mistake or one documented command whose answer
was wrong or unclear. The commands' main behaviour is tested next to them (test_backup_restore,
test_standby, test_ops_answers, test_mqadmin_cli); this file holds only what those missed."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
from harness import T, observed, wait_until  # noqa: E402

CTL_BIN = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
SECRET = "raftns-test-secret"


def run(argv, timeout=None):
    p = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=timeout or T(60.0))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def ctl(nodes, *args, secret=SECRET):
    argv = [CTL_BIN, "--timeout-ms", str(int(T(5.0) * 1000)), "--secret", secret]
    for nd in nodes:
        argv += ["-n", "%s:%d" % nd.addr]
    return run(argv + list(args))


class OneNodeCluster(unittest.TestCase):
    """One bootstrap node from a cluster file (so it has the test secret)."""

    @classmethod
    def setUpClass(cls):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="raftns-opreview-")
        cls.c = clusterh.Cluster(1).start()
        cls.nd = cls.c[1]

    @classmethod
    def tearDownClass(cls):
        cls.c.cleanup(check=True)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_inspect_dump_into_a_new_dir(self):
        # docs/backup-and-replicas.md: "--dump DIR writes each table's bytes to DIR/<table>.bin";
        # an operator names a fresh dir, which used to fail as an "i/o error" of the backup file.
        path = os.path.join(self.tmp, "a.snap")
        rc, out, err = ctl([self.nd], "snapshot", "save", path)
        self.assertEqual(rc, 0, out + err)
        dump = os.path.join(self.tmp, "dump-a")
        rc, out, err = ctl([], "snapshot", "inspect", path, "--dump", dump)
        self.assertEqual(rc, 0, out + err)
        for table in ("route", "kv", "config", "members", "acl", "requestIds"):
            self.assertTrue(os.path.isfile(os.path.join(dump, table + ".bin")), table)
        # a dir that cannot be made is named, and the backup file is not blamed
        bad = os.path.join(self.tmp, "no-such-parent", "dump")
        rc, out, err = ctl([], "snapshot", "inspect", path, "--dump", bad)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("cannot create " + bad, err)
        self.assertNotIn("i/o error", err)

    def test_missing_secret_is_named(self):
        # without RAFTNS_SECRET the reply blames a "wrong cluster secret"; say that none was given
        rc, out, err = ctl([self.nd], "member", "list", secret="")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("no cluster secret was given: pass --secret S or set RAFTNS_SECRET", err)
        rc, out, err = ctl([self.nd], "member", "list", secret="a-wrong-secret-123456")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("signature mismatch", err)
        self.assertNotIn("no cluster secret was given", err)

    def test_http_or_raft_port_given_for_the_client_port(self):
        c = self.c.config["nodes"][0]
        for addr in (c["http"], c["raft"]):
            rc, out, err = run([CTL_BIN, "--timeout-ms", str(int(T(5.0) * 1000)), "-n", addr,
                                "clusters"])
            self.assertEqual(rc, 3, out + err)
            self.assertIn(addr + ": connection closed before the reply (is it a client port? "
                          "a raft or http port closes such requests)", err)


class CommandLineMistakes(unittest.TestCase):
    """No server needed: the mistake is in the command line."""

    def test_address_without_port_is_a_usage_error(self):
        # "-n 127.0.0.1" (the port forgotten) used to be exit 3 "no name server answered"
        for bad in ("127.0.0.1", "nohost:x", ":9876", "127.0.0.1:0", "127.0.0.1:65536"):
            rc, out, err = run([CTL_BIN, "-n", bad, "status"])
            self.assertEqual(rc, 2, "%s: %s" % (bad, out + err))
            self.assertIn("bad -n address (want HOST:PORT): " + bad, err)
            self.assertEqual(out, "")

    def test_usage_error_is_short(self):
        # the whole help after each mistake pushed the line saying what was wrong off the screen
        rc, out, err = run([CTL_BIN, "-n", "127.0.0.1:1", "kv", "put", "ns"])
        self.assertEqual(rc, 2, out + err)
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith("raftnsctl: kv needs"), err)
        self.assertLessEqual(len(lines), 3, err)
        self.assertIn("usage: raftnsctl", err)
        self.assertIn("raftnsctl --help", err)


    def test_address_override_taking_another_members_address(self):
        # used to start and fail in raft's bootstrap with "server address already in use ()"
        d = tempfile.mkdtemp(prefix="raftns-opreview-")
        try:
            p = harness.free_ports(4)
            cfg = {"secret": SECRET, "nodes": [
                {"id": 1, "raft": "127.0.0.1:%d" % p[0], "client": "127.0.0.1:%d" % p[1],
                 "bootstrap": True},
                {"id": 2, "raft": "127.0.0.1:%d" % p[2], "client": "127.0.0.1:%d" % p[3],
                 "bootstrap": True}]}
            path = os.path.join(d, "cluster.json")
            with open(path, "w") as f:
                json.dump(cfg, f)
            data = os.path.join(d, "data")
            for flag, addr in (("--raft-addr", p[2]), ("--client-addr", p[3])):
                rc, out, err = run([harness.RAFTNS_BIN, "--config", path, "--id", "1",
                                    "--data-dir", data, flag, "127.0.0.1:%d" % addr],
                                   timeout=T(20.0))
                self.assertEqual(rc, 2, out + err)
                self.assertIn("%s 127.0.0.1:%d is node 2's address in %s" % (flag, addr, path),
                              err)
        finally:
            shutil.rmtree(d, ignore_errors=True)

class DataDirOfAnotherCluster(unittest.TestCase):
    """A data dir made by a cluster with the same ids but other addresses (a restored one, a
    test one), started with this cluster's file: the start must say so."""

    def setUp(self):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        del harness.TEST_NODES[:]
        self.c = clusterh.Cluster(3)
        self.proc = None

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(T(10.0))
        self.c.cleanup(check=False)

    def test_other_clusters_data_dir_explained(self):
        c = self.c.start()
        for nd in c.all():
            nd.stop()
        other = json.loads(json.dumps(c.config))
        ports = harness.free_ports(6)
        for k, n in enumerate(other["nodes"]):
            n["raft"] = "127.0.0.1:%d" % ports[2 * k]
            n["client"] = "127.0.0.1:%d" % ports[2 * k + 1]
            n.pop("http", None)
        path = os.path.join(c.dir, "other.json")
        with open(path, "w") as f:
            json.dump(other, f)
        log = os.path.join(c.dir, "other.log")
        self.proc = subprocess.Popen([harness.RAFTNS_BIN, "--config", path, "--id", "1",
                                      "--data-dir", c[1].data_dir, "--log-file", log],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

        def text():
            try:
                with open(log) as f:
                    return f.read()
            except OSError:
                return ""
        wait_until(lambda: observed("belongs to a 3-voter cluster" in text(), text()[-800:]),
                   T(15.0), "the start explains the other cluster's data dir")
        line = [ln for ln in text().splitlines() if "belongs to a 3-voter cluster" in ln][0]
        self.assertIn("2@127.0.0.1:%d" % c[2].raft_port, line)
        self.assertIn("2@127.0.0.1:%d" % ports[2], line)


def roles(nodes):
    rc, out, err = ctl(nodes, "--json", "member", "list")
    if rc != 0:
        raise AssertionError("member list: %s %s" % (out, err))
    return {m["id"]: m["role"] for m in json.loads(out)["members"]}


class StandbyPromotedWhileDown(unittest.TestCase):
    """3 voters and standby 4; 4 stops, and `member promote 4` must not make a down member a
    voter (raft promotes a member whose last match index is current at once)."""

    def setUp(self):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)
        del harness.TEST_NODES[:]
        self.c = c = clusterh.Cluster(4)
        c.config["nodes"][3]["bootstrap"] = False
        with open(c.config_path, "w") as f:
            json.dump(c.config, f, indent=2)
        self.voters = [c[1], c[2], c[3]]
        for nd in self.voters:
            nd.start(wait=False)
        c.wait_ready(nodes=self.voters)
        c.leader(nodes=self.voters)
        nd = c[4]
        nd.start(wait=False)
        rc, out, err = ctl(self.voters, "member", "add", "4", "127.0.0.1:%d" % nd.raft_port,
                           "127.0.0.1:%d" % nd.client_port, nd.http_addr, "--role", "standby")
        self.assertEqual(rc, 0, out + err)
        c.wait_ready(nodes=[nd])

    def tearDown(self):
        self.c.cleanup(check=True)

    def test_promote_refused_while_the_standby_is_down(self):
        c = self.c
        c.wait_converged(nodes=c.all())
        c[4].stop()
        # The leader judges "answers" by raft traffic within one election timeout, which
        # /status shows per member as "heard"; no write in between, so the standby's match
        # index stays current: the case raft promotes at once.
        lead = c.leader(nodes=self.voters)

        def heard_4():
            return [m.get("heard") for m in lead.status().get("members", []) if m["id"] == 4]

        wait_until(lambda: observed(heard_4() == [False], heard_4()), T(15.0),
                   "the leader no longer hears node 4")
        rc, out, err = ctl(self.voters, "member", "promote", "4")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("member 4 does not answer the leader", err)
        self.assertEqual(roles(self.voters).get(4), "standby")
        # started again, it is promoted
        c[4].start(wait=True, timeout=T(30.0))
        rc, out, err = ctl(self.voters, "member", "promote", "4")
        self.assertEqual(rc, 0, out + err)
        wait_until(lambda: observed(roles(self.voters).get(4) == "voter", roles(self.voters)),
                   T(15.0), "node 4 a voter")


if __name__ == "__main__":
    harness.main()
