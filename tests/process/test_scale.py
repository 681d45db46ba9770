"""The deadline scale contract (docs/testing.md) in both languages: RAFTNS_TEST_SCALE times 3 for
a sanitizer build, a bad value refused, and an expired deadline that names itself, its length
and what was last seen. No raftns process; the node half needs `node` on PATH."""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import scale  # noqa: E402

T = harness.T
REMOTING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop",
                        "remoting.js")


def env_of(**kw):
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAFTNS_TEST_SCALE", "RAFTNS_SANITIZE")}
    env.update(kw)
    return env


class PythonScale(unittest.TestCase):
    def test_factor(self):
        self.assertEqual(scale.scale_from_env({}), 1.0)
        self.assertEqual(scale.scale_from_env({"RAFTNS_TEST_SCALE": "2.5"}), 2.5)
        self.assertEqual(scale.scale_from_env({"RAFTNS_SANITIZE": "ON"}), 3.0)
        self.assertEqual(scale.scale_from_env({"RAFTNS_SANITIZE": "OFF"}), 1.0)
        self.assertEqual(scale.scale_from_env({"RAFTNS_TEST_SCALE": "2",
                                               "RAFTNS_SANITIZE": "true"}), 6.0)
        for bad in ("abc", "0", "-1", "inf", "nan"):
            with self.assertRaises(ValueError, msg=bad):
                scale.scale_from_env({"RAFTNS_TEST_SCALE": bad})

    def test_harness_and_nsclient_read_the_environment(self):
        code = ("import harness, nsclient; "
                "print(harness.T(1.5), harness.SCALE)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)), timeout=T(30),
                             env=env_of(RAFTNS_TEST_SCALE="2", RAFTNS_SANITIZE="ON"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["9.0", "6.0"])

    def test_expired_deadline_names_itself(self):
        with self.assertRaises(AssertionError) as cm:
            harness.wait_until(lambda: harness.observed(False, {"code": 17}), 0.2,
                               "route of TopicA")
        msg = str(cm.exception)
        self.assertIn("deadline expired: route of TopicA", msg)
        self.assertIn("after 0.2s (deadline scale %g)" % scale.SCALE, msg)
        self.assertIn("last observed: {'code': 17}", msg)

    def test_observed_is_falsy_until_ok(self):
        self.assertIs(harness.observed(True, "x"), True)
        self.assertFalse(harness.observed(False, "x"))
        self.assertEqual(harness.wait_until(lambda: 42, 0.2, "a value"), 42)



@unittest.skipUnless(shutil.which("node"), "node not on PATH")
class NodeScale(unittest.TestCase):
    def node(self, script, **env):
        return subprocess.run(["node", "-e", "const r = require(%r); %s" % (REMOTING, script)],
                              capture_output=True, text=True, timeout=T(30), env=env_of(**env))

    def test_factor(self):
        out = self.node("console.log(r.testScale(), r.T(1000))", RAFTNS_TEST_SCALE="2",
                        RAFTNS_SANITIZE="ON")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["6", "6000"])
        out = self.node("console.log(r.T(1000))")
        self.assertEqual(out.stdout.split(), ["1000"])
        out = self.node("r.T(1)", RAFTNS_TEST_SCALE="abc")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("RAFTNS_TEST_SCALE must be a positive number", out.stderr)

    def test_expired_deadline_names_itself(self):
        out = self.node("r.waitFor('route of TopicA', 200, () => r.seen(false, {code: 17}))"
                        ".catch(e => { console.log(e.message); });", RAFTNS_TEST_SCALE="2")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("deadline expired: route of TopicA, after 200 ms (deadline scale 2); "
                      'last observed: {"code":17}', out.stdout)


if __name__ == "__main__":
    harness.main()
