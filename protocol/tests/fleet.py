"""A hosted tipsd fleet on one machine, over loopback: a PostgreSQL primary with a synchronous streaming standby
(pg_basebackup -R), N hosted nodes on a multi-host URL (target_session_attrs=read-write: they follow a failover by
themselves), and HAProxy 2.6 in front of them with deploy/haproxy.cfg. `make fleet` runs it for a person
(scripts/fleet); test_fleet.py kills its parts.
"""

from __future__ import annotations

import os
import pathlib
import resource
import shutil
import subprocess
import time
import urllib.request

import pgcluster
from faultproxy import FaultProxy
from harness import REPO, TIMEOUT
from hosted import Hosted, HostedNode

HAPROXY_CONFIG = REPO / "deploy" / "haproxy.cfg"


class Fleet(Hosted):
    """Hosted's PostgreSQL primary plus a synchronous standby, `nodes` nodes and HAProxy."""

    def __init__(
        self,
        nodes: int = 3,
        *,
        catalog: pathlib.Path | None = None,
        node_options: list[str] | None = None,
        link_proxies: bool = False,
    ):
        """``link_proxies``: each node reaches PostgreSQL through a fault proxy of its own (``self.proxies[i]``, see
        faultproxy.py) pointed at the primary — the proxy is the fleet's "DNS name", re-pointed by ``fail_over``."""
        super().__init__()
        self.proxies: list[FaultProxy] = []
        self.standby = self.cluster.add(self.postgres.standby("standby1")).start()
        self.postgres.query("ALTER SYSTEM SET synchronous_standby_names = 'standby1'")
        self.postgres.query("SELECT pg_reload_conf()")
        deadline = time.monotonic() + TIMEOUT
        while "sync" not in self.postgres.query("SELECT sync_state FROM pg_stat_replication"):
            assert time.monotonic() < deadline, "the standby did not become synchronous"
            time.sleep(0.05)
        self.url = (
            f"postgresql://postgres@127.0.0.1:{self.postgres.port},127.0.0.1:{self.standby.port}/postgres"
            "?target_session_attrs=read-write&connect_timeout=2"
        )
        ports = [pgcluster.free_port() for _ in range(nodes)]
        for index, port in enumerate(ports):
            url = self.url
            if link_proxies:
                proxy = FaultProxy(self.postgres.port, name=f"node{index + 1}-postgres")
                self.proxies.append(proxy)
                url = f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres?connect_timeout=2"
            node = HostedNode(
                self.directory,
                url,
                self.issuer,
                name=f"node{index + 1}",
                catalog=catalog or REPO / "catalog" / "demo.json",
                extra=node_options,
                listen_port=port,
            )
            self.nodes.append(node)
        self.port = pgcluster.free_port()
        self.stats_port = pgcluster.free_port()
        self.haproxy_log = open(self.directory / "haproxy.log", "w")
        environment = dict(
            os.environ,
            TIPSD_FLEET_BIND=f"127.0.0.1:{self.port}",
            TIPSD_FLEET_STATS=f"127.0.0.1:{self.stats_port}",
            TIPSD_FLEET_MAXCONN=str(max(100, min(40_000, (resource.getrlimit(resource.RLIMIT_NOFILE)[1] - 200) // 2))),
            **{f"TIPSD_NODE{i + 1}": f"127.0.0.1:{port}" for i, port in enumerate(ports)},
        )
        for missing in range(nodes, 3):  # the config names three servers
            environment[f"TIPSD_NODE{missing + 1}"] = f"127.0.0.1:{pgcluster.free_port()}"
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.haproxy = subprocess.Popen(
            [haproxy, "-db", "-f", str(HAPROXY_CONFIG)],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=self.haproxy_log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + TIMEOUT
        while not self._balancer_up():
            assert self.haproxy.poll() is None, (self.directory / "haproxy.log").read_text()
            assert time.monotonic() < deadline, "HAProxy did not start"
            time.sleep(0.05)

    def _balancer_up(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    @property
    def websocket_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    def kill_primary(self) -> None:
        """The primary dies (pg_ctl stop -m immediate)."""
        self.postgres.kill()

    def promote_standby(self) -> None:
        self.standby.promote()

    def fail_over(self) -> None:
        """With link proxies: the primary dies, the standby is promoted and every proxy points at it (the "DNS name"
        moves). The promoted server has no standby of its own: its commits wait for nobody."""
        self.kill_primary()
        self.promote_standby()
        self.postgres, self.standby = self.standby, None
        for proxy in self.proxies:
            proxy.retarget(self.postgres.port)

    def close(self) -> None:
        if self.haproxy.poll() is None:
            self.haproxy.terminate()
            try:
                self.haproxy.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.haproxy.kill()
        for proxy in self.proxies:
            proxy.close()
        super().close()
