"""ACL on the operator codes of docs/backup-and-replicas.md: with aclEnable, `snapshot save`
(STATE_FETCH without raftnsFrom: the copy holds every account) needs an admin account and is
refused without one or with a reader's; `member promote|demote` (MEMBER_ASSIGN) needs an admin
too; `brokers` (106 + BROKER_LIVENESS) is a read, served anonymously while aclAnonymousRead is
on. Reuses test_acl.py's cluster and raftnsctl helpers."""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_acl import ClusterCase, ctl  # noqa: E402

import harness  # noqa: E402


class TestBackupAcl(ClusterCase):

    def test_snapshot_save_needs_admin(self):
        cl = self.cluster(1)
        nd = cl.leader()
        tmp = tempfile.mkdtemp(prefix="raftns-backup-acl-")
        try:
            path = os.path.join(tmp, "s.snap")
            rc, out, err = ctl(nd, "snapshot", "save", path)
            self.assertEqual(rc, 1, (out, err))
            self.assertIn("no AccessKey", err)
            rc, out, err = ctl(nd, "snapshot", "save", path, creds="ro")
            self.assertEqual(rc, 1, (out, err))
            self.assertIn("role admin required", err)
            self.assertFalse(os.path.exists(path))
            rc, out, err = ctl(nd, "snapshot", "save", path, creds="root")
            self.assertEqual(rc, 0, (out, err))
            rc, out, err = ctl(nd, "--json", "snapshot", "inspect", path)
            self.assertEqual(rc, 0, (out, err))
            acl = json.loads(out)["tables"]["acl"]
            self.assertGreater(acl["bytes"], 5, "the saved state holds the accounts")

            rc, out, err = ctl(nd, "member", "demote", "1", creds="ro")
            self.assertEqual(rc, 1, (out, err))
            self.assertIn("role admin required", err)
            rc, out, err = ctl(nd, "member", "demote", "1", creds="root")
            self.assertEqual(rc, 1, (out, err))
            self.assertIn("is the leader", err)

            rc, out, err = ctl(nd, "--json", "brokers")
            self.assertEqual(rc, 0, (out, err))
            self.assertEqual(json.loads(out)["brokers"], [])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
