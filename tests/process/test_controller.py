"""The RocketMQ 5 controller served by a 3-node raftns cluster (docs/controller.md), with brokers
simulated on the wire: each fake broker heartbeats every node over its own connection (904 with
brokerId, as a 5.x broker in controller mode does) and listens on its broker address for the
NOTIFY_BROKER_ROLE_CHANGED (1008) frames the leader sends. The numbers in the comments are
docs/controller.md §10's acceptance scenarios (its table says which are covered
where). Deadlines are generous bounds (T()), polled, never slept on."""

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

ALTER, ELECT, REGISTER, REPLICA_INFO, METADATA, SYNC_DATA = 1001, 1002, 1003, 1004, 1005, 1006
NOTIFY, UPDATE_CONFIG, GET_CONFIG, CLEAN, NEXT_ID, APPLY_ID = 1008, 1009, 1010, 1011, 1012, 1013
RAFTNSCTL = os.environ.get("RAFTNSCTL_BIN", "raftnsctl")
NOT_LEADER = 2007
NOT_LEADER_REMARK = "The controller is not in leader state"
CONTROLLER_ON = {"enableControllerInNamesrv": "true", "scanNotActiveBrokerInterval": "1000",
                 "scanInactiveMasterInterval": "500"}


class Listener(threading.Thread):
    """A broker's remoting port: accepts connections and keeps every frame received."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.frames = []
        self.lock = threading.Lock()
        self.closing = False
        self.start()

    def run(self):
        while not self.closing:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.read, args=(c,), daemon=True).start()

    def read(self, c):
        buf = b""
        with c:
            while not self.closing:
                try:
                    data = c.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    (n,) = struct.unpack(">I", buf[:4])
                    if len(buf) < 4 + n:
                        break
                    with self.lock:
                        self.frames.append(ns.decode_frame(buf[4:4 + n]))
                    buf = buf[4 + n:]

    def notifications(self):
        with self.lock:
            return [f for f in self.frames if f.code == NOTIFY]

    def close(self):
        self.closing = True
        self.sock.close()


class CtlBroker:
    """A 5.x broker in controller mode, on the wire only: its connections to every node."""

    def __init__(self, cluster, idx):
        self.cluster = cluster
        self.listener = Listener()
        self.addr = self.listener.addr
        self.code = "%s;1000" % self.addr
        self.id = None
        self.conns = {}
        self.idx = idx

    def conn(self, nd):
        c = self.conns.get(nd.id)
        if c is None or c.eof:
            c = self.conns[nd.id] = nd.conn(timeout=T(5.0))
        return c

    def request(self, nd, code, ext=None, body=b""):
        return self.conn(nd).request(code, ext or {}, body, timeout=T(5.0))

    def hb_ext(self, epoch=0, offset=0, timeout_ms=10000):
        return {"clusterName": "c1", "brokerAddr": self.addr, "brokerName": "broker-a",
                "brokerId": str(self.id), "epoch": str(epoch), "maxOffset": str(offset),
                "confirmOffset": str(offset), "heartbeatTimeoutMills": str(timeout_ms),
                "electionPriority": "2147483647"}

    def heartbeat(self, nodes=None, timeout_ms=10000):
        """hb(Bi) on every live node (non-oneway, to see the replies)."""
        for nd in nodes or self.cluster.live():
            r = self.request(nd, ns.BROKER_HEARTBEAT, self.hb_ext(timeout_ms=timeout_ms))
            assert r.code == 0 and r.remark == "Heart beat success", r

    def admit(self, ld):
        """admit(Bi): 1012, 1013 with that id, 1003."""
        names = {"clusterName": "c1", "brokerName": "broker-a"}
        r = self.request(ld, NEXT_ID, names)
        assert r.code == 0, r
        self.id = int(r.ext["nextBrokerId"])
        r = self.request(ld, APPLY_ID, dict(names, appliedBrokerId=str(self.id),
                                            registerCheckCode=self.code))
        assert r.code == 0, r
        return self.request(ld, REGISTER, dict(names, brokerId=str(self.id),
                                               brokerAddress=self.addr))

    def elect(self, ld, designate=False, broker_id=None):
        return self.request(ld, ELECT, {"clusterName": "c1", "brokerName": "broker-a",
                                        "brokerId": str(self.id if broker_id is None
                                                        else broker_id),
                                        "designateElect": "true" if designate else "false"})

    def alter(self, ld, ids, epoch, set_epoch, master=None):
        body = json.dumps({"syncStateSet": ids, "syncStateSetEpoch": set_epoch}).encode()
        return self.request(ld, ALTER, {"brokerName": "broker-a",
                                        "masterBrokerId": str(master or self.id),
                                        "masterEpoch": str(epoch)}, body)

    def die(self):
        """The process is gone: every connection closes (TCP FIN on each node)."""
        for c in self.conns.values():
            c.close()
        self.conns.clear()

    def close(self):
        self.die()
        self.listener.close()


def replica_info(nd, conn=None):
    c = conn or nd.conn(timeout=T(5.0))
    try:
        return c.request(REPLICA_INFO, {"brokerName": "broker-a"}, timeout=T(5.0))
    finally:
        if conn is None:
            c.close()


class ControllerCase(clusterh.ClusterTestCase):
    NAMESRV = CONTROLLER_ON

    def setUp(self):
        super().setUp()
        self.ld = self.cluster.leader()
        self.ctl_brokers = []

    def tearDown(self):
        for b in self.ctl_brokers:
            b.close()
        super().tearDown()

    def new_broker(self):
        b = CtlBroker(self.cluster, len(self.ctl_brokers) + 1)
        self.ctl_brokers.append(b)
        return b

    def leader_answers(self, exclude=()):
        """The ready controller leader: a node whose 1004 is not 2007."""
        def pred():
            ld = self.cluster.current_leader()
            if ld is None or ld.id in exclude:
                return harness.Seen("no agreed leader")
            try:
                r = replica_info(ld)
            except (OSError, ns.ConnectionClosed, TimeoutError) as e:
                return harness.Seen(e)
            return ld if r.code != NOT_LEADER else harness.Seen(r)
        return wait_until(pred, T(20.0), "a leader answering controller requests")

    def state_11(self):
        """B1 master (epoch 1), B2 slave, S = {1,2} (epoch 2)."""
        b1, b2 = self.new_broker(), self.new_broker()
        b1.admit(self.ld)
        b1.heartbeat()
        r = b1.elect(self.ld)
        self.assertEqual(r.code, 0, r)
        b2.admit(self.ld)
        b2.heartbeat()
        r = b1.alter(self.ld, [1, 2], 1, 1)
        self.assertEqual((r.code, r.ext.get("newSyncStateSetEpoch")), (0, "2"), r)
        return b1, b2


class Protocol(ControllerCase):
    def test_ids_registration_election_and_sync_state(self):
        ld = self.ld
        names = {"clusterName": "c1", "brokerName": "broker-a"}
        with ld.conn() as c:
            # 1
            r = c.request(NEXT_ID, names)
            self.assertEqual((r.code, r.ext), (0, dict(names, nextBrokerId="1")), r)
            # 2
            r = c.request(APPLY_ID, dict(names, appliedBrokerId="2",
                                         registerCheckCode="127.0.0.1:30911;1000"))
            self.assertEqual(r.code, 2014, r)
            self.assertEqual(r.remark, "Broker-set: broker-a hasn't been registered in "
                             "controller, but broker try to apply brokerId: 2")
        b1, b2 = self.new_broker(), self.new_broker()
        # 3
        r = b1.admit(ld)
        self.assertEqual((r.code, r.ext), (0, names), r)
        self.assertEqual(json.loads(r.body), {"syncStateSet": [], "syncStateSetEpoch": 0})
        # 4
        r = b1.request(ld, APPLY_ID, dict(names, appliedBrokerId="1",
                                          registerCheckCode=b1.code))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(b1.request(ld, NEXT_ID, names).ext["nextBrokerId"], "2")
        r = b1.request(ld, APPLY_ID, dict(names, appliedBrokerId="1",
                                          registerCheckCode="x;2000"))
        self.assertEqual((r.code, r.remark),
                         (2014, "Fail to apply brokerId: 1 in broker-set: broker-a"))
        # 5
        r = b1.request(ld, REGISTER, dict(names, brokerId="9", brokerAddress=b1.addr))
        self.assertEqual((r.code, r.remark), (2010, "BrokerId: 9 hasn't been registered in "
                                                    "broker-set: broker-a"))
        r = b1.request(ld, ELECT, {"clusterName": "c1", "brokerName": "nope", "brokerId": "1"})
        self.assertEqual((r.code, r.remark), (2010, "Broker hasn't been registered"))
        r = b1.request(ld, REPLICA_INFO, {"brokerName": "nope"})
        self.assertEqual((r.code, r.remark, r.ext), (2008, "Broker metadata is not existed", {}))
        # 24
        r = b1.request(ld, ns.BROKER_HEARTBEAT, {"clusterName": "c1", "brokerName": "broker-a"})
        self.assertEqual((r.code, r.remark), (2005, "Heart beat with empty brokerId"))
        b1.heartbeat()
        # 7 and 10
        r = b1.elect(ld)
        self.assertEqual(r.code, 0, r)
        self.assertEqual({k: r.ext[k] for k in ("masterBrokerId", "masterAddress", "masterEpoch",
                                                "syncStateSetEpoch")},
                         {"masterBrokerId": "1", "masterAddress": b1.addr, "masterEpoch": "1",
                          "syncStateSetEpoch": "1"})
        body = ns.loads_tolerant(r.body)
        self.assertEqual(body["syncStateSet"], [1])
        self.assertEqual(body["brokerMemberGroup"]["brokerAddrs"], {"1": b1.addr})
        n = wait_until(lambda: b1.listener.notifications() or harness.Seen([]), T(5.0),
                       "1008 at B1")
        self.assertEqual(len(n), 1)
        self.assertTrue(n[0].flag & ns.FLAG_ONEWAY)
        self.assertEqual(n[0].ext, {"masterAddress": b1.addr, "masterBrokerId": "1",
                                    "masterEpoch": "1", "syncStateSetEpoch": "1"})
        self.assertEqual(json.loads(n[0].body), {"syncStateSet": [1], "syncStateSetEpoch": 1})
        r = replica_info(ld)
        self.assertEqual((r.code, r.ext["masterBrokerId"], r.ext["masterEpoch"]), (0, "1", "1"))
        self.assertEqual(json.loads(r.body), {"syncStateSet": [1], "syncStateSetEpoch": 1})
        # 8: B2 joins as a slave; its 1002 gets 2011 and nobody is notified
        r = b2.admit(ld)
        self.assertEqual((r.ext.get("masterBrokerId"), r.ext.get("masterAddress"),
                          r.ext.get("masterEpoch"), r.ext.get("syncStateSetEpoch")),
                         ("1", b1.addr, "1", "1"), r)
        b2.heartbeat()
        r = b2.elect(ld)
        self.assertEqual(r.code, 2011, r)
        self.assertEqual(json.loads(r.body), {"syncStateSet": [1]})
        self.assertTrue(b2.listener.sock.fileno() >= 0)
        # 11
        r = b1.alter(ld, [1, 2], 1, 1)
        self.assertEqual((r.code, r.ext), (0, {"newSyncStateSetEpoch": "2"}), r)
        self.assertEqual(json.loads(r.body), {"syncStateSet": [1, 2], "syncStateSetEpoch": 2})
        # 12 (some): each refused with newSyncStateSetEpoch 0 and nothing changed
        for ids, epoch, sepoch, master, code in (([1, 2], 1, 2, 1, 2013), ([2], 1, 2, 2, 2002),
                                                 ([1], 0, 2, 1, 2000), ([1], 1, 1, 1, 2001),
                                                 ([1, 7], 1, 2, 1, 2003)):
            r = b1.alter(ld, ids, epoch, sepoch, master=master)
            self.assertEqual((r.code, r.ext), (code, {"newSyncStateSetEpoch": "0"}), r)
        r = replica_info(ld)
        self.assertEqual(json.loads(r.body), {"syncStateSet": [1, 2], "syncStateSetEpoch": 2})
        # 22
        r = b1.request(ld, SYNC_DATA, {}, b'["broker-a","nope"]')
        self.assertEqual(r.code, 0, r)
        table = ns.loads_tolerant(r.body)["replicasInfoTable"]
        self.assertEqual(list(table), ["broker-a"])
        ins = sorted((x["brokerId"], x["alive"]) for x in table["broker-a"]["inSyncReplicas"])
        self.assertEqual(ins, [(1, True), (2, True)])
        r = b1.request(ld, SYNC_DATA)
        self.assertEqual((r.code, r.remark), (1, "not set any response code"))
        # 25
        r = b1.request(ld, GET_CONFIG)
        self.assertEqual(r.code, 0, r)
        self.assertIn("enableElectUncleanMaster=false", r.body.decode())
        r = b1.request(ld, UPDATE_CONFIG, {}, b"configStorePath=/tmp/x")
        self.assertEqual((r.code, r.remark), (16, "Can not update config in black list."))
        # 26: followers point at the leader and refuse leader-only codes
        for f in self.cluster.followers(ld):
            r = f.request(METADATA)
            self.assertEqual((r.code, r.ext["isLeader"], r.ext["controllerLeaderAddress"]),
                             (0, "false", "127.0.0.1:%d" % ld.client_port), r)
            self.assertEqual(r.ext["peers"].count(";"), 3, r)
            for code in (ELECT, REPLICA_INFO, APPLY_ID):
                r = f.request(code, dict(names, brokerId="1"))
                self.assertEqual((r.code, r.remark, r.ext), (NOT_LEADER, NOT_LEADER_REMARK,
                                                             None), r)
        self.assertEqual(ld.request(METADATA).ext["isLeader"], "true")
        # 19: all alive, a controller-style 1002 (no brokerId) keeps the master, writes nothing
        r = ld.request(ELECT, {"clusterName": "", "brokerName": "broker-a"})
        self.assertEqual((r.code, r.ext["masterBrokerId"]), (2011, "1"), r)
        self.assertEqual(replica_info(ld).ext["masterEpoch"], "1")
        # /status and /metrics show the group
        st = ld.status()["controller"]
        self.assertEqual(st["groups"][0]["master"], 1)
        self.assertEqual(st["groups"][0]["syncStateSet"], [1, 2])
        self.assertGreaterEqual(st["fenced"], 3)
        code, text = ld.http_get("/metrics")
        self.assertIn(b'raftns_controller_master_epoch{group="broker-a"} 1', text)


class Failover(ControllerCase):
    def test_master_connection_closes_slave_takes_over_and_old_master_is_fenced(self):
        b1, b2 = self.state_11()
        n0 = len(b2.listener.notifications())
        # 13: B1's process dies (its connections close); B2 is in S and alive
        b1.die()

        def promoted():
            r = replica_info(self.ld)
            ok = r.code == 0 and r.ext.get("masterBrokerId") == "2"
            return r if ok else harness.Seen(r)
        r = wait_until(promoted, T(3.0), "B2 master after B1's connections closed")
        self.assertEqual(r.ext["masterEpoch"], "2")
        self.assertEqual(json.loads(r.body), {"syncStateSet": [2], "syncStateSetEpoch": 3})
        n = wait_until(lambda: b2.listener.notifications()[n0:] or harness.Seen([]), T(5.0),
                       "1008 at B2")
        self.assertEqual((n[0].ext["masterBrokerId"], n[0].ext["masterEpoch"],
                          n[0].ext["syncStateSetEpoch"]), ("2", "2", "3"))
        # the new master re-registers with the name server as id 0 (what a 5.x broker does
        # on the notification): the route shows it at once
        nb = clusterh.Broker(name="broker-a", addr=b2.addr, topics=["TopicC1", "TopicC2"])
        self.brokers.append(nb)
        self.assertEqual(nb.register(self.ld).code, 0)
        route = clusterh.route(self.ld, "TopicC1")
        addrs = route.body_json()["brokerDatas"][0]["brokerAddrs"]
        self.assertEqual(addrs.get("0", addrs.get(0)), b2.addr)
        # 14: the old master's view is fenced, nothing changes
        r = b1.alter(self.ld, [1, 2], 1, 2, master=1)
        self.assertEqual(r.code, 2002, r)
        r = b1.alter(self.ld, [1, 2], 1, 3, master=2)
        self.assertEqual(r.code, 2000, r)
        self.assertEqual(json.loads(replica_info(self.ld).body),
                         {"syncStateSet": [2], "syncStateSetEpoch": 3})
        # 15: it comes back as a slave
        b1.heartbeat()
        r = b1.request(self.ld, REGISTER, {"clusterName": "c1", "brokerName": "broker-a",
                                           "brokerId": "1", "brokerAddress": b1.addr})
        self.assertEqual((r.code, r.ext.get("masterBrokerId"), r.ext.get("masterEpoch")),
                         (0, "2", "2"), r)
        self.assertEqual(b1.elect(self.ld).code, 2011)
        self.assertGreaterEqual(self.ld.status()["controller"]["elections"], 2)

    def test_master_and_raft_leader_die_together(self):
        """Whichever node elects B2 (the dying leader's entry committed by its successor, or the
        successor's own scan), B2 is told, and by the leader that serves."""
        b1, b2 = self.state_11()
        old = self.ld
        b1.die()
        old.kill9()
        ld = self.leader_answers(exclude=(old.id,))
        n = wait_until(lambda: [f for f in b2.listener.notifications()
                                if f.ext.get("masterBrokerId") == "2"] or harness.Seen([]),
                       T(15.0), "1008 naming B2 after the master and the raft leader died")
        self.assertEqual(n[0].ext["masterEpoch"], "2")
        r = replica_info(ld)
        self.assertEqual((r.ext.get("masterBrokerId"), r.ext["masterEpoch"]), ("2", "2"), r)

    def test_state_survives_leader_change_and_full_restart(self):
        b1, b2 = self.state_11()
        # 27: the raft leader dies; the next one answers from the same log
        old = self.ld
        old.kill9()
        ld = self.leader_answers(exclude=(old.id,))
        r = replica_info(ld)
        self.assertEqual((r.code, r.ext.get("masterBrokerId"), r.ext["masterEpoch"]),
                         (0, "1", "1"), r)
        self.assertEqual(json.loads(r.body), {"syncStateSet": [1, 2], "syncStateSetEpoch": 2})
        # 29: every node restarts; ids and check codes are still there
        b1.die()
        b2.die()
        for nd in self.cluster.all():
            if nd.alive():
                nd.stop()
        for nd in self.cluster.all():
            nd.start(wait=False)
        self.cluster.wait_ready()
        ld = self.leader_answers()
        with ld.conn() as c:
            names = {"clusterName": "c1", "brokerName": "broker-a"}
            self.assertEqual(c.request(NEXT_ID, names).ext["nextBrokerId"], "3")
            r = c.request(APPLY_ID, dict(names, appliedBrokerId="1",
                                         registerCheckCode=b1.code))
            self.assertEqual(r.code, 0, r)
        self.cluster.wait_converged()


def no_master(nd):
    """1004 on nd when it shows no master, else Seen."""
    r = replica_info(nd)
    return r if r.code == 0 and "masterBrokerId" not in r.ext else harness.Seen(r)


class Expiry(ControllerCase):
    def test_silent_master_expires_and_only_the_in_sync_replica_may_return(self):
        b1, b2 = self.new_broker(), self.new_broker()
        b1.admit(self.ld)
        b1.heartbeat(timeout_ms=3000)
        self.assertEqual(b1.elect(self.ld).code, 0)
        b2.admit(self.ld)
        b2.heartbeat()
        epoch0 = int(replica_info(self.ld).ext["masterEpoch"])
        # 9: B1 stops beating (its connections stay open) and expires after its 3 s timeout
        # plus a scan; with S = {1} the triggered election clears the master
        r = wait_until(lambda: no_master(self.ld), T(10.0), "no master after B1's timeout")
        self.assertGreater(int(r.ext["masterEpoch"]), epoch0)
        self.assertEqual(json.loads(r.body)["syncStateSet"], [1])
        # 21: nobody electable, controller-style: 2004, the master epoch grows, S stays
        before = int(replica_info(self.ld).ext["masterEpoch"])
        r = self.ld.request(ELECT, {"clusterName": "", "brokerName": "broker-a",
                                    "brokerId": "-1"})
        self.assertEqual((r.code, r.remark, r.ext),
                         (2004, "Old master has down and failed to elect a new broker master",
                          {}), r)
        r2 = replica_info(self.ld)
        self.assertGreater(int(r2.ext["masterEpoch"]), before)
        self.assertEqual(json.loads(r2.body)["syncStateSet"], [1])
        b3 = self.new_broker()
        r = b3.admit(self.ld)
        self.assertEqual(r.code, 0, r)
        self.assertNotIn("masterBrokerId", r.ext)
        # 16: B2 is alive but not in S: unclean election is off
        b2.heartbeat()
        r = b2.elect(self.ld)
        self.assertEqual((r.code, r.remark, r.ext), (2012, "Failed to elect a new master", {}))
        # B1 returns and is elected again (it is in S)
        b1.heartbeat()
        before = int(replica_info(self.ld).ext["masterEpoch"])
        r = b1.elect(self.ld)
        self.assertEqual((r.code, r.ext["masterBrokerId"], int(r.ext["masterEpoch"])),
                         (0, "1", before + 1), r)

    def test_clean_broker_data(self):
        # 23
        b1, b2 = self.state_11()
        names = {"clusterName": "c1", "brokerName": "broker-a"}
        r = b1.request(self.ld, CLEAN, names)
        self.assertEqual((r.code, r.remark),
                         (2009, "Broker broker-a is still alive, clean up failure"))
        r = b1.request(self.ld, CLEAN, dict(names, brokerControllerIdsToClean="1"))
        self.assertEqual((r.code, r.remark),
                         (2009, "Broker [broker-a,  1] is still alive, clean up failure"))
        b2.die()  # the slave first: its going changes nothing

        def b2_gone():
            r = self.ld.request(SYNC_DATA, {}, b'["broker-a"]')
            reps = ns.loads_tolerant(r.body)["replicasInfoTable"]["broker-a"]
            alive = [x["brokerId"] for x in reps["inSyncReplicas"] + reps["notInSyncReplicas"]
                     if x["alive"]]
            return alive == [1] or harness.Seen(alive)
        wait_until(b2_gone, T(5.0), "B2 no longer alive on the leader")
        b1.die()  # then the master: nobody in S is alive, the master is cleared
        wait_until(lambda: no_master(self.ld), T(10.0), "no master once both are gone")
        r = self.ld.request(CLEAN, dict(names, brokerControllerIdsToClean="1;2;3"))
        self.assertEqual((r.code, r.ext), (0, None), r)
        r = replica_info(self.ld)
        self.assertEqual(r.code, 2008, r)
        r = self.ld.request(CLEAN, {"brokerName": "broker12", "isCleanLivingBroker": "true"})
        self.assertEqual((r.code, r.remark), (2009, "Broker broker12 is not existed,clean "
                                                    "broker data failure."))
        self.cluster.wait_converged()

    def test_no_quorum_no_change(self):
        # 28
        b1, b2 = self.state_11()
        fs = self.cluster.followers(self.ld)
        for f in fs:
            f.stop()
        r = None
        try:
            r = self.ld.request(ELECT, {"clusterName": "", "brokerName": "broker-a",
                                        "brokerId": "-1"}, timeout=T(10.0))
        except TimeoutError:
            pass
        self.assertTrue(r is None or r.code != 0, r)
        for f in fs:
            f.start(wait=False)
        self.cluster.wait_ready(fs)
        ld = self.leader_answers()
        r = replica_info(ld)
        self.assertEqual((r.code, r.ext.get("masterBrokerId"), r.ext["masterEpoch"]),
                         (0, "1", "1"), r)
        self.assertEqual(json.loads(r.body), {"syncStateSet": [1, 2], "syncStateSetEpoch": 2})


class Unclean(ControllerCase):
    NAMESRV = dict(CONTROLLER_ON, enableElectUncleanMaster="true")

    def test_unclean_election_takes_a_replica_outside_the_set(self):
        # 17: S = {1}, B1 dies with B2 alive: B2 is elected
        b1, b2 = self.state_11()
        r = b1.alter(self.ld, [1], 1, 2)
        self.assertEqual(r.code, 0, r)
        b1.die()

        def promoted():
            r = replica_info(self.ld)
            return r if r.ext.get("masterBrokerId") == "2" else harness.Seen(r)
        r = wait_until(promoted, T(5.0), "B2 elected outside S")
        self.assertEqual((r.ext["masterEpoch"], json.loads(r.body)["syncStateSet"]), ("2", [2]))
        r = self.ld.request(GET_CONFIG)
        self.assertIn("enableElectUncleanMaster=true", r.body.decode())


class Raftnsctl(ControllerCase):
    """raftnsctl controller ... (mqadmin's controller commands) asked through a follower."""

    def ctl(self, nd, *args):
        out = subprocess.run([RAFTNSCTL, "-n", "127.0.0.1:%d" % nd.client_port] + list(args),
                             capture_output=True, timeout=T(20.0))
        return out.returncode, out.stdout.decode(), out.stderr.decode()

    def test_metadata_sync_state_elect_clean_config(self):
        b1, b2 = self.state_11()
        f = self.cluster.followers(self.ld)[0]
        rc, out, err = self.ctl(f, "controller", "metadata")
        self.assertEqual(rc, 0, err)
        self.assertIn("127.0.0.1:%d" % self.ld.client_port, out)
        self.assertRegex(out, r"isLeader\s+false")
        rc, out, err = self.ctl(f, "controller", "sync-state", "broker-a", "nope")
        self.assertEqual(rc, 0, err)
        self.assertIn("broker-a master 1 epoch 1 syncStateSetEpoch 2", out)
        self.assertEqual(out.count("in-sync"), 2, out)
        # 20 through the tool: designate B2, then the current master again
        rc, out, err = self.ctl(f, "--json", "controller", "elect", "broker-a", "2", "c1")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["masterBrokerId"], "2")
        rc, out, err = self.ctl(f, "controller", "elect", "broker-a", "2")
        self.assertEqual(rc, 1)
        self.assertIn("2011", err)
        rc, out, err = self.ctl(f, "controller", "clean", "broker-a", "1")
        self.assertEqual(rc, 1)
        self.assertIn("is still alive", err)
        rc, out, err = self.ctl(f, "controller", "config", "set", "notifyBrokerRoleChanged=false")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.ctl(f, "controller", "config", "get")
        self.assertIn("notifyBrokerRoleChanged=false", out)
        rc, out, err = self.ctl(self.ld, "controller", "config", "get")
        self.assertIn("notifyBrokerRoleChanged=true", out)  # per node, as Java's


class ControllerPort(ControllerCase):
    """controllerDLegerPeers gives each node a controller port of its own (Java's embedded
    controller layout): brokers that list those ports find the leader's and fail over there."""

    def setUp(self):
        ports = harness.free_ports(3)
        self.ctl_addrs = {i + 1: "127.0.0.1:%d" % p for i, p in enumerate(ports)}
        self.NAMESRV = dict(CONTROLLER_ON, controllerDLegerPeers="".join(
            "n%d-%s;" % (i, a) for i, a in self.ctl_addrs.items()))
        super().setUp()

    def test_brokers_on_the_controller_ports(self):
        for nd in self.cluster.all():  # each node serves there (a 2007 is an answer)
            host, port = self.ctl_addrs[nd.id].split(":")
            nd.conn = (lambda timeout=None, h=host, p=int(port):
                       ns.Conn((h, p), timeout=timeout or T(5.0)))
        f = self.cluster.followers(self.ld)[0]
        r = f.request(METADATA)
        self.assertEqual(r.ext["controllerLeaderAddress"], self.ctl_addrs[self.ld.id], r)
        self.assertIn("n%d:%s;" % (f.id, self.ctl_addrs[f.id]), r.ext["peers"])
        b1, b2 = self.state_11()  # every request and heartbeat over the controller ports
        b1.die()

        def promoted():
            r = replica_info(self.ld)
            return r if r.ext.get("masterBrokerId") == "2" else harness.Seen(r)
        wait_until(promoted, T(3.0), "B2 master after B1's controller connections closed")
        n = wait_until(lambda: b2.listener.notifications() or harness.Seen([]), T(5.0),
                       "1008 at B2")
        self.assertEqual(n[-1].ext["masterBrokerId"], "2")


class Disabled(clusterh.ClusterTestCase):
    NODES = 1

    def test_controller_codes_are_not_served_when_off(self):
        nd = self.cluster[1]
        for code in (METADATA, NEXT_ID, ELECT):
            r = nd.request(code, {"brokerName": "broker-a"})
            self.assertEqual(r.code, ns.REQUEST_CODE_NOT_SUPPORTED, r)
        r = nd.request(ns.BROKER_HEARTBEAT, {"clusterName": "c1", "brokerAddr": "1.2.3.4:5"})
        self.assertEqual((r.code, r.remark), (0, None), r)


if __name__ == "__main__":
    clusterh.main()
