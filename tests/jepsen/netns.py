"""Network namespaces for the fault suite: one namespace per node, one for the clients and one that
holds the bridge, joined by veth pairs created directly inside those namespaces, so no test traffic
ever crosses the root namespace. It also runs iptables inside a node's namespace (partitions) and
sweeps leftovers of dead earlier runs. It does not start raftns and does not decide on faults."""

import ctypes
import fcntl
import os
import re
import signal
import socket
import subprocess
import time

PREFIX = "rns-"
SUBNET = "10.77.0"
CLIENT_HOST = 100
CLONE_NEWNET = 0x40000000
LOCK_DIR = "/run/raftns-jepsen"  # rns-<pid>.lock, flock'ed by the live run


def run(argv, check=True, timeout=20):
    """Runs a command, returns CompletedProcess; raises RuntimeError on failure when check."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), p.returncode,
                                                (p.stderr or p.stdout).strip()))
    return p


def available():
    """None when `ip netns` and iptables work here (root), else a reason string."""
    if os.geteuid() != 0:
        return "not root"
    try:
        p = run(["ip", "netns", "list"], check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "ip netns unavailable: %s" % e
    if p.returncode != 0:
        return "ip netns unavailable: %s" % p.stderr.strip()
    try:
        run(["iptables", "--version"])
    except (OSError, RuntimeError) as e:
        return "iptables unavailable: %s" % e
    return None


def list_namespaces():
    p = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def kill_pids_in(ns):
    """SIGKILLs every process still running inside namespace ns."""
    p = run(["ip", "netns", "pids", ns], check=False)
    for tok in p.stdout.split():
        try:
            os.kill(int(tok), signal.SIGCONT)
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, OSError):
            pass


def delete_namespace(ns):
    kill_pids_in(ns)
    run(["ip", "netns", "del", ns], check=False)


def lock_path(pid):
    return os.path.join(LOCK_DIR, "%s%d.lock" % (PREFIX, pid))


def run_alive(pid):
    """True when the run of process pid still holds its lock (the kernel drops an flock when
    its holder dies, so a crashed or SIGKILLed run is never taken for a live one, and a live
    run started from any path or command line is never swept)."""
    if pid == os.getpid():
        return True
    try:
        fd = os.open(lock_path(pid), os.O_RDWR)
    except OSError:
        return False  # no lock file: its run is gone (or predates the lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def sweep(log=print):
    """Removes namespaces of earlier runs (rns-<pid>-...) whose owning run is gone."""
    removed = []
    for ns in list_namespaces():
        m = re.match(r"^%s(\d+)-" % re.escape(PREFIX), ns)
        if not m:
            continue
        pid = int(m.group(1))
        if run_alive(pid):
            continue  # a live concurrent run owns it
        delete_namespace(ns)
        removed.append(ns)
    for name in os.listdir(LOCK_DIR) if os.path.isdir(LOCK_DIR) else []:
        m = re.match(r"^%s(\d+)\.lock$" % re.escape(PREFIX), name)
        if m and not run_alive(int(m.group(1))):
            try:
                os.unlink(os.path.join(LOCK_DIR, name))
            except OSError:
                pass
    if removed:
        log("netns: swept %d leftover namespaces: %s" % (len(removed), " ".join(removed)))
    return removed


def _setns(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "setns(%s): %s" % (path, os.strerror(err)))
    finally:
        os.close(fd)


class Net:
    """The namespaces of one run: node namespaces n1..nK, a client one and a bridge one."""

    def __init__(self, max_nodes, log=print):
        self.run_id = "%s%d" % (PREFIX, os.getpid())
        self.max_nodes = max_nodes
        self.log = log
        self.created = []
        self.bridge_ns = self.run_id + "-br"
        self.client_ns = self.run_id + "-cl"
        self.root_fd = None
        os.makedirs(LOCK_DIR, exist_ok=True)
        self.lock_fd = os.open(lock_path(os.getpid()), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)  # held until destroy() or death

    def node_ns(self, node_id):
        return "%s-n%d" % (self.run_id, node_id)

    @staticmethod
    def node_ip(node_id):
        return "%s.%d" % (SUBNET, node_id)

    @property
    def client_ip(self):
        return "%s.%d" % (SUBNET, CLIENT_HOST)

    def _add_ns(self, ns):
        run(["ip", "netns", "add", ns])
        self.created.append(ns)
        run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def _attach(self, ns, port_name, host):
        run(["ip", "link", "add", "name", "eth0", "netns", ns, "type", "veth", "peer", "name",
             port_name, "netns", self.bridge_ns])
        run(["ip", "-n", self.bridge_ns, "link", "set", port_name, "master", "br0", "up"])
        run(["ip", "-n", ns, "addr", "add", "%s.%d/24" % (SUBNET, host), "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])

    def create(self):
        self._add_ns(self.bridge_ns)
        run(["ip", "-n", self.bridge_ns, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", self.bridge_ns, "link", "set", "br0", "up"])
        for i in range(1, self.max_nodes + 1):
            self._add_ns(self.node_ns(i))
            self._attach(self.node_ns(i), "vn%d" % i, i)
        self._add_ns(self.client_ns)
        self._attach(self.client_ns, "vcl", CLIENT_HOST)
        self.log("netns: created %s (bridge %s, clients %s at %s)" % (
            " ".join(self.node_ns(i) for i in range(1, self.max_nodes + 1)), self.bridge_ns,
            self.client_ns, self.client_ip))

    def enter_client(self):
        """Moves the calling thread (call it before starting any thread) into the client ns."""
        if self.root_fd is None:
            self.root_fd = os.open("/proc/self/ns/net", os.O_RDONLY)
        _setns("/run/netns/" + self.client_ns)

    def leave_client(self):
        if self.root_fd is not None:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.setns(self.root_fd, CLONE_NEWNET)
            os.close(self.root_fd)
            self.root_fd = None

    def wait_reachable(self, timeout=10.0):
        """From the client namespace (call after enter_client): polls until every node address
        answers a TCP SYN to a closed port with a reset (reachable, nothing listening yet)."""
        deadline = time.monotonic() + timeout
        for i in range(1, self.max_nodes + 1):
            while True:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(0.5)
                try:
                    s.connect((self.node_ip(i), 1))
                    break
                except ConnectionRefusedError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("node %d not reachable over the bridge" % i) from None
                    time.sleep(0.1)
                finally:
                    s.close()

    def iptables(self, node_id, args):
        return run(["ip", "netns", "exec", self.node_ns(node_id), "iptables", "-w"] + args)

    def block(self, node_id, peer_id, direction="both"):
        """Drops packets between node_id and peer_id, inside node_id's namespace only.
        direction: 'in' (node_id hears nothing from peer), 'out', or 'both'."""
        ip = self.node_ip(peer_id)
        if direction in ("in", "both"):
            self.iptables(node_id, ["-A", "INPUT", "-s", ip, "-j", "DROP"])
        if direction in ("out", "both"):
            self.iptables(node_id, ["-A", "OUTPUT", "-d", ip, "-j", "DROP"])

    def heal(self, node_ids):
        for i in node_ids:
            self.iptables(i, ["-F", "INPUT"])
            self.iptables(i, ["-F", "OUTPUT"])

    def destroy(self):
        self.leave_client()
        for ns in reversed(self.created):
            delete_namespace(ns)
        gone = self.created
        self.created = []
        if gone:
            self.log("netns: removed %d namespaces" % len(gone))
        if self.lock_fd is not None:
            try:
                os.unlink(lock_path(os.getpid()))
            except OSError:
                pass
            os.close(self.lock_fd)
            self.lock_fd = None
