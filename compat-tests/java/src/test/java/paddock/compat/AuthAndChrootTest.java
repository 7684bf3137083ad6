package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * Authentication (digest, the super digest both servers are started with by run.sh: super:test, an
 * unknown scheme) and chrooted connect strings.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AuthAndChrootTest {
    private String root;
    private final Zk.Handles handles = new Zk.Handles();

    @BeforeEach
    void setUp(TestInfo info) {
        root = Zk.uniqueRoot("auth-", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        handles.close();
        try (CuratorFramework c = Zk.client()) {
            c.getZookeeperClient().getZooKeeper().addAuthInfo("digest", b("super:test"));
            c.delete().quietly().deletingChildrenIfNeeded().forPath(root);
        }
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private ZooKeeper connect(String hosts, BlockingQueue<KeeperState> states) throws Exception {
        BlockingQueue<KeeperState> st = states != null ? states : new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(hosts, 10000, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                st.add(e.getState());
            }
        });
        handles.track(zk);
        assertEquals(KeeperState.SyncConnected, st.poll(15, TimeUnit.SECONDS));
        return zk;
    }

    @Test
    void digestAclAdmitsItsUserAndTheSuperUserOnly() throws Exception {
        ZooKeeper alice = connect(Zk.hosts(), null);
        alice.addAuthInfo("digest", b("alice:pw"));
        String hash = DigestAuthenticationProvider.generateDigest("alice:pw");
        // A mutable list: the client's ACL validation calls contains(null), which List.of rejects.
        List<ACL> acl = new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id("digest", hash))));
        alice.create(root, b("top"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        alice.create(root + "/secret", b("s"), acl, CreateMode.PERSISTENT);
        assertArrayEquals(b("s"), alice.getData(root + "/secret", false, null));

        ZooKeeper mallory = connect(Zk.hosts(), null);
        mallory.addAuthInfo("digest", b("alice:wrong"));
        KeeperException.NoAuthException no = assertThrows(KeeperException.NoAuthException.class,
                () -> mallory.getData(root + "/secret", false, null));
        assertEquals(root + "/secret", no.getPath());
        // ZooKeeper 3.9 checks READ on exists of an existing node too.
        assertThrows(KeeperException.NoAuthException.class, () -> mallory.exists(root + "/secret", false));
        assertThrows(KeeperException.NoAuthException.class, () -> mallory.delete(root + "/secret/x", -1));

        ZooKeeper admin = connect(Zk.hosts(), null);
        admin.addAuthInfo("digest", b("super:test"));
        assertArrayEquals(b("s"), admin.getData(root + "/secret", false, null), "super reads anything");
        Stat st = new Stat();
        List<ACL> seen = admin.getACL(root + "/secret", st);
        assertEquals(acl, seen, "super sees the unredacted digest");
        admin.setACL(root + "/secret", ZooDefs.Ids.READ_ACL_UNSAFE, st.getAversion());
        assertArrayEquals(b("s"), mallory.getData(root + "/secret", false, null));
        assertThrows(KeeperException.NoAuthException.class, () -> alice.setData(root + "/secret", b("x"), -1));
        admin.delete(root + "/secret", -1);
    }

    @Test
    void unknownAuthSchemeFailsTheSession() throws Exception {
        BlockingQueue<KeeperState> states = new LinkedBlockingQueue<>();
        ZooKeeper zk = connect(Zk.hosts(), states);
        zk.addAuthInfo("nosuchscheme", b("whatever"));
        assertEquals(KeeperState.AuthFailed, states.poll(10, TimeUnit.SECONDS));
        assertThrows(KeeperException.AuthFailedException.class, () -> zk.exists("/", false));
    }

    @Test
    void chrootedClientSeesPathsRelativeToItsRoot() throws Exception {
        ZooKeeper plain = connect(Zk.hosts(), null);
        plain.create(root, b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        ZooKeeper ch = connect(Zk.hosts() + root, null);
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        ch.exists("/a", e -> events.add(e.getType() + " " + e.getPath()));
        assertEquals("/a", ch.create("/a", b("x"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT));
        assertEquals("NodeCreated /a", events.poll(10, TimeUnit.SECONDS));
        assertEquals("/s-0000000001",
                ch.create("/s-", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL));
        assertArrayEquals(b("x"), plain.getData(root + "/a", false, null));
        assertEquals(List.of("a", "s-0000000001"), sorted(ch.getChildren("/", false)));
        ch.create("/e", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        // ZooKeeper 3.9 answers getEphemerals with server paths: the client does not strip the chroot.
        assertEquals(List.of(root + "/e"), ch.getEphemerals("/"));
        assertEquals(3, ch.getAllChildrenNumber("/"));
        ch.getData("/a", e -> events.add(e.getType() + " " + e.getPath()), null);
        plain.setData(root + "/a", b("y"), -1);
        assertEquals("NodeDataChanged /a", events.poll(10, TimeUnit.SECONDS));
        ch.close();
        assertNull(plain.exists(root + "/e", false));
    }

    private static List<String> sorted(List<String> l) {
        List<String> c = new ArrayList<>(l);
        c.sort(null);
        return c;
    }
}
