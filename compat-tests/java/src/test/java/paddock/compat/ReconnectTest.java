package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.HostProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * A client cut off from the server on demand: its HostProvider can be pointed at a closed port, and an
 * oversized request makes the server drop the connection. This makes two session behaviours
 * deterministic: watches re-sent on reconnect (SetWatches2 with the last zxid seen) fire for changes made
 * while the client was away, and a client that stays away past its timeout learns on return that its
 * session expired.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ReconnectTest {
    private String root;
    private final Zk.Handles handles = new Zk.Handles();

    /** Returns the real server, or a closed port while cut off. */
    static final class SwitchableHost implements HostProvider {
        final InetSocketAddress real;
        volatile boolean cut;

        SwitchableHost(String hosts) {
            String first = hosts.split(",")[0];
            int i = first.lastIndexOf(':');
            real = new InetSocketAddress(first.substring(0, i), Integer.parseInt(first.substring(i + 1)));
        }

        @Override
        public int size() {
            return 1;
        }

        @Override
        public InetSocketAddress next(long spinDelay) {
            if (spinDelay > 0) {
                try {
                    Thread.sleep(Math.min(spinDelay, 200));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return cut ? new InetSocketAddress("127.0.0.1", 1) : real;
        }

        @Override
        public void onConnected() {}

        @Override
        public boolean updateServerList(Collection<InetSocketAddress> serverAddresses, InetSocketAddress current) {
            return false;
        }
    }

    @BeforeEach
    void setUp(TestInfo info) {
        root = Zk.uniqueRoot("re-", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        handles.close();
        Zk.deleteTrees(root);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Points the client at a dead port and makes the server drop its current connection. */
    private static void cutOff(ZooKeeper zk, SwitchableHost host, BlockingQueue<KeeperState> states)
            throws Exception {
        host.cut = true;
        zk.create("/oversized", new byte[2 * 1024 * 1024], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT,
                (rc, path, ctx, name) -> {}, null);
        assertEquals(KeeperState.Disconnected, states.poll(15, TimeUnit.SECONDS));
    }

    @Test
    void watchesResentOnReconnectFireForChangesMadeWhileAway() throws Exception {
        ZooKeeper other = handles.connect();
        other.create(root, b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.create(root + "/data", b("1"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.create(root + "/gone", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.create(root + "/kids", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.create(root + "/tree", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.create(root + "/same", b("s"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);

        SwitchableHost host = new SwitchableHost(Zk.hosts());
        BlockingQueue<KeeperState> states = new LinkedBlockingQueue<>();
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(Zk.hosts(), 20000, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState());
            }
        }, false, host);
        handles.track(zk);
        assertEquals(KeeperState.SyncConnected, states.poll(15, TimeUnit.SECONDS));
        long session = zk.getSessionId();
        // State changes (Disconnected, SyncConnected) also reach every registered watcher: skip those.
        Watcher w = e -> {
            if (e.getType() != Watcher.Event.EventType.None) {
                events.add(e.getType() + " " + e.getPath());
            }
        };
        zk.getData(root + "/data", w, null);
        zk.exists(root + "/born", w);
        zk.exists(root + "/gone", w);
        zk.getChildren(root + "/kids", w);
        zk.getData(root + "/same", w, null);
        zk.addWatch(root + "/tree", w, AddWatchMode.PERSISTENT_RECURSIVE);

        cutOff(zk, host, states);
        other.setData(root + "/data", b("2"), -1);
        other.create(root + "/born", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.delete(root + "/gone", -1);
        other.create(root + "/kids/k", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        other.create(root + "/tree/t", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        assertNull(events.poll(300, TimeUnit.MILLISECONDS), "nothing is delivered while away");

        host.cut = false;
        assertEquals(KeeperState.SyncConnected, states.poll(20, TimeUnit.SECONDS), "reconnects in time");
        assertEquals(session, zk.getSessionId(), "same session");
        Set<String> got = new HashSet<>();
        for (int i = 0; i < 4; i++) {
            String e = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "events so far " + got);
            got.add(e);
        }
        // The server compares each re-sent watch with the client's last zxid and fires the ones whose node
        // changed meanwhile. Persistent watches are only re-registered: what happened in between is lost.
        assertEquals(Set.of("NodeDataChanged " + root + "/data", "NodeCreated " + root + "/born",
                "NodeDeleted " + root + "/gone", "NodeChildrenChanged " + root + "/kids"), got);
        assertNull(events.poll(500, TimeUnit.MILLISECONDS), "unchanged nodes fire nothing");

        // The untouched one-shot watch and the persistent watch are still armed.
        other.setData(root + "/same", b("t"), -1);
        assertEquals("NodeDataChanged " + root + "/same", events.poll(10, TimeUnit.SECONDS));
        other.setData(root + "/tree/t", b("x"), -1);
        assertEquals("NodeDataChanged " + root + "/tree/t", events.poll(10, TimeUnit.SECONDS));
    }

    @Test
    void clientAwayPastItsTimeoutIsToldItsSessionExpired() throws Exception {
        ZooKeeper other = handles.connect();
        other.create(root, b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        SwitchableHost host = new SwitchableHost(Zk.hosts());
        BlockingQueue<KeeperState> states = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(Zk.hosts(), 4000, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                states.add(e.getState());
            }
        }, false, host);
        handles.track(zk);
        assertEquals(KeeperState.SyncConnected, states.poll(15, TimeUnit.SECONDS));
        zk.create(root + "/eph", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        BlockingQueue<String> deleted = new LinkedBlockingQueue<>();
        other.exists(root + "/eph", e -> deleted.add(e.getType() + " " + e.getPath()));

        cutOff(zk, host, states);
        assertEquals("NodeDeleted " + root + "/eph", deleted.poll(20, TimeUnit.SECONDS),
                "the server expires the silent session and deletes its ephemeral");
        Thread.sleep(500);
        host.cut = false;
        // The client's own timer may declare expiry first only if it hears from the server; here it must
        // hear it from the server on reconnect.
        KeeperState s;
        do {
            s = states.poll(20, TimeUnit.SECONDS);
            assertNotNull(s, "no Expired event");
        } while (s == KeeperState.Disconnected);
        assertEquals(KeeperState.Expired, s);
        assertEquals(ZooKeeper.States.CLOSED, zk.getState());
        try {
            zk.exists(root, false);
            throw new AssertionError("an expired handle must refuse requests");
        } catch (KeeperException.SessionExpiredException expected) {
            assertEquals(KeeperException.Code.SESSIONEXPIRED, expected.code());
        }
    }
}
