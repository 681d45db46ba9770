"""What a new operator runs from README and docs/ (issue 12, "How it will be checked"), for the
rough edges that review found: each test is one mistake or one documented command whose answer
was wrong or unclear. The commands' main behaviour is tested next to them (test_backup_restore,
test_standby, test_ops_answers, test_mqadmin_cli); this file holds only what those missed."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
from harness import T  # noqa: E402

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


if __name__ == "__main__":
    harness.main()
