package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Curator 5.9 recipes against the server in ZK_HOSTS. Every test uses two or more independent clients
 * (separate sessions) under its own root, and asserts the exact outcome a recipe promises.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CuratorRecipesTest {
    private final Zk.Clients clients = new Zk.Clients();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private String root;

    @BeforeEach
    void setUp(org.junit.jupiter.api.TestInfo info) {
        root = Zk.uniqueRoot("", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        pool.shutdownNow();
        clients.close();
        Zk.deleteTrees(root);
    }

    @Test
    void mutexIsReentrantAndBlocksTheSecondClientUntilFullyReleased() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        InterProcessMutex ma = new InterProcessMutex(a, root + "/lock");
        InterProcessMutex mb = new InterProcessMutex(b, root + "/lock");
        // A Curator mutex is owned by a thread: every call on b's mutex goes through one thread.
        ExecutorService bThread = Executors.newSingleThreadExecutor();
        try {
            assertTrue(ma.acquire(5, TimeUnit.SECONDS));
            assertTrue(ma.acquire(5, TimeUnit.SECONDS), "re-entrant acquire by the holder");
            assertEquals(1, ma.getParticipantNodes().size(), "re-entry must not add a lock node");
            assertFalse(bThread.submit(() -> mb.acquire(300, TimeUnit.MILLISECONDS)).get(),
                    "second client must not get a held lock");

            ma.release();
            assertTrue(ma.isAcquiredInThisProcess(), "one release of two acquires keeps the lock");
            assertFalse(bThread.submit(() -> mb.acquire(300, TimeUnit.MILLISECONDS)).get());

            Future<Boolean> waiter = bThread.submit(() -> mb.acquire(20, TimeUnit.SECONDS));
            Thread.sleep(300);
            assertFalse(waiter.isDone(), "waiter must block while the lock is held");
            ma.release();
            assertTrue(waiter.get(20, TimeUnit.SECONDS), "waiter gets the lock after the final release");
            assertFalse(ma.isAcquiredInThisProcess());
            assertEquals(1, mb.getParticipantNodes().size());
            bThread.submit(() -> {
                mb.release();
                return null;
            }).get();
            assertEquals(0, a.getChildren().forPath(root + "/lock").size(), "released lock leaves no nodes");
        } finally {
            bThread.shutdownNow();
        }
    }

    @Test
    void mutexPassesToTheWaiterWhenTheHolderSessionCloses() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        InterProcessMutex ma = new InterProcessMutex(a, root + "/lock");
        InterProcessMutex mb = new InterProcessMutex(b, root + "/lock");
        ExecutorService bThread = Executors.newSingleThreadExecutor();
        try {
            assertTrue(ma.acquire(5, TimeUnit.SECONDS));
            Future<Boolean> waiter = bThread.submit(() -> mb.acquire(30, TimeUnit.SECONDS));
            Thread.sleep(500);
            assertFalse(waiter.isDone());
            // Closing the client closes the session: its ephemeral lock node goes and the waiter's watch fires.
            a.close();
            assertTrue(waiter.get(20, TimeUnit.SECONDS));
            assertTrue(mb.isAcquiredInThisProcess());
            assertEquals(1, b.getChildren().forPath(root + "/lock").size(), "only the new holder's node is left");
            bThread.submit(() -> {
                mb.release();
                return null;
            }).get();
        } finally {
            bThread.shutdownNow();
        }
    }

    @Test
    void leaderLatchNeverHasTwoLeadersAndFailsOverWhenTheLeaderClientCloses() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        LeaderLatch la = new LeaderLatch(a, root + "/latch", "a");
        LeaderLatch lb = new LeaderLatch(b, root + "/latch", "b");
        try {
            la.start();
            assertTrue(la.await(10, TimeUnit.SECONDS), "sole participant leads");
            lb.start();
            assertTrue(Zk.await(Duration.ofSeconds(10), () -> {
                try {
                    return lb.getParticipants().size() == 2;
                } catch (Exception e) {
                    return false;
                }
            }));
            for (int i = 0; i < 20; i++) {
                assertTrue(la.hasLeadership() ^ lb.hasLeadership(), "exactly one leader");
                Thread.sleep(50);
            }
            assertTrue(la.hasLeadership(), "first participant keeps leadership");
            assertEquals("a", lb.getLeader().getId());

            a.close(); // session close deletes a's latch node
            assertTrue(lb.await(20, TimeUnit.SECONDS), "the other client becomes leader");
            assertTrue(lb.hasLeadership());
            assertEquals("b", lb.getLeader().getId());
            assertEquals(1, lb.getParticipants().size());
        } finally {
            CloseableUtils.closeQuietly(lb);
        }
    }

    @Test
    void sharedCountCompareAndSetWithAStaleVersionFails() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        SharedCount ca = new SharedCount(a, root + "/count", 0);
        SharedCount cb = new SharedCount(b, root + "/count", 0);
        BlockingQueue<Integer> seenByA = new LinkedBlockingQueue<>();
        try {
            ca.start();
            cb.start();
            ca.addListener(new org.apache.curator.framework.recipes.shared.SharedCountListener() {
                @Override
                public void countHasChanged(
                        org.apache.curator.framework.recipes.shared.SharedCountReader r, int newCount) {
                    seenByA.add(newCount);
                }

                @Override
                public void stateChanged(CuratorFramework client, ConnectionState newState) {}
            });
            VersionedValue<Integer> stale = ca.getVersionedValue();
            assertEquals(0, stale.getValue());
            assertEquals(0, stale.getVersion());

            assertTrue(cb.trySetCount(cb.getVersionedValue(), 5), "CAS with the current version succeeds");
            assertFalse(ca.trySetCount(stale, 7), "CAS with a stale version fails");
            assertEquals(5, seenByA.poll(10, TimeUnit.SECONDS), "a's watch reports b's value");
            assertEquals(5, ca.getCount());

            Stat stat = new Stat();
            byte[] raw = a.getData().storingStatIn(stat).forPath(root + "/count");
            assertArrayEquals(ByteBuffer.allocate(4).putInt(5).array(), raw, "value stored as a 4-byte int");
            assertEquals(1, stat.getVersion());

            assertTrue(ca.trySetCount(ca.getVersionedValue(), 7), "CAS with the refreshed version succeeds");
            assertTrue(Zk.await(Duration.ofSeconds(10), () -> cb.getCount() == 7));
        } finally {
            CloseableUtils.closeQuietly(ca);
            CloseableUtils.closeQuietly(cb);
        }
    }

    @Test
    void distributedBarrierHoldsWaitersUntilRemoved() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        CuratorFramework c = clients.open();
        DistributedBarrier owner = new DistributedBarrier(a, root + "/barrier");
        owner.setBarrier();
        Future<Boolean> w1 = pool.submit(() -> new DistributedBarrier(b, root + "/barrier").waitOnBarrier(30, TimeUnit.SECONDS));
        Future<Boolean> w2 = pool.submit(() -> new DistributedBarrier(c, root + "/barrier").waitOnBarrier(30, TimeUnit.SECONDS));
        Thread.sleep(500);
        assertFalse(w1.isDone());
        assertFalse(w2.isDone());
        owner.removeBarrier();
        assertTrue(w1.get(20, TimeUnit.SECONDS));
        assertTrue(w2.get(20, TimeUnit.SECONDS));
        assertTrue(new DistributedBarrier(b, root + "/never").waitOnBarrier(1, TimeUnit.SECONDS),
                "a barrier that was never set does not block");
    }

    @Test
    void curatorCacheSeesCreateChangeDeleteOfAGrandchild() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        a.create().forPath(root);
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        AtomicBoolean initialized = new AtomicBoolean();
        String grandchild = root + "/child/grand";
        try (CuratorCache cache = CuratorCache.build(a, root)) {
            cache.listenable().addListener(CuratorCacheListener.builder()
                    .forCreates(n -> {
                        if (n.getPath().equals(grandchild)) {
                            events.add("CREATE " + new String(n.getData(), StandardCharsets.UTF_8));
                        }
                    })
                    .forChanges((o, n) -> {
                        if (n.getPath().equals(grandchild)) {
                            events.add("CHANGE " + new String(o.getData(), StandardCharsets.UTF_8) + "->"
                                    + new String(n.getData(), StandardCharsets.UTF_8));
                        }
                    })
                    .forDeletes(o -> {
                        if (o.getPath().equals(grandchild)) {
                            events.add("DELETE " + new String(o.getData(), StandardCharsets.UTF_8));
                        }
                    })
                    .forInitialized(() -> initialized.set(true))
                    .build());
            cache.start();
            assertTrue(Zk.await(Duration.ofSeconds(10), initialized::get));

            // One mutation at a time: a create immediately followed by a delete may legitimately collapse.
            b.create().forPath(root + "/child");
            b.create().forPath(grandchild, "one".getBytes(StandardCharsets.UTF_8));
            assertEquals("CREATE one", events.poll(10, TimeUnit.SECONDS));
            b.setData().forPath(grandchild, "two".getBytes(StandardCharsets.UTF_8));
            assertEquals("CHANGE one->two", events.poll(10, TimeUnit.SECONDS));
            b.delete().forPath(grandchild);
            assertEquals("DELETE two", events.poll(10, TimeUnit.SECONDS));
            assertNull(events.poll(500, TimeUnit.MILLISECONDS), "no further events: " + events);
            assertTrue(cache.get(grandchild).isEmpty());
            assertTrue(cache.get(root + "/child").isPresent());
        }
    }

    @Test
    void persistentNodeIsRecreatedAfterAnotherClientDeletesIt() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        String path = root + "/member";
        byte[] data = "payload".getBytes(StandardCharsets.UTF_8);
        a.create().forPath(root);
        try (PersistentNode node = new PersistentNode(a, CreateMode.EPHEMERAL, false, path, data)) {
            node.start();
            assertTrue(node.waitForInitialCreate(10, TimeUnit.SECONDS));
            Stat first = b.checkExists().forPath(path);
            assertNotNull(first);
            assertEquals(a.getZookeeperClient().getZooKeeper().getSessionId(), first.getEphemeralOwner());

            b.delete().forPath(path);
            AtomicInteger czxidChanges = new AtomicInteger();
            assertTrue(Zk.await(Duration.ofSeconds(15), () -> {
                try {
                    Stat s = b.checkExists().forPath(path);
                    if (s != null && s.getCzxid() != first.getCzxid()) {
                        czxidChanges.incrementAndGet();
                        return true;
                    }
                    return false;
                } catch (Exception e) {
                    return false;
                }
            }), "node re-created");
            assertArrayEquals(data, b.getData().forPath(path));
            assertEquals(a.getZookeeperClient().getZooKeeper().getSessionId(),
                    b.checkExists().forPath(path).getEphemeralOwner());
        }
        assertNull(b.checkExists().forPath(path), "closing the PersistentNode removes it");
    }

    @Test
    void distributedQueueDeliversInFifoOrderToAnotherClient() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        QueueSerializer<String> ser = new QueueSerializer<>() {
            @Override
            public byte[] serialize(String item) {
                return item.getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public String deserialize(byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8);
            }
        };
        BlockingQueue<String> got = new ArrayBlockingQueue<>(100);
        QueueConsumer<String> consumer = new QueueConsumer<>() {
            @Override
            public void consumeMessage(String message) {
                got.add(message);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {}
        };
        DistributedQueue<String> producer = QueueBuilder.builder(a, null, ser, root + "/queue").buildQueue();
        DistributedQueue<String> receiver = QueueBuilder.builder(b, consumer, ser, root + "/queue").buildQueue();
        try {
            producer.start();
            for (int i = 0; i < 5; i++) {
                producer.put("m" + i);
            }
            receiver.start();
            List<String> order = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                String m = got.poll(15, TimeUnit.SECONDS);
                assertNotNull(m, "message " + i + " delivered; got so far " + order);
                order.add(m);
            }
            assertEquals(List.of("m0", "m1", "m2", "m3", "m4"), order);
            assertNull(got.poll(300, TimeUnit.MILLISECONDS));
            assertTrue(Zk.await(Duration.ofSeconds(10), () -> {
                try {
                    return a.getChildren().forPath(root + "/queue").isEmpty();
                } catch (Exception e) {
                    return false;
                }
            }), "consumed items are deleted");
        } finally {
            CloseableUtils.closeQuietly(receiver);
            CloseableUtils.closeQuietly(producer);
        }
    }

    @Test
    void ttlNodeIsRemovedAfterItsTtlExpires() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        String path = root + "/ttl";
        a.create().withTtl(500).creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT_WITH_TTL)
                .forPath(path, "t".getBytes(StandardCharsets.UTF_8));
        Stat s = b.checkExists().forPath(path);
        assertNotNull(s);
        // The server keeps the ttl in the stored ephemeralOwner, but clients see 0 (DataNode.copyStat).
        assertEquals(0L, s.getEphemeralOwner());
        assertEquals(1, s.getDataLength());
        a.close(); // a TTL node is not an ephemeral: it outlives its creator's session
        assertNotNull(b.checkExists().forPath(path));
        assertTrue(Zk.await(Duration.ofSeconds(30), () -> {
            try {
                return b.checkExists().forPath(path) == null;
            } catch (Exception e) {
                return false;
            }
        }), "the TTL node is removed once its ttl has passed");
    }

    @Test
    void containerParentsAreCreatedAsContainersAndRemovedWhenEmptied() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        String parent = root + "/box";
        a.create().creatingParentContainersIfNeeded().forPath(parent + "/item", "x".getBytes(StandardCharsets.UTF_8));
        Stat ps = b.checkExists().forPath(parent);
        assertNotNull(ps);
        // Stored as ephemeralOwner 0x8000000000000000, but clients see 0 (DataNode.copyStat); that it is
        // a container shows when the server removes it once emptied, below.
        assertEquals(0L, ps.getEphemeralOwner());
        assertEquals(1, ps.getNumChildren());
        assertEquals(0L, b.checkExists().forPath(parent + "/item").getEphemeralOwner(), "leaf is persistent");

        b.delete().forPath(parent + "/item");
        assertTrue(Zk.await(Duration.ofSeconds(30), () -> {
            try {
                return b.checkExists().forPath(parent) == null;
            } catch (Exception e) {
                return false;
            }
        }), "an emptied container is removed by the server");
    }

    @Test
    void standaloneConfigIsEmptyAndTheEnsembleTrackerKeepsTheConnectString() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        Stat stat = new Stat();
        byte[] cfg = a.getConfig().storingStatIn(stat).forEnsemble();
        assertEquals("", new String(cfg, StandardCharsets.UTF_8), "standalone /zookeeper/config is empty");
        assertEquals(0, stat.getDataLength());
        assertArrayEquals(cfg, b.getData().forPath("/zookeeper/config"));
        // With an empty config the tracker must not rewrite the connect string; the client keeps working.
        b.create().creatingParentsIfNeeded().forPath(root + "/after-config");
        assertEquals(Zk.hosts(), a.getZookeeperClient().getCurrentConnectionString());
        assertNotNull(a.checkExists().forPath(root + "/after-config"));
    }
}
