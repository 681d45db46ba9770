"""Settings that cannot be turned into an outage (issue 8, item 5): UPDATE_NAMESRV_CONFIG (318)
refuses, as a whole, any update with a value out of type or range, an unknown key or a start-up
setting (code 1, a remark naming the key and what it allows) and keeps answering 16 for the
protected keys; nothing changes on any node of a 3-node cluster (319 shows the old values
everywhere). --set and the cluster file's namesrv section are validated the same way at start
(exit 2 with a clear message), and may set start-up keys. The validation table itself is
unit-tested in tests/unit/test_config.c."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "process"))
import clusterh  # noqa: E402
import harness  # noqa: E402
import nsclient as ns  # noqa: E402
from harness import T, wait_until  # noqa: E402

SYSTEM_ERROR = 1
NO_PERMISSION = 16

# (key, value) pairs 318 must refuse: out of range, bad type, empty, trailing blank.
BAD_RUNTIME = [
    ("serverChannelMaxIdleTimeSeconds", "1"),
    ("serverChannelMaxIdleTimeSeconds", "0"),
    ("serverChannelMaxIdleTimeSeconds", "86401"),
    ("serverChannelMaxIdleTimeSeconds", "-30"),
    ("serverChannelMaxIdleTimeSeconds", "120s"),
    ("scanNotActiveBrokerInterval", "999"),
    ("scanNotActiveBrokerInterval", "600001"),
    ("scanNotActiveBrokerInterval", "9223372036854775807"),
    ("scanNotActiveBrokerInterval", "99999999999999999999999"),
    ("scanNotActiveBrokerInterval", "5e3"),
    ("waitSecondsForService", "3601"),
    ("waitSecondsForService", "-1"),
    ("waitSecondsForService", ""),
    ("waitSecondsForService", "5 "),
    ("orderMessageEnable", "yes"),
    ("orderMessageEnable", "1"),
    ("returnOrderTopicConfigToBroker", "on"),
    ("supportActingMaster", ""),
    ("enableAllTopicList", "truee"),
    ("enableTopicList", "0"),
    ("needWaitForService", "y"),
    ("notifyMinBrokerIdChanged", "no"),
    ("deleteTopicWithBrokerRegistration", "TRUE!"),
    ("productEnvName", "a b"),
    ("productEnvName", "x" * 65),
    ("productEnvName", "../etc"),
]

START_UP_KEYS = [
    "listenPort", "bindAddress", "serverWorkerThreads", "serverSelectorThreads",
    "serverCallbackExecutorThreads", "serverOnewaySemaphoreValue", "serverAsyncSemaphoreValue",
    "serverSocketSndBufSize", "serverSocketRcvBufSize", "serverSocketBacklog",
    "writeBufferHighWaterMark", "writeBufferLowWaterMark", "serverPooledByteBufAllocatorEnable",
    "serverNettyWorkerGroupEnable", "useEpollNativeSelector", "enableShutdownGracefully",
    "shutdownWaitTimeSeconds", "clientRequestThreadPoolNums", "defaultThreadPoolNums",
    "clientRequestThreadPoolQueueCapacity", "defaultThreadPoolQueueCapacity",
    "unRegisterBrokerQueueCapacity", "clusterTest", "enableControllerInNamesrv",
    "clientMaxConnections", "clientMaxConnectionsPerIp", "clientBufferBudgetBytes",
]


def update(nd, body):
    body = body if isinstance(body, bytes) else ns.properties_text(body)
    return nd.request(ns.UPDATE_NAMESRV_CONFIG, None, body, timeout=T(5))


# Each node shows its own listen address in 319 (ns_handle_get_config); the rest is replicated.
NODE_LOCAL = ("listenPort", "bindAddress")


def replicated(cfg):
    return {k: v for k, v in cfg.items() if k not in NODE_LOCAL}


def get_config(nd):
    r = nd.request(ns.GET_NAMESRV_CONFIG, timeout=T(5))
    assert r.code == 0, repr(r)
    return ns.parse_properties(r.body)


class ConfigUpdate(clusterh.ClusterTestCase):
    NODES = 3

    def assert_everywhere(self, expected, what):
        """Every node's 319 equals expected (polled: a follower may still be applying)."""
        for nd in self.cluster.all():
            def same(nd=nd):
                cfg = get_config(nd)
                mine, want = replicated(cfg), replicated(expected)
                ok = mine == want and cfg.get("listenPort") == str(nd.client_port)
                return harness.observed(ok, {
                    k: cfg.get(k) for k in set(cfg) | set(expected)
                    if cfg.get(k) != expected.get(k)})
            wait_until(same, T(10), "%s on node %d" % (what, nd.id))

    def test_refused_values_change_nothing(self):
        nodes = self.cluster.all()
        before = get_config(nodes[0])
        self.assertEqual(before["serverChannelMaxIdleTimeSeconds"], "120")
        for i, (key, value) in enumerate(BAD_RUNTIME):
            nd = nodes[i % len(nodes)]
            r = update(nd, ("%s=%s\n" % (key, value)).encode())
            self.assertEqual(r.code, SYSTEM_ERROR, "%s=%r accepted: %r" % (key, value, r))
            self.assertTrue(r.remark.startswith(key), r.remark)
            self.assertIn("must be", r.remark)
        r = update(nodes[1], {"serverChannelMaxIdleTimeSeconds": "1"})
        self.assertEqual((r.code, r.remark), (SYSTEM_ERROR, "serverChannelMaxIdleTimeSeconds=1: "
                                                            "must be an integer in [30, 86400]"))
        r = update(nodes[2], {"scanNotActiveBrokerInterval": "86400000"})
        self.assertEqual(r.remark, "scanNotActiveBrokerInterval=86400000: must be an integer in "
                                   "[1000, 600000]")
        r = update(nodes[0], {"orderMessageEnable": "yes"})
        self.assertEqual(r.remark, "orderMessageEnable=yes: must be true or false")
        # A good key next to a bad one: the whole update is refused.
        r = update(nodes[0], {"enableTopicList": "false", "waitSecondsForService": "99999"})
        self.assertEqual((r.code, r.remark), (SYSTEM_ERROR, "waitSecondsForService=99999: must be"
                                                            " an integer in [0, 3600]"))
        # Unknown keys (a typo) are refused, not ignored.
        for text in (b"enableTopiclist=false\n", b"key=value\n", b"enableTopicList=false\nx=1\n"):
            r = update(nodes[1], text)
            self.assertEqual(r.code, SYSTEM_ERROR, repr(r))
            self.assertTrue(r.remark.endswith(": unknown setting"), r.remark)
        # A later good update replicates everywhere: had any refused one been proposed, it
        # would have been applied before it, on every node.
        r = update(nodes[2], {"waitSecondsForService": "60", "scanNotActiveBrokerInterval": "1000",
                              "serverChannelMaxIdleTimeSeconds": "30"})
        self.assertEqual(r.code, 0, repr(r))
        expected = dict(before, waitSecondsForService="60", scanNotActiveBrokerInterval="1000",
                        serverChannelMaxIdleTimeSeconds="30")
        self.assert_everywhere(expected, "only the accepted update")

    def test_startup_keys_refused_at_run_time(self):
        nodes = self.cluster.all()
        before = get_config(nodes[0])
        for i, key in enumerate(START_UP_KEYS):
            value = before.get(key, "100")  # the current value: even a no-op is refused
            r = update(nodes[i % len(nodes)], {key: value})
            self.assertEqual(r.code, SYSTEM_ERROR, "%s accepted at run time: %r" % (key, r))
            self.assertEqual(r.remark, "%s: a start-up setting, read once at start; set it with "
                             "--set or the cluster file's namesrv section and restart" % key)
        # The protected keys keep answering NO_PERMISSION, before any other check.
        for key in ("configStorePath", "kvConfigPath", "configBlackList", "rocketmqHome"):
            r = update(nodes[0], {key: "/tmp/x", "waitSecondsForService": "99999"})
            self.assertEqual((r.code, r.remark),
                             (NO_PERMISSION, "Can not update config in black list."))
        self.assertEqual(update(nodes[0], {"orderMessageEnable": "true"}).code, 0)
        self.assert_everywhere(dict(before, orderMessageEnable="true"), "only orderMessageEnable")

    def test_idle_one_second_cannot_drop_brokers(self):
        """The outage of issue 8: =1 dropped every broker connection within ~2 s."""
        nd = self.cluster.all()[0]
        b = self.broker()
        self.assertEqual(b.register(nd).code, 0)
        r = update(nd, {"serverChannelMaxIdleTimeSeconds": "1"})
        self.assertEqual(r.code, SYSTEM_ERROR)
        # The broker's connection, idle since its registration, stays open past the old ~2 s.
        self.assertTrue(b.conn(nd).nothing_within(3.0), "the idle broker connection was closed")
        self.assertEqual(clusterh.cluster_brokers(nd), ["broker-a"])


class StartValidation(harness.NodeTestCase):
    START = False

    def start_fails(self, node, needle):
        node.start(wait=False)
        try:
            rc = node.proc.wait(T(10))
        except Exception:  # noqa: BLE001 - reported below
            rc = None
        self.assertEqual(rc, 2, "raftns did not exit 2 within %s:\n%s" % (
            harness.scale.describe(T(10)), node.log_tail(20)))
        self.assertIn(needle, node.log_text())
        node.assert_clean_log()
        node.cleanup(check=False)  # its exit status 2 is the expected outcome

    def test_set_out_of_range_exits_2(self):
        cases = [
            ({"serverChannelMaxIdleTimeSeconds": "1"}, "raftns: --set serverChannelMaxIdleTimeSeconds"
             "=1: must be an integer in [30, 86400]"),
            ({"scanNotActiveBrokerInterval": "0"}, "scanNotActiveBrokerInterval=0: must be"),
            ({"orderMessageEnable": "yes"}, "orderMessageEnable=yes: must be true or false"),
            ({"enableTopicLst": "true"}, "raftns: --set enableTopicLst: unknown setting"),
            ({"clientMaxConnections": "0"}, "clientMaxConnections=0: must be an integer in "
             "[1, 1000000]"),
            ({"clientBufferBudgetBytes": "1024"}, "clientBufferBudgetBytes=1024: must be"),
            ({"listenPort": "70000"}, "listenPort=70000: must be an integer in [1, 65535]"),
        ]
        for sets, needle in cases:
            with self.subTest(sets=sets):
                self.start_fails(self.new_node(sets, start=False), needle)

    def test_set_startup_keys_accepted(self):
        node = self.new_node({"serverWorkerThreads": "4", "useEpollNativeSelector": "true",
                              "clientMaxConnections": "500", "clientMaxConnectionsPerIp": "100",
                              "clientBufferBudgetBytes": str(64 << 20),
                              "serverChannelMaxIdleTimeSeconds": "30"})
        with ns.Conn(node.addr) as c:
            cfg = ns.parse_properties(c.request(ns.GET_NAMESRV_CONFIG, timeout=T(5)).body)
        self.assertEqual((cfg["serverWorkerThreads"], cfg["useEpollNativeSelector"]),
                         ("4", "true"))
        self.assertNotIn("clientMaxConnections", cfg, "client limits are node-local")

    def test_cluster_file_namesrv_validated(self):
        for namesrv, needle in (({"scanNotActiveBrokerInterval": 999999999},
                                 "namesrv: scanNotActiveBrokerInterval=999999999: must be an "
                                 "integer in [1000, 600000]"),
                                ({"nope": True}, "namesrv: nope: unknown setting")):
            with self.subTest(namesrv=namesrv):
                cl = clusterh.Cluster(1, namesrv=namesrv)
                try:
                    self.start_fails(cl[1], needle)
                finally:
                    cl.cleanup(check=False)
        cl = clusterh.Cluster(1, namesrv={"serverWorkerThreads": 2, "useEpollNativeSelector": True,
                                          "clientMaxConnectionsPerIp": 10})
        try:
            cl.start()
            self.assertEqual(get_config(cl[1])["serverWorkerThreads"], "2")
        finally:
            cl.cleanup(check=True)


if __name__ == "__main__":
    harness.main()
