"""Backup and restore (raftnsctl snapshot save, raftns restore): a snapshot saved from a
follower while a writer keeps writing is one consistent state (its KV writes are a gap-free
prefix of the acknowledged ones), restoring it into a fresh 3-node cluster gives that cluster
every table byte for byte (route, KV, config, ACL, request ids; the member table is the new
cluster's), a damaged or truncated file is refused by name with what is wrong and leaves the
data dir empty, and a save without the cluster secret is refused."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

CTL_BIN = os.environ.get("RAFTNSCTL_BIN", "/work/main/build/raftnsctl")
SECRET = "raftns-test-secret"
TABLES = ("route", "kv", "config", "acl", "requestIds")  # members: the new cluster's
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def keys_of(doc):
    """Every key of a JSON document, recursively."""
    if isinstance(doc, dict):
        return [k for k in doc] + [x for v in doc.values() for x in keys_of(v)]
    if isinstance(doc, list):
        return [x for v in doc for x in keys_of(v)]
    return []


def run(argv, timeout=None):
    p = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=timeout or T(60.0))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def ctl(nodes, *args, secret=SECRET):
    argv = [CTL_BIN, "--timeout-ms", str(int(T(5.0) * 1000)), "--secret", secret]
    for nd in nodes:
        argv += ["-n", "%s:%d" % nd.addr]
    return run(argv + list(args))


def restore(path, cluster, nd):
    return run([harness.RAFTNS_BIN, "restore", "--from", path, "--config", cluster.config_path,
                "--id", nd.id, "--data-dir", nd.data_dir])


class Writer(threading.Thread):
    """Puts k000000, k000001, ... one after the other until stopped; acked = keys acknowledged."""

    def __init__(self, nd):
        super().__init__(daemon=True)
        self.nd, self.acked, self.stop_ev, self.error = nd, [], threading.Event(), None

    def run(self):
        try:
            with self.nd.conn() as c:
                while not self.stop_ev.is_set():
                    key = "k%06d" % len(self.acked)
                    r = c.request(ns.PUT_KV_CONFIG, {"namespace": "load", "key": key,
                                                     "value": "v-" + key}, timeout=T(10.0))
                    if r.code != 0:
                        raise AssertionError("put %s: %d %r" % (key, r.code, r.remark))
                    self.acked.append(key)
        except Exception as e:  # reported by the test
            self.error = e

    def finish(self):
        self.stop_ev.set()
        self.join(T(30.0))


class BackupRestoreTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        why = clusterh.config_unsupported()
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        del harness.TEST_NODES[:]
        self.tmp = tempfile.mkdtemp(prefix="raftns-backup-")
        self.clusters = []
        self.brokers = []
        # small chunks: the save takes many requests while the writer goes on
        os.environ["RAFTNS_TEST_FETCH_CHUNK"] = "512"

    def tearDown(self):
        os.environ.pop("RAFTNS_TEST_FETCH_CHUNK", None)
        for b in self.brokers:
            b.close()
        for c in self.clusters:
            c.cleanup(check=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def cluster(self, n=3, joins=()):
        """n nodes; the ids in joins are not bootstrap members (they join with member add)."""
        c = clusterh.Cluster(n)
        for i in joins:
            c.config["nodes"][i - 1]["bootstrap"] = False
        if joins:
            with open(c.config_path, "w") as f:
                json.dump(c.config, f, indent=2)
        self.clusters.append(c)
        return c

    def fill(self, c):
        """Something in every table: a broker's routes, KV, a setting, an account."""
        leader = c.leader()
        b = clusterh.Broker(name="broker-a", topics=("TopicA", "TopicB", "TopicC"))
        self.brokers.append(b)
        self.assertEqual(b.register(leader).code, 0)
        for i in range(20):
            r = leader.request(ns.PUT_KV_CONFIG, {"namespace": "ns%d" % (i % 3),
                                                  "key": "key%d" % i, "value": "value%d" % i})
            self.assertEqual(r.code, 0, r.remark)
        r = leader.request(ns.UPDATE_NAMESRV_CONFIG,
                           body=b"orderMessageEnable=true\n")
        self.assertEqual(r.code, 0, r.remark)
        rc, out, err = ctl([leader], "acl", "add", "ops", "ops-secret-key-1234", "admin")
        self.assertEqual(rc, 0, out + err)

    def inspect(self, path, dump):
        os.makedirs(dump, exist_ok=True)
        rc, out, err = ctl([], "--json", "snapshot", "inspect", path, "--dump", dump)
        self.assertEqual(rc, 0, out + err)
        doc = json.loads(out)
        self.assertEqual([k for k in keys_of(doc) if not CAMEL.match(k)], [], out)
        tables = {}
        for name in doc["tables"]:
            with open(os.path.join(dump, name + ".bin"), "rb") as f:
                tables[name] = f.read()
        return doc, tables

    def save(self, nodes, name):
        path = os.path.join(self.tmp, name)
        rc, out, err = ctl(nodes, "--json", "snapshot", "save", path)
        self.assertEqual(rc, 0, out + err)
        doc = json.loads(out)
        self.assertEqual([k for k in keys_of(doc) if not CAMEL.match(k)], [], out)
        return path, doc

    def test_save_under_load_restore_into_new_cluster(self):
        a = self.cluster().start()
        self.fill(a)
        leader = a.leader()
        follower = a.followers(leader)[0]
        writer = Writer(leader)
        writer.start()
        wait_until(lambda: len(writer.acked) >= 50 or writer.error, T(30.0), "writes under way")
        path, saved = self.save([follower], "a.snap")
        after_save = len(writer.acked)
        # the load spans the save: writes were acknowledged before it started and go on after
        wait_until(lambda: len(writer.acked) >= after_save + 20 or writer.error, T(30.0),
                   "writes after the save")
        writer.finish()
        self.assertIsNone(writer.error)
        self.assertGreater(saved["chunks"], 1, saved)
        self.assertGreater(saved["index"], 0)
        self.assertGreaterEqual(saved["term"], 1)
        doc_a, tables_a = self.inspect(path, os.path.join(self.tmp, "dump-a"))
        self.assertEqual(doc_a["index"], saved["index"])
        self.assertEqual(doc_a["crc32c"], saved["crc32c"])

        # one consistent state: the load keys it holds are a gap-free prefix of the acked ones
        b = self.cluster()
        for nd in b.all():
            rc, out, err = restore(path, b, nd)
            self.assertEqual(rc, 0, out + err)
            self.assertIn("index %d" % saved["index"], out)
        b.start()
        b.wait_converged()
        bl = b.leader()
        r = bl.request(ns.GET_KVLIST_BY_NAMESPACE, {"namespace": "load"})
        self.assertEqual(r.code, 0, r.remark)
        held = sorted(json.loads(r.body.decode())["table"].keys())
        self.assertGreater(len(held), 0)
        self.assertEqual(held, writer.acked[:len(held)], "not a prefix of the acked writes")
        # nothing written after the save ended can be in it (the writer has one request in
        # flight, which may be applied before its acknowledgement arrives)
        self.assertLessEqual(len(held), after_save + 1)
        # the new cluster serves the restored state and takes new writes
        r = bl.request(ns.GET_KV_CONFIG, {"namespace": "ns1", "key": "key1"})
        self.assertEqual((r.code, (r.ext or {}).get("value")), (0, "value1"))
        rt = clusterh.route(bl, "TopicC")
        self.assertEqual(rt.code, 0, rt.remark)
        # every table byte for byte, from a save of the new cluster before any new write
        path_b, saved_b = self.save([b.followers(bl)[0]], "b.snap")
        doc_b, tables_b = self.inspect(path_b, os.path.join(self.tmp, "dump-b"))
        for name in TABLES:
            self.assertEqual(tables_b[name], tables_a[name], "table %s differs" % name)
            self.assertEqual(doc_b["tables"][name], doc_a["tables"][name])
        self.assertNotEqual(tables_b["members"], tables_a["members"])
        rc, out, err = ctl([bl], "--json", "member", "list")
        self.assertEqual(rc, 0, out + err)
        members = {m["id"]: m["client"] for m in json.loads(out)["members"]}
        self.assertEqual(members, {nd.id: "127.0.0.1:%d" % nd.client_port for nd in b.all()})
        for nd in b.all():
            self.assertIn("restored a snapshot", nd.log_text())
        r = bl.request(ns.PUT_KV_CONFIG, {"namespace": "ns1", "key": "new", "value": "x"})
        self.assertEqual(r.code, 0, r.remark)
        b.wait_converged()

    def test_member_added_after_restore_receives_the_state(self):
        a = self.cluster().start()
        self.fill(a)
        path, saved = self.save([a.leader()], "a.snap")
        b = self.cluster(4, joins=(4,))
        n4 = b[4]
        rc, out, err = restore(path, b, n4)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("node 4 is not a bootstrap member", err)
        self.assertEqual(os.listdir(n4.data_dir), [])
        first = [b[1], b[2], b[3]]
        for nd in first:
            rc, out, err = restore(path, b, nd)
            self.assertEqual(rc, 0, out + err)
            nd.start(wait=False)
        b.wait_ready(nodes=first)
        n4.start(wait=False)
        rc, out, err = ctl(first, "member", "add", "4", "127.0.0.1:%d" % n4.raft_port,
                           "127.0.0.1:%d" % n4.client_port, n4.http_addr)
        self.assertEqual(rc, 0, out + err)
        b.wait_ready()
        b.wait_converged()
        # the log of the new cluster starts after the restored snapshot: node 4 can only have
        # the state from an InstallSnapshot
        self.assertIn("restored a snapshot", n4.log_text())
        r = n4.request(ns.GET_KV_CONFIG, {"namespace": "ns2", "key": "key2"})
        self.assertEqual((r.code, (r.ext or {}).get("value")), (0, "value2"))
        self.assertEqual(clusterh.route(n4, "TopicA").code, 0)

    def test_concurrent_saves_under_load(self):
        """A node holds one encoding: a second save at a newer index replaces it, and the
        first save starts again instead of failing."""
        a = self.cluster().start()
        self.fill(a)
        leader = a.leader()
        follower = a.followers(leader)[0]
        writer = Writer(leader)
        writer.start()
        wait_until(lambda: len(writer.acked) >= 20 or writer.error, T(30.0), "writes under way")
        results = {}

        def save(name):
            results[name] = ctl([follower], "--json", "snapshot", "save",
                                os.path.join(self.tmp, name))
        threads = [threading.Thread(target=save, args=("s%d.snap" % i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(T(60.0))
        writer.finish()
        self.assertIsNone(writer.error)
        for name, (rc, out, err) in sorted(results.items()):
            self.assertEqual(rc, 0, "%s: %s %s" % (name, out, err))
            doc, _ = self.inspect(os.path.join(self.tmp, name),
                                  os.path.join(self.tmp, "dump-" + name))
            self.assertEqual(doc["index"], json.loads(out)["index"])

    def test_damaged_and_truncated_files_refused(self):
        a = self.cluster().start()
        self.fill(a)
        path, saved = self.save([a.leader()], "good.snap")
        with open(path, "rb") as f:
            good = f.read()
        self.assertEqual(len(good), 40 + saved["bytes"])
        damaged = os.path.join(self.tmp, "damaged.snap")
        with open(damaged, "wb") as f:
            f.write(good[:100] + bytes([good[100] ^ 0x20]) + good[101:])
        truncated = os.path.join(self.tmp, "truncated.snap")
        with open(truncated, "wb") as f:
            f.write(good[:len(good) // 2])
        bad_header = os.path.join(self.tmp, "header.snap")
        with open(bad_header, "wb") as f:
            f.write(good[:10] + bytes([good[10] ^ 1]) + good[11:])
        b = self.cluster()
        nd = b[1]
        for bad, why in ((damaged, "damaged body"), (truncated, "truncated"),
                         (bad_header, "damaged header")):
            rc, out, err = restore(bad, b, nd)
            self.assertEqual(rc, 2, out + err)
            self.assertIn(bad, err)
            self.assertIn(why, err)
            self.assertEqual(os.listdir(nd.data_dir), [], "restore wrote into the data dir")
            rc, out, err = ctl([], "snapshot", "inspect", bad)
            self.assertEqual(rc, 1, out + err)
            self.assertIn(why, err)
        rc, out, err = restore(os.path.join(self.tmp, "missing.snap"), b, nd)
        self.assertEqual(rc, 2)
        self.assertIn("missing.snap", err)
        # the good file restores; a second restore into the same dir is refused
        rc, out, err = restore(path, b, nd)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = restore(path, b, nd)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("not empty", err)

    def test_save_needs_the_cluster_secret(self):
        a = self.cluster().start()
        path = os.path.join(self.tmp, "x.snap")
        rc, out, err = ctl([a.leader()], "snapshot", "save", path, secret="wrong-secret-123456")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("NO_PERMISSION", err)
        self.assertFalse(os.path.exists(path))
        self.assertFalse(os.path.exists(path + ".tmp"))


if __name__ == "__main__":
    harness.main()
