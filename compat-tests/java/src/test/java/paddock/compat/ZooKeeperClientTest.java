package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The plain ZooKeeper 3.9.5 Java client on the edges Curator and zkCli rely on: session timeout
 * negotiation, server-side session expiry of a killed client, multi results, persistent watches,
 * removeWatches, reconfig in standalone, and the packet size limit.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ZooKeeperClientTest {
    private final Zk.Handles handles = new Zk.Handles();
    private String root;

    @BeforeEach
    void setUp(TestInfo info) throws Exception {
        root = Zk.uniqueRoot("zk-", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        handles.close();
        Zk.deleteTrees(root);
    }

    private ZooKeeper connect(int timeoutMs, Watcher extra) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        // extra sees the event before connect() returns, so a caller can drop the initial SyncConnected.
        ZooKeeper zk = new ZooKeeper(Zk.hosts(), timeoutMs, e -> {
            if (extra != null) {
                extra.process(e);
            }
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected && e.getType() == Watcher.Event.EventType.None) {
                connected.countDown();
            }
        });
        handles.track(zk);
        assertTrue(connected.await(15, TimeUnit.SECONDS), "connected");
        return zk;
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void sessionTimeoutIsClampedToTwoAndTwentyTicks() throws Exception {
        // Both servers run with tickTime 2000: the negotiated timeout lies in [4000, 40000].
        assertEquals(4000, connect(1000, null).getSessionTimeout());
        assertEquals(40000, connect(120000, null).getSessionTimeout());
        assertEquals(10000, connect(10000, null).getSessionTimeout());
    }

    @Test
    void killedClientsEphemeralLivesUntilItsSessionTimesOut() throws Exception {
        ZooKeeper watcher = connect(10000, null);
        watcher.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        // zkCli in a child JVM with a 4 s session; stdin stays open, so it never closes the session itself.
        List<String> cmd = new ArrayList<>(ZkCli.command());
        cmd.addAll(List.of("-timeout", "4000"));
        Process cli = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            cli.getOutputStream().write(b("create -e " + root + "/eph x\n"));
            cli.getOutputStream().flush();
            assertTrue(Zk.await(Duration.ofSeconds(20), () -> {
                try {
                    return watcher.exists(root + "/eph", false) != null;
                } catch (Exception e) {
                    return false;
                }
            }), "child zkCli created its ephemeral");
            BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
            assertNotNull(watcher.exists(root + "/eph", events::add));
            long killedAt = System.nanoTime();
            cli.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            // A dropped connection is not a closed session: the node must stay until the session expires.
            Thread.sleep(1500);
            assertNotNull(watcher.exists(root + "/eph", false), "ephemeral survives the dropped connection");
            WatchedEvent e = events.poll(20, TimeUnit.SECONDS);
            assertNotNull(e, "expiry deletes the ephemeral");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertEquals(Watcher.Event.EventType.NodeDeleted, e.getType());
            assertEquals(root + "/eph", e.getPath());
            assertTrue(ms >= 3000, "deleted only after about the 4 s session timeout, was " + ms + " ms");
        } finally {
            cli.destroyForcibly();
        }
    }

    @Test
    void failedMultiReportsPerOpErrorsAndChangesNothing() throws Exception {
        ZooKeeper zk = connect(10000, null);
        zk.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.create(root + "/exists", b("v"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        KeeperException ex = assertThrows(KeeperException.class, () -> zk.multi(List.of(
                Op.create(root + "/new", b("n"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT),
                Op.create(root + "/exists", b("x"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT),
                Op.setData(root + "/exists", b("y"), -1))));
        assertEquals(KeeperException.Code.NODEEXISTS, ex.code());
        List<Integer> codes = new ArrayList<>();
        for (OpResult r : ex.getResults()) {
            codes.add(((OpResult.ErrorResult) r).getErr());
        }
        // ZooKeeper: ops before the failure report 0, the failed op its code, later ops RUNTIMEINCONSISTENCY.
        assertEquals(List.of(0, KeeperException.Code.NODEEXISTS.intValue(),
                KeeperException.Code.RUNTIMEINCONSISTENCY.intValue()), codes);
        assertNull(zk.exists(root + "/new", false));
        assertArrayEquals(b("v"), zk.getData(root + "/exists", false, null));

        List<OpResult> ok = zk.multi(List.of(
                Op.create(root + "/s-", b("1"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL),
                Op.check(root + "/exists", 0),
                Op.setData(root + "/exists", b("z"), 0),
                Op.delete(root + "/s-0000000001", -1)));
        assertEquals(4, ok.size());
        assertEquals(root + "/s-0000000001", ((OpResult.CreateResult) ok.get(0)).getPath());
        assertEquals(ZooDefs.OpCode.check, ok.get(1).getType());
        assertEquals(1, ((OpResult.SetDataResult) ok.get(2)).getStat().getVersion());
        assertEquals(ZooDefs.OpCode.delete, ok.get(3).getType());
        assertEquals(List.of("exists"), zk.getChildren(root, false));

        List<OpResult> reads = zk.multi(List.of(Op.getChildren(root), Op.getData(root + "/exists"),
                Op.getData(root + "/none")));
        assertEquals(List.of("exists"), ((OpResult.GetChildrenResult) reads.get(0)).getChildren());
        assertArrayEquals(b("z"), ((OpResult.GetDataResult) reads.get(1)).getData());
        assertEquals(KeeperException.Code.NONODE.intValue(), ((OpResult.ErrorResult) reads.get(2)).getErr());
    }

    @Test
    void persistentWatchOnANodeSurvivesEventsAndIsRemovable() throws Exception {
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        ZooKeeper zk = connect(10000, null);
        ZooKeeper other = connect(10000, null);
        zk.addWatch(root, e -> events.add(e.getType() + " " + e.getPath()), AddWatchMode.PERSISTENT);
        other.create(root, b("a"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertEquals("NodeCreated " + root, events.poll(10, TimeUnit.SECONDS));
        other.setData(root, b("b"), -1);
        assertEquals("NodeDataChanged " + root, events.poll(10, TimeUnit.SECONDS));
        other.create(root + "/c", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertEquals("NodeChildrenChanged " + root, events.poll(10, TimeUnit.SECONDS));
        other.setData(root + "/c", b("x"), -1); // not recursive: a child's data is not reported
        other.delete(root + "/c", -1);
        assertEquals("NodeChildrenChanged " + root, events.poll(10, TimeUnit.SECONDS));
        other.delete(root, -1);
        assertEquals("NodeDeleted " + root, events.poll(10, TimeUnit.SECONDS));
        other.create(root, b("again"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertEquals("NodeCreated " + root, events.poll(10, TimeUnit.SECONDS), "still armed after delete");
        zk.removeAllWatches(root, Watcher.WatcherType.Any, false);
        assertEquals("PersistentWatchRemoved " + root, events.poll(10, TimeUnit.SECONDS));
        other.setData(root, b("quiet"), -1);
        assertNull(events.poll(500, TimeUnit.MILLISECONDS));
    }

    @Test
    void removeWatchesOfOneTypeLeavesTheOther() throws Exception {
        ZooKeeper zk = connect(10000, null);
        ZooKeeper other = connect(10000, null);
        zk.create(root, b("a"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        Watcher w = e -> events.add(e.getType() + " " + e.getPath());
        zk.getData(root, w, null);
        zk.getChildren(root, w);
        zk.removeWatches(root, w, Watcher.WatcherType.Data, false);
        assertEquals("DataWatchRemoved " + root, events.poll(10, TimeUnit.SECONDS));
        KeeperException nw = assertThrows(KeeperException.class,
                () -> zk.removeWatches(root, w, Watcher.WatcherType.Data, false));
        assertEquals(KeeperException.Code.NOWATCHER, nw.code());
        other.setData(root, b("b"), -1);
        other.create(root + "/c", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertEquals("NodeChildrenChanged " + root, events.poll(10, TimeUnit.SECONDS));
        assertNull(events.poll(300, TimeUnit.MILLISECONDS));
    }

    @Test
    void reconfigIsRefusedInStandalone() throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        try (ZooKeeperAdmin admin = new ZooKeeperAdmin(Zk.hosts(), 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        })) {
            assertTrue(connected.await(15, TimeUnit.SECONDS));
            KeeperException ex = assertThrows(KeeperException.class,
                    () -> admin.reconfigure(null, null, Arrays.asList("server.2=127.0.0.1:2888:3888;2182"), -1, new Stat()));
            assertEquals(KeeperException.Code.RECONFIGDISABLED, ex.code());
        }
    }

    @Test
    void dataJustUnderOneMegabyteIsStoredAndAnOversizedPacketDropsTheConnection() throws Exception {
        BlockingQueue<Watcher.Event.KeeperState> states = new LinkedBlockingQueue<>();
        ZooKeeper zk = connect(10000, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState());
            }
        });
        states.clear();
        zk.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        byte[] big = new byte[1000 * 1000];
        Arrays.fill(big, (byte) 7);
        zk.create(root + "/big", big, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertArrayEquals(big, zk.getData(root + "/big", false, null));
        byte[] huge = new byte[2 * 1024 * 1024];
        KeeperException ex = assertThrows(KeeperException.class,
                () -> zk.create(root + "/huge", huge, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT));
        assertEquals(KeeperException.Code.CONNECTIONLOSS, ex.code());
        assertEquals(Watcher.Event.KeeperState.Disconnected, states.poll(10, TimeUnit.SECONDS));
        assertEquals(Watcher.Event.KeeperState.SyncConnected, states.poll(20, TimeUnit.SECONDS), "reconnects");
        assertNull(zk.exists(root + "/huge", false));
    }

    @Test
    void whoAmIEphemeralsAndChildCountThroughTheApi() throws Exception {
        ZooKeeper zk = connect(10000, null);
        zk.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.create(root + "/p", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.create(root + "/p/e", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        zk.create(root + "/q", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        assertEquals(3, zk.getAllChildrenNumber(root));
        assertEquals(List.of(root + "/p/e"), zk.getEphemerals(root + "/p"));
        List<String> all = new ArrayList<>(zk.getEphemerals(root));
        all.sort(null);
        assertEquals(List.of(root + "/p/e", root + "/q"), all);
        assertEquals("[ip:127.0.0.1]", zk.whoAmI().stream().map(c -> c.getAuthScheme() + ":" + c.getUser()).toList()
                .toString());
        zk.addAuthInfo("digest", b("alice:secret"));
        List<String> ids = new ArrayList<>(zk.whoAmI().stream().map(c -> c.getAuthScheme() + ":" + c.getUser()).toList());
        ids.sort(null);
        assertEquals(List.of("digest:alice", "ip:127.0.0.1"), ids);
        KeeperException.InvalidACLException ex = assertThrows(KeeperException.InvalidACLException.class,
                () -> connect(10000, null).create(root + "/creator", new byte[0], ZooDefs.Ids.CREATOR_ALL_ACL,
                        CreateMode.PERSISTENT));
        assertEquals(KeeperException.Code.INVALIDACL, ex.code());
    }

    @Test
    void systemNodesHaveZooKeepersFixedStats() throws Exception {
        ZooKeeper zk = connect(10000, null);
        // The /zookeeper subtree is built at start-up, outside any transaction: zxids are 0.
        Stat sys = zk.exists("/zookeeper", false);
        assertEquals(List.of(0L, 0L, 0L, -2, 0, 0, 0L, 0, 2), List.of(sys.getCzxid(), sys.getMzxid(),
                sys.getPzxid(), sys.getCversion(), sys.getVersion(), sys.getAversion(), sys.getEphemeralOwner(),
                sys.getDataLength(), sys.getNumChildren()));
        Stat cfg = zk.exists("/zookeeper/config", false);
        assertEquals(List.of(0L, 0L, 0L, 0, 0, -1, 0L, 0, 0), List.of(cfg.getCzxid(), cfg.getMzxid(),
                cfg.getPzxid(), cfg.getCversion(), cfg.getVersion(), cfg.getAversion(), cfg.getEphemeralOwner(),
                cfg.getDataLength(), cfg.getNumChildren()), "aclVersion -1 on /zookeeper/config");
        assertEquals(ZooDefs.Ids.READ_ACL_UNSAFE, zk.getACL("/zookeeper/config", new Stat()));
        List<String> kids = new ArrayList<>(zk.getChildren("/zookeeper", false));
        kids.sort(null);
        assertEquals(List.of("config", "quota"), kids);
        KeeperException del = assertThrows(KeeperException.class, () -> zk.delete("/zookeeper/config", -1));
        assertEquals(KeeperException.Code.BADARGUMENTS, del.code());
        KeeperException set = assertThrows(KeeperException.class, () -> zk.setData("/zookeeper/config", b("x"), -1));
        assertEquals(KeeperException.Code.NOAUTH, set.code());
    }
}
