"""Fault injection for the fault suite: a seeded schedule (fault kinds, start times, durations,
random node picks) and its execution against the cluster: kill -9 (leader, random, majority),
SIGSTOP pauses, iptables partitions inside the node namespaces (isolate leader, halves, bridge,
one-way), restarts into isolation, membership remove/add through raftnsctl, and libfaketime
clock jumps. "leader" targets
are resolved when the fault starts; everything else comes from the seed. It does not check
anything."""

import os
import subprocess
import time

FAMILIES = {
    "kill": ["kill-leader", "kill-random", "kill-majority"],
    "pause": ["pause-leader", "pause-random"],
    "partition": ["partition-leader", "partition-halves", "partition-bridge", "partition-oneway"],
    "member": ["member-cycle"],
    "clock": ["clock-jump"],
    "restart": ["restart-isolated"],
}


def parse_nemesis(spec):
    fams = list(FAMILIES) if spec in ("all", "") else [s.strip() for s in spec.split(",")]
    for f in fams:
        if f not in FAMILIES and f != "none":
            raise ValueError("unknown nemesis %r (known: %s, all, none)" % (f, ",".join(FAMILIES)))
    return [f for f in fams if f != "none"]


def make_schedule(rng, families, fault_seconds, warmup, n_nodes):
    """[{at, kind, duration, pick}] with `at` seconds after workload start. pick is a random
    float list used for node choices so the whole schedule follows from the seed."""
    sched = []
    kinds = [k for f in families for k in FAMILIES[f]]
    if not kinds:
        return sched
    t = warmup
    end = warmup + fault_seconds
    while True:
        gap = rng.uniform(5, 15)
        if t + gap > end:
            break
        kind = rng.choice(kinds)
        dur = round(gap * rng.uniform(0.45, 0.75), 2)
        if kind.startswith("pause"):
            dur = max(dur, 2.5)  # longer than the 1 s election timeout, with margin
        sched.append({"at": round(t, 2), "kind": kind, "duration": dur,
                      "pick": [round(rng.random(), 6) for _ in range(n_nodes + 2)]})
        t += gap
    return sched


def format_schedule(sched):
    return "\n".join("  t+%6.1fs %-18s for %5.1fs" % (s["at"], s["kind"], s["duration"])
                     for s in sched)


class Nemesis:
    def __init__(self, cluster, rec, ctl_bin=None, log=print, allow_failed=()):
        self.cluster = cluster
        self.net = cluster.net
        self.rec = rec
        self.ctl_bin = ctl_bin
        self.log = log
        self.member_note = None
        self.partitioned = False
        self.executed = []
        self.allow_failed = set(allow_failed)  # fault kinds allowed not to be carried out

    @staticmethod
    def _hold(seconds):
        """Keeps a fault in place for its scheduled duration. This is the schedule itself (how
        long the cluster lives with the fault), not a wait for something to happen: nothing
        is polled, and every check runs on the history afterwards."""
        time.sleep(seconds)

    def _failed(self, kind, step, why, **extra):
        """A fault that could not be carried out: recorded (the checker fails the run unless
        the kind was passed in allow_failed) and logged, never skipped silently."""
        self.log("nemesis: %s: %s failed: %s" % (kind, step, why))
        v = {"kind": kind, "step": step, "why": why, "expected": kind in self.allow_failed}
        v.update(extra)
        self._ev("nemesis-failed", v)
    def _ev(self, f, value):
        self.rec.event({"process": "nemesis", "type": "info", "f": f, "value": value})

    def _members(self):
        return sorted(self.cluster.members)

    def _ordered(self, pick):
        """Members ordered by the schedule's random picks (reproducible)."""
        ids = self._members()
        keyed = sorted(zip(pick, range(len(pick))))
        order = [i for _, i in keyed if i < len(ids)]
        return [ids[i] for i in order]

    def _leader_or(self, pick):
        lead = self.cluster.leader()
        return lead if lead is not None else self._ordered(pick)[0]

    def run(self, item):
        """Starts the fault, keeps it for its scheduled duration, stops it."""
        kind, dur, pick = item["kind"], item["duration"], item["pick"]
        fn = getattr(self, "f_" + kind.replace("-", "_"))
        self.executed.append(kind)
        fn(dur, pick)

    # -- kill -------------------------------------------------------------------------------
    def _kill_window(self, ids, dur, why):
        for i in ids:
            self._ev("kill", {"node": "n%d" % i, "why": why})
            self.cluster.nodes[i].kill9("nemesis-kill")
        self._hold(dur)
        for i in ids:
            self.cluster.nodes[i].start()
            self._ev("restart", {"node": "n%d" % i})

    def f_kill_leader(self, dur, pick):
        self._kill_window([self._leader_or(pick)], dur, "leader")

    def f_kill_random(self, dur, pick):
        self._kill_window([self._ordered(pick)[0]], dur, "random")

    def f_kill_majority(self, dur, pick):
        ids = self._ordered(pick)
        self._kill_window(ids[:len(ids) // 2 + 1], dur, "majority")

    def f_restart_isolated(self, dur, pick):
        """kill -9 of a node, then its restart cut off from every other member: it cannot learn
        what was committed while it was down, so it must not answer reads from its own state
        (docs/readiness.md); the reads of its first seconds (workloads.local_loop) see that."""
        lead = self.cluster.leader()
        # a follower: the leader keeps committing while it is down (a leader kill would spend
        # the down time on an election)
        i = next((j for j in self._ordered(pick) if j != lead), self._ordered(pick)[0])
        rest = [j for j in self._members() if j != i]
        self._ev("kill", {"node": "n%d" % i, "why": "isolated-restart"})
        self.cluster.nodes[i].kill9("nemesis-kill")
        self._hold(dur / 2)
        self._ev("start-partition", {"kind": "isolate-restarted",
                                     "desc": "n%d | %s" % (i, " ".join("n%d" % j for j in rest))})
        self.partitioned = True
        for a, b, d in self._cut([i], rest):
            self.net.block(a, b, d)
        self.cluster.nodes[i].start()
        self._ev("restart", {"node": "n%d" % i})
        self._hold(max(dur / 2, 3.0))  # at least the 3 s read burst of local_loop
        self.heal_network()
        self._ev("stop-partition", {"kind": "isolate-restarted"})

    # -- pause ------------------------------------------------------------------------------
    def _pause_window(self, i, dur, why):
        self._ev("pause", {"node": "n%d" % i, "why": why})
        self.cluster.nodes[i].pause()
        self._hold(dur)
        self.cluster.nodes[i].resume()
        self._ev("resume", {"node": "n%d" % i})

    def f_pause_leader(self, dur, pick):
        self._pause_window(self._leader_or(pick), dur, "leader")

    def f_pause_random(self, dur, pick):
        self._pause_window(self._ordered(pick)[0], dur, "random")

    # -- partitions -------------------------------------------------------------------------
    def _partition(self, kind, blocks, dur, desc):
        """blocks: [(node, peer, direction)] rules applied inside node's namespace."""
        self._ev("start-partition", {"kind": kind, "desc": desc})
        self.partitioned = True
        for a, b, d in blocks:
            self.net.block(a, b, d)
        self._hold(dur)
        self.heal_network()
        self._ev("stop-partition", {"kind": kind})

    def heal_network(self):
        self.net.heal(list(self.cluster.nodes))
        self.partitioned = False

    @staticmethod
    def _cut(group_a, group_b):
        return [(a, b, "both") for a in group_a for b in group_b] + \
            [(b, a, "both") for a in group_a for b in group_b]

    def f_partition_leader(self, dur, pick):
        lead = self._leader_or(pick)
        rest = [i for i in self._members() if i != lead]
        self._partition("isolate-leader", self._cut([lead], rest), dur,
                        "n%d | %s" % (lead, " ".join("n%d" % i for i in rest)))

    def f_partition_halves(self, dur, pick):
        ids = self._ordered(pick)
        minority, majority = ids[:len(ids) // 2], ids[len(ids) // 2:]
        self._partition("halves", self._cut(minority, majority), dur,
                        "%s | %s" % (" ".join("n%d" % i for i in minority),
                                     " ".join("n%d" % i for i in majority)))

    def f_partition_bridge(self, dur, pick):
        ids = self._ordered(pick)
        mid = len(ids) // 2
        bridge, left, right = ids[mid], ids[:mid], ids[mid + 1:]
        self._partition("bridge", self._cut(left, right), dur,
                        "%s | n%d (bridge) | %s" % (" ".join("n%d" % i for i in left), bridge,
                                                    " ".join("n%d" % i for i in right)))

    def f_partition_oneway(self, dur, pick):
        lead = self._leader_or(pick)
        rest = [i for i in self._members() if i != lead]
        # the leader hears nobody, everybody still hears the leader
        blocks = [(lead, r, "in") for r in rest]
        self._partition("one-way", blocks, dur, "n%d hears nobody" % lead)

    # -- membership -------------------------------------------------------------------------
    def ctl(self, *args):
        addrs = ",".join(nd.client_addr for nd in self.cluster.member_nodes())
        secret = "jepsen-cluster-secret-0123456789"
        return subprocess.run([self.ctl_bin, "--secret", secret, "-n", addrs] + list(args),
                              capture_output=True,
                              text=True, timeout=30)

    def member_supported(self):
        if self.member_note is not None:
            self._failed("member-cycle", "raftnsctl", self.member_note)
            return False
        if not self.ctl_bin or not os.path.exists(self.ctl_bin):
            self.member_note = "no raftnsctl binary: membership changes skipped"
        else:
            h = subprocess.run([self.ctl_bin, "--help"], capture_output=True, text=True)
            if "member" not in (h.stdout + h.stderr):
                self.member_note = "raftnsctl has no 'member' command: membership skipped"
        if self.member_note:
            self._failed("member-cycle", "raftnsctl", self.member_note)
            return False
        return True

    def f_member_cycle(self, dur, pick):
        """Removes a non-leader voter, stops it, waits, then wipes its data and adds it back."""
        if not self.member_supported():
            return
        lead = self.cluster.leader()
        cands = [i for i in self._ordered(pick) if i != lead]
        if not cands:
            self._failed("member-cycle", "pick", "no non-leader voter")
            return
        victim = cands[0]
        nd = self.cluster.nodes[victim]
        r = self.ctl("member", "remove", str(victim))
        self._ev("remove-node", {"node": "n%d" % victim, "rc": r.returncode,
                                 "out": (r.stdout + r.stderr).strip()[:300]})
        if r.returncode != 0:
            self._failed("member-cycle", "member remove", "raftnsctl exit %d" % r.returncode,
                         node="n%d" % victim, out=(r.stdout + r.stderr).strip()[:300])
            return
        self.cluster.members.discard(victim)
        nd.stop("member-stop")
        self._hold(dur)
        import shutil
        shutil.rmtree(nd.data_dir, ignore_errors=True)
        os.makedirs(nd.data_dir, exist_ok=True)
        nd.bootstrap = False
        nd.start()
        ent = nd.entry()
        r = self.ctl("member", "add", str(victim), ent["raft"], ent["client"], ent["http"])
        self._ev("add-node", {"node": "n%d" % victim, "rc": r.returncode,
                              "out": (r.stdout + r.stderr).strip()[:300]})
        if r.returncode == 0:
            self.cluster.members.add(victim)
        else:
            self._failed("member-cycle", "member add", "raftnsctl exit %d" % r.returncode,
                         node="n%d" % victim, out=(r.stdout + r.stderr).strip()[:300])
            nd.stop("member-stop")

    # -- clock ------------------------------------------------------------------------------
    def f_clock_jump(self, dur, pick):
        nd = next((n for n in self.cluster.nodes.values() if n.faketime_file), None)
        if nd is None:
            self._failed("clock-jump", "faketime", "no libfaketime node")
            return
        offset = "+%ds" % int(20 + 40 * pick[0]) if pick[1] < 0.5 else "-%ds" % int(
            10 + 20 * pick[0])
        nd.set_clock_offset(offset)
        self._ev("clock-jump", {"node": "n%d" % nd.id, "offset": offset})
        self._hold(dur)
        nd.set_clock_offset("+0")
        self._ev("clock-jump", {"node": "n%d" % nd.id, "offset": "+0"})

    def heal_all(self):
        """Removes every fault: network rules, pauses, dead members, clock offsets."""
        self.heal_network()
        for nd in self.cluster.nodes.values():
            if nd.faketime_file:
                nd.set_clock_offset("+0")
        dead = self.cluster.restart_dead()
        if dead:
            self._ev("heal-restart", {"nodes": ["n%d" % i for i in dead]})
