"""The one deadline scale of the Python test tiers (process, security, and every tool that
imports nsclient): every timeout, deadline and poll limit is T(seconds). It does not scale
observation windows ("nothing arrives within 1 s") or lower bounds of server behaviour ("not
removed before its 3 s timeout"): load only stretches time, so those hold unscaled.

The scale is RAFTNS_TEST_SCALE (a float, default 1) times 3 when RAFTNS_SANITIZE is set
(ON/1/true/yes, as ctest passes it for a -DRAFTNS_SANITIZE=ON build). docs/testing.md describes
it and the CPU-hog run (scripts/test.sh --under-load) that sets it."""

import os


def scale_from_env(env=None):
    """The scale env asks for; a RAFTNS_TEST_SCALE that is not a positive number is an error
    (ValueError), not silently 1, so a typo cannot shorten every deadline of a run."""
    env = os.environ if env is None else env
    text = env.get("RAFTNS_TEST_SCALE", "").strip()
    user = 1.0
    if text:
        user = float(text)
        if not user > 0 or user == float("inf"):
            raise ValueError("RAFTNS_TEST_SCALE must be a positive number, not %r" % text)
    sanitize = env.get("RAFTNS_SANITIZE", "").upper() in ("ON", "1", "TRUE", "YES")
    return user * (3.0 if sanitize else 1.0)


SANITIZE = os.environ.get("RAFTNS_SANITIZE", "").upper() in ("ON", "1", "TRUE", "YES")
SCALE = scale_from_env()


def T(seconds):
    """seconds scaled by SCALE: the bound to use for anything that waits for the system."""
    return seconds * SCALE


def describe(seconds):
    """How a failure names a bound: '4.5s (deadline scale 3)'."""
    return "%.1fs (deadline scale %g)" % (seconds, SCALE)
