package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/** Which watch events a write fires, and in what order, seen from a second session. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WatchEventsTest {
    private String root;
    private final Zk.Handles handles = new Zk.Handles();
    private final BlockingQueue<String> events = new LinkedBlockingQueue<>();
    private final Watcher w = e -> {
        if (e.getType() != Watcher.Event.EventType.None) {
            events.add(e.getType() + " " + e.getPath().substring(root.length()));
        }
    };

    @BeforeEach
    void setUp(TestInfo info) {
        root = Zk.uniqueRoot("w-", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        handles.close();
        Zk.deleteTrees(root);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private void mk(ZooKeeper zk, String rel, CreateMode mode) throws Exception {
        zk.create(root + rel, b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, mode);
    }

    private List<String> drain(int n) throws InterruptedException {
        List<String> got = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String e = events.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "expected " + n + " events, got " + got);
            got.add(e);
        }
        assertNull(events.poll(300, TimeUnit.MILLISECONDS), "no extra events after " + got);
        return got;
    }

    @Test
    void deletingANodeFiresItsOwnWatchesBeforeItsParentsChildWatch() throws Exception {
        ZooKeeper watcher = handles.connect();
        ZooKeeper writer = handles.connect();
        mk(writer, "", CreateMode.PERSISTENT);
        mk(writer, "/p", CreateMode.PERSISTENT);
        watcher.getChildren(root + "/p", w);
        watcher.getChildren(root, e -> events.add("parent " + e.getType()));
        writer.delete(root + "/p", -1);
        assertEquals(List.of("NodeDeleted /p", "parent NodeChildrenChanged"), drain(2));
    }

    @Test
    void childWatchIgnoresDataChangesAndDataWatchFiresOnSameValue() throws Exception {
        ZooKeeper watcher = handles.connect();
        ZooKeeper writer = handles.connect();
        mk(writer, "", CreateMode.PERSISTENT);
        watcher.getChildren(root, w);
        writer.setData(root, b("x"), -1);
        assertNull(events.poll(300, TimeUnit.MILLISECONDS), "a child watch does not fire on setData");
        mk(writer, "/c", CreateMode.PERSISTENT);
        assertEquals(List.of("NodeChildrenChanged "), drain(1));
        watcher.getData(root + "/c", w, null);
        assertThrows(KeeperException.BadVersionException.class, () -> writer.setData(root + "/c", b(""), 9));
        assertNull(events.poll(300, TimeUnit.MILLISECONDS), "a failed setData fires nothing");
        writer.setData(root + "/c", b(""), -1);
        assertEquals(List.of("NodeDataChanged /c"), drain(1), "setting the same bytes still fires");
    }

    @Test
    void failedMultiFiresNothingAndACommittedOneFiresInOpOrder() throws Exception {
        ZooKeeper watcher = handles.connect();
        ZooKeeper writer = handles.connect();
        mk(writer, "", CreateMode.PERSISTENT);
        mk(writer, "/x", CreateMode.PERSISTENT);
        watcher.exists(root + "/y", w);
        watcher.getData(root + "/x", w, null);
        assertThrows(KeeperException.NoNodeException.class, () -> writer.multi(List.of(
                Op.create(root + "/y", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT),
                Op.setData(root + "/none", b(""), -1))));
        assertNull(events.poll(300, TimeUnit.MILLISECONDS), "a failed multi fires nothing");
        writer.multi(List.of(Op.setData(root + "/x", b("1"), -1),
                Op.create(root + "/y", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
        assertEquals(List.of("NodeDataChanged /x", "NodeCreated /y"), drain(2));
    }

    @Test
    void sessionCloseFiresEphemeralDeletionsThenTheParentsChildWatch() throws Exception {
        ZooKeeper watcher = handles.connect();
        ZooKeeper owner = handles.connect();
        mk(owner, "", CreateMode.PERSISTENT);
        mk(owner, "/e", CreateMode.EPHEMERAL);
        watcher.exists(root + "/e", w);
        watcher.getChildren(root, w);
        owner.close();
        List<String> got = drain(2);
        assertEquals(List.of("NodeDeleted /e", "NodeChildrenChanged "), got);
    }

    @Test
    void persistentRecursiveWatchSeesEveryNodeOfAMultiInOrder() throws Exception {
        ZooKeeper watcher = handles.connect();
        ZooKeeper writer = handles.connect();
        mk(writer, "", CreateMode.PERSISTENT);
        watcher.addWatch(root, w, AddWatchMode.PERSISTENT_RECURSIVE);
        writer.multi(List.of(
                Op.create(root + "/a", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT),
                Op.create(root + "/a/b", b(""), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT),
                Op.setData(root + "/a", b("v"), -1),
                Op.delete(root + "/a/b", -1)));
        // A recursive watch reports no NodeChildrenChanged, only the nodes' own events.
        assertEquals(List.of("NodeCreated /a", "NodeCreated /a/b", "NodeDataChanged /a", "NodeDeleted /a/b"),
                drain(4));
        assertTrue(events.isEmpty());
    }
}
