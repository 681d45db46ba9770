"""Process tests of the answers an operator gets (issue 12, "clear answers"): start-up refusals
that name the flag, key or address (unknown flags, unknown settings, non-boolean booleans, zero or
inverted raft timings, a taken raft port), `raftns --check-config`, and on a real 3-node cluster:
config get's per-node listenPort, membership errors that name the member, a failed member add
that leaves no ghost, a leader transfer without id sent to a follower, one --json key style, the
quorum report of a node that lost its peers and the explanation of a data dir started with the
wrong command line. It does not test raft itself."""

import json
import os
import socket
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


def run_raftns(args, cwd=None, timeout=None):
    """Runs raftns to completion (it must exit by itself); returns (rc, stdout, stderr)."""
    p = subprocess.run([os.path.abspath(harness.RAFTNS_BIN)] + list(args), cwd=cwd, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout or T(20))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def ctl(*args, timeout=None):
    env = dict(os.environ, RAFTNS_SECRET=SECRET)
    p = subprocess.run([CTL_BIN] + [str(a) for a in args], stdin=subprocess.DEVNULL, env=env,
                       capture_output=True, timeout=timeout or T(60))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def one_node_file(d, **top):
    port = harness.free_ports(1)[0]
    cfg = {"nodes": [{"id": 1, "raft": "127.0.0.1:%d" % port,
                      "client": "127.0.0.1:%d" % (port + 1 if port < 65535 else 1),
                      "bootstrap": True}]}
    cfg.update(top)
    path = os.path.join(d, "cluster.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def snake_keys(doc, path=""):
    """Every key of doc (recursively) that contains an underscore, with its path."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if "_" in k:
                out.append(path + "/" + k)
            out += snake_keys(v, path + "/" + k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += snake_keys(v, "%s[%d]" % (path, i))
    return out


class StartupRefusals(unittest.TestCase):
    """raftns exits 2 before starting anything and says which flag, key or value is wrong."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="raftns-answers-")
        self.data = os.path.join(self.dir, "data")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir])

    def test_unknown_flag_is_called_unknown(self):
        rc, _, err = run_raftns(["--data-dir", self.data, "--no-such-flag"])
        self.assertEqual(rc, 2, err)
        self.assertIn("unknown option --no-such-flag", err)
        self.assertNotIn("needs a value", err)
        rc, _, err = run_raftns(["--data-dir", self.data, "--heartbeat-ms"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--heartbeat-ms needs a value", err)
        self.assertNotIn("unknown", err)

    def test_unknown_setting_and_bad_boolean_named(self):
        rc, _, err = run_raftns(["--data-dir", self.data, "--set", "typoSetting=1"])
        self.assertEqual(rc, 2, err)
        self.assertIn("typoSetting: unknown setting", err)
        rc, _, err = run_raftns(["--data-dir", self.data, "--set", "orderMessageEnable=maybe"])
        self.assertEqual(rc, 2, err)
        self.assertIn("orderMessageEnable=maybe: must be true or false", err)
        path = one_node_file(self.dir, namesrv={"enableTopicList": "yes"})
        rc, _, err = run_raftns(["--config", path, "--data-dir", self.data])
        self.assertEqual(rc, 2, err)
        self.assertIn("enableTopicList=yes: must be true or false", err)
        # nothing was written: the refusal came before the one-node secret
        self.assertFalse(os.path.exists(self.data), os.listdir(self.dir))

    def test_zero_election_timeout_in_file_refused_like_the_flag(self):
        rc, _, err = run_raftns(["--data-dir", self.data, "--election-timeout-ms", "0"])
        self.assertEqual(rc, 2, err)
        path = one_node_file(self.dir, electionTimeoutMs=0)
        rc, _, err = run_raftns(["--config", path, "--data-dir", self.data])
        self.assertEqual(rc, 2, err)
        self.assertIn('"electionTimeoutMs" must be an integer 1..600000', err)

    def test_heartbeat_not_shorter_than_election_timeout_refused(self):
        rc, _, err = run_raftns(["--data-dir", self.data, "--heartbeat-ms", "2000"])
        self.assertEqual(rc, 2, err)
        self.assertIn("heartbeat 2000 ms must be shorter than the election timeout 1000 ms", err)
        path = one_node_file(self.dir, electionTimeoutMs=500, heartbeatMs=500)
        rc, _, err = run_raftns(["--config", path, "--data-dir", self.data])
        self.assertEqual(rc, 2, err)
        self.assertIn("heartbeat 500 ms must be shorter than the election timeout 500 ms", err)
        # a flag overriding the file is judged together with it
        rc, _, err = run_raftns(["--check-config", path, "--heartbeat-ms", "100"])
        self.assertEqual(rc, 0, err)

    def test_check_config(self):
        path = one_node_file(self.dir, electionTimeoutMs=1500, heartbeatMs=100,
                             namesrv={"orderMessageEnable": "true"})
        rc, out, err = run_raftns(["--check-config", path], cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertIn(path + ": ok: 1 node", out)
        self.assertIn("election timeout 1500 ms, heartbeat 100 ms", out)
        self.assertEqual(sorted(os.listdir(self.dir)), ["cluster.json"],
                         "--check-config must not create a data dir or secret")
        bad = one_node_file(self.dir, namesrv={"noSuchKey": "1"})
        rc, out, err = run_raftns(["--check-config", bad], cwd=self.dir)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("noSuchKey: unknown setting", err)
        rc, _, err = run_raftns(["--check-config", os.path.join(self.dir, "missing.json")])
        self.assertEqual(rc, 2, err)
        self.assertIn("missing.json", err)
        shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                               "cluster-configs", "three-hosts.example.json")
        if os.path.exists(shipped):
            rc, out, err = run_raftns(["--check-config", shipped, "--insecure-dev"])
            self.assertIn(rc, (0, 2), err)
            self.assertNotIn("unknown option", err)

    def test_taken_raft_port_is_named(self):
        taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        client, http = harness.free_ports(2)
        try:
            rc, _, err = run_raftns(["--data-dir", self.data,
                                     "--client-addr", "127.0.0.1:%d" % client,
                                     "--http-addr", "127.0.0.1:%d" % http,
                                     "--raft-addr", "127.0.0.1:%d" % port])
        finally:
            taken.close()
        self.assertNotEqual(rc, 0, err)
        self.assertIn("127.0.0.1:%d" % port, err)
        self.assertIn("address already in use", err)
        self.assertNotIn("I/O error ()", err)


class OneNodeAnswers(harness.NodeTestCase):
    """The one-node default: what cannot be done is said, not "invalid argument"."""

    def test_transfer_with_no_other_voter(self):
        with open(os.path.join(self.node.data_dir, "cluster-secret")) as f:
            secret = f.read().strip()
        env = dict(os.environ, RAFTNS_SECRET=secret)
        p = subprocess.run([CTL_BIN, "-n", "127.0.0.1:%d" % self.node.client_port, "leader",
                            "transfer"], capture_output=True, env=env, timeout=T(30))
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("no other voter to hand the leadership to (members: 1)", err)
        self.assertNotIn("invalid argument", err)


class ClusterAnswers(clusterh.ClusterTestCase):
    """A running 3-node cluster asked what an operator asks."""

    def addr(self, nd):
        return "127.0.0.1:%d" % nd.client_port

    def test_config_get_shows_each_nodes_own_port(self):
        for nd in self.cluster.all():
            rc, out, err = ctl("-n", self.addr(nd), "config", "get")
            self.assertEqual(rc, 0, err)
            self.assertIn("listenPort=%d\n" % nd.client_port, out)
            self.assertIn("bindAddress=127.0.0.1\n", out)

    def test_runtime_config_set_refusals_name_the_key(self):
        nd = self.cluster.all()[0]
        rc, _, err = ctl("-n", self.addr(nd), "config", "set", "typoKey=1")
        self.assertNotEqual(rc, 0)
        self.assertIn("typoKey: unknown setting", err)
        rc, _, err = ctl("-n", self.addr(nd), "config", "set", "enableTopicList=perhaps")
        self.assertNotEqual(rc, 0)
        self.assertIn("enableTopicList=perhaps: must be true or false", err)

    def test_membership_errors_name_the_member(self):
        leader = self.cluster.leader()
        follower = self.cluster.followers(leader)[0]
        for nd in (leader, follower):
            rc, _, err = ctl("-n", self.addr(nd), "member", "remove", "99")
            self.assertEqual(rc, 1, err)
            self.assertIn("99 is not a member (members: 1 2 3)", err)
            self.assertNotIn("need more data", err)
            rc, _, err = ctl("-n", self.addr(nd), "leader", "transfer", "99")
            self.assertEqual(rc, 1, err)
            self.assertIn("99 is not a voter", err)
        other = self.cluster[2] if follower.id != 2 else self.cluster[3]
        rc, _, err = ctl("-n", self.addr(follower), "member", "add", "2",
                         "127.0.0.1:1", "127.0.0.1:2")
        self.assertEqual(rc, 1, err)
        self.assertIn("2 is already a member", err)
        rc, _, err = ctl("-n", self.addr(follower), "member", "add", "8",
                         "127.0.0.1:%d" % other.raft_port, "127.0.0.1:3")
        self.assertEqual(rc, 1, err)
        self.assertIn("raft address 127.0.0.1:%d is already member %d's" %
                      (other.raft_port, other.id), err)
        # nothing of either refused add reached the member table
        self.assertNotIn(8, [m["id"] for m in leader.status()["members"]])

    def test_failed_add_leaves_no_ghost(self):
        follower = self.cluster.followers()[0]
        dead_raft, dead_client = harness.free_ports(2)
        rc, out, err = ctl("-n", self.addr(follower), "member", "add", "7",
                           "127.0.0.1:%d" % dead_raft, "127.0.0.1:%d" % dead_client)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("member 7 was not added", err)
        self.assertIn("removed again", err)

        def ghost_free():
            seen = {}
            for nd in self.cluster.all():
                seen[nd.id] = sorted(m["id"] for m in nd.status()["members"])
            return observed(all(ids == [1, 2, 3] for ids in seen.values()), seen)
        wait_until(ghost_free, T(10), "every node's /status without member 7")
        rc, out, err = ctl("-n", self.addr(follower), "status")
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("unreachable", out)
        # the cluster accepts the next change (no change left "in progress")
        rc, out, err = ctl("-n", self.addr(follower), "leader", "transfer")
        self.assertEqual(rc, 0, out + err)

    def test_second_add_of_the_same_id_refused_while_the_first_runs(self):
        leader = self.cluster.leader()
        dead_raft, dead_client = harness.free_ports(2)
        env = dict(os.environ, RAFTNS_SECRET=SECRET)
        first = subprocess.Popen([CTL_BIN, "-n", self.addr(leader), "member", "add", "7",
                                  "127.0.0.1:%d" % dead_raft, "127.0.0.1:%d" % dead_client],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env)
        try:
            wait_until(lambda: observed(7 in [m["id"] for m in leader.status()["members"]],
                                        leader.status()["members"]),
                       T(10), "member 7's addresses recorded by the first add")
            rc, out, err = ctl("-n", self.addr(leader), "member", "add", "7",
                               "127.0.0.1:%d" % dead_raft, "127.0.0.1:%d" % dead_client)
            self.assertEqual(rc, 1, out + err)
            self.assertIn("member 7 is being added", err)  # a spare catching up
            _, first_err = first.communicate(timeout=T(30))
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        self.assertEqual(first.returncode, 1, first_err)
        self.assertIn(b"member 7 was not added", first_err)
        wait_until(lambda: observed(7 not in [m["id"] for m in leader.status()["members"]],
                                    leader.status()["members"]),
                   T(10), "member 7 gone after the failed add")

    def test_transfer_without_id_through_a_follower(self):
        leader = self.cluster.leader()
        follower = self.cluster.followers(leader)[0]
        rc, out, err = ctl("-n", self.addr(follower), "leader", "transfer")
        self.assertEqual(rc, 0, out + err)
        self.assertTrue(out.startswith("leader "), out)
        new_id = int(out.split()[1])
        self.assertNotEqual(new_id, leader.id, out)
        new = self.cluster.leader(timeout=T(10))
        self.assertNotEqual(new.id, leader.id)

    def test_json_outputs_share_one_key_style(self):
        nd = self.cluster.all()[0]
        rc, out, err = ctl("--json", "-n", self.addr(nd), "status")
        self.assertEqual(rc, 0, err)
        status = json.loads(out)
        self.assertIn("commitIndex", status[0])
        self.assertEqual(snake_keys(status), [])
        rc, out, err = ctl("--json", "-n", self.addr(nd), "member", "list")
        self.assertEqual(rc, 0, err)
        members = json.loads(out)
        self.assertIn("appliedIndex", members)
        self.assertEqual(snake_keys(members), [])

    def test_lost_quorum_is_reported_then_data_dir_explained(self):
        survivor = self.cluster[1]
        for i in (2, 3):
            self.cluster[i].stop()

        def no_quorum():
            q = survivor.status().get("quorum", {})
            return observed(q.get("has_quorum") is False and q.get("heard") == [1] and
                            q.get("not_heard") == [2, 3] and q.get("voters") == 3, q)
        wait_until(no_quorum, T(15), "node 1's /status quorum: heard [1], not [2, 3]")
        wait_until(lambda: observed("cannot reach a quorum" in survivor.log_text(),
                                    survivor.log_tail(5)),
                   T(20), "node 1 logs that it cannot reach a quorum")
        line = [ln for ln in survivor.log_text().splitlines()
                if "cannot reach a quorum" in ln][-1]
        self.assertIn("heard from 1 of 3 voters", line)
        self.assertIn("2@127.0.0.1:%d" % self.cluster[2].raft_port, line)
        self.assertIn("a leader needs 2", line)
        rc, out, err = ctl("-n", self.addr(survivor), "--timeout-ms", "500", "status")
        self.assertEqual(rc, 1, out + err)  # two members do not answer
        self.assertRegex(out, r"node 1: no leader for \d+ ms; heard from 1 of 3 voters \(1\), "
                              r"not from 2 3; a leader needs 2")
        survivor.stop()
        # The same data dir started as the one-node default (no --config): explained at start.
        solo = harness.Node()
        solo.raft_port = survivor.raft_port
        solo.data_dir = survivor.data_dir
        solo.start(wait=False)
        try:
            wait_until(lambda: observed("belongs to a 3-voter cluster" in solo.log_text(),
                                        solo.log_tail(5)),
                       T(15), "the one-node start explains the 3-voter data dir")
            self.assertIn("a leader needs 2 of those 3 voters", solo.log_text())
        finally:
            solo.cleanup(check=True)


if __name__ == "__main__":
    clusterh.main()
