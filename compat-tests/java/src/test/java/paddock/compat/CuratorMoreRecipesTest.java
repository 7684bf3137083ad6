package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/** More Curator 5.9 recipes, each with two or more sessions under a unique root. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CuratorMoreRecipesTest {
    private final Zk.Clients clients = new Zk.Clients();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private String root;

    @BeforeEach
    void setUp(TestInfo info) {
        root = Zk.uniqueRoot("", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        pool.shutdownNow();
        clients.close();
        Zk.deleteTrees(root);
    }

    @Test
    void semaphoreWithTwoLeasesRefusesAThirdUntilOneIsReturned() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        CuratorFramework c = clients.open();
        InterProcessSemaphoreV2 sa = new InterProcessSemaphoreV2(a, root + "/sem", 2);
        InterProcessSemaphoreV2 sb = new InterProcessSemaphoreV2(b, root + "/sem", 2);
        InterProcessSemaphoreV2 sc = new InterProcessSemaphoreV2(c, root + "/sem", 2);
        Lease la = sa.acquire(5, TimeUnit.SECONDS);
        Lease lb = sb.acquire(5, TimeUnit.SECONDS);
        assertNotNull(la);
        assertNotNull(lb);
        assertNull(sc.acquire(500, TimeUnit.MILLISECONDS), "third lease refused");
        Future<Lease> waiter = pool.submit(() -> sc.acquire(20, TimeUnit.SECONDS));
        Thread.sleep(300);
        assertFalse(waiter.isDone());
        sa.returnLease(la);
        Lease lc = waiter.get(20, TimeUnit.SECONDS);
        assertNotNull(lc, "a returned lease goes to the waiter");
        assertEquals(2, sc.getParticipantNodes().size());
        sb.returnLease(lb);
        sc.returnLease(lc);
    }

    @Test
    void leaderSelectorGivesLeadershipToOneClientAtATime() throws Exception {
        List<CuratorFramework> cs = List.of(clients.open(), clients.open(), clients.open());
        AtomicInteger leaders = new AtomicInteger();
        AtomicInteger maxLeaders = new AtomicInteger();
        AtomicInteger turns = new AtomicInteger();
        List<LeaderSelector> selectors = new ArrayList<>();
        try {
            for (CuratorFramework c : cs) {
                LeaderSelector s = new LeaderSelector(c, root + "/sel", new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework client) throws Exception {
                        int now = leaders.incrementAndGet();
                        maxLeaders.accumulateAndGet(now, Math::max);
                        Thread.sleep(200);
                        leaders.decrementAndGet();
                        turns.incrementAndGet();
                    }
                });
                s.autoRequeue();
                selectors.add(s);
                s.start();
            }
            assertTrue(Zk.await(Duration.ofSeconds(30), () -> turns.get() >= 6), "turns: " + turns.get());
            assertEquals(1, maxLeaders.get(), "never two leaders at once");
        } finally {
            selectors.forEach(CloseableUtils::closeQuietly);
        }
    }

    @Test
    void doubleBarrierReleasesBothMembersOnEnterAndLeave() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        DistributedDoubleBarrier da = new DistributedDoubleBarrier(a, root + "/dbl", 2);
        DistributedDoubleBarrier db = new DistributedDoubleBarrier(b, root + "/dbl", 2);
        Future<Boolean> enterA = pool.submit(() -> da.enter(20, TimeUnit.SECONDS));
        Thread.sleep(500);
        assertFalse(enterA.isDone(), "one member alone waits");
        assertTrue(db.enter(20, TimeUnit.SECONDS));
        assertTrue(enterA.get(20, TimeUnit.SECONDS));
        Future<Boolean> leaveA = pool.submit(() -> da.leave(20, TimeUnit.SECONDS));
        assertTrue(db.leave(20, TimeUnit.SECONDS));
        assertTrue(leaveA.get(20, TimeUnit.SECONDS));
    }

    @Test
    void readWriteLockSharesReadersAndExcludesWriters() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        InterProcessReadWriteLock la = new InterProcessReadWriteLock(a, root + "/rw");
        InterProcessReadWriteLock lb = new InterProcessReadWriteLock(b, root + "/rw");
        ExecutorService bThread = Executors.newSingleThreadExecutor();
        try {
            assertTrue(la.readLock().acquire(5, TimeUnit.SECONDS));
            assertTrue(bThread.submit(() -> lb.readLock().acquire(5, TimeUnit.SECONDS)).get(), "readers share");
            assertFalse(bThread.submit(() -> lb.writeLock().acquire(300, TimeUnit.MILLISECONDS)).get(),
                    "writer waits for readers");
            bThread.submit(() -> {
                lb.readLock().release();
                return null;
            }).get();
            la.readLock().release();
            assertTrue(bThread.submit(() -> lb.writeLock().acquire(5, TimeUnit.SECONDS)).get());
            assertFalse(la.readLock().acquire(300, TimeUnit.MILLISECONDS), "reader waits for the writer");
            bThread.submit(() -> {
                lb.writeLock().release();
                return null;
            }).get();
            assertTrue(la.readLock().acquire(5, TimeUnit.SECONDS));
            la.readLock().release();
        } finally {
            bThread.shutdownNow();
        }
    }

    @Test
    void distributedAtomicLongIncrementsFromManyClientsWithoutLoss() throws Exception {
        List<CuratorFramework> cs = List.of(clients.open(), clients.open(), clients.open());
        List<Future<Integer>> fs = new ArrayList<>();
        for (CuratorFramework c : cs) {
            fs.add(pool.submit(() -> {
                DistributedAtomicLong n = new DistributedAtomicLong(c, root + "/n", new RetryNTimes(1000, 1));
                int ok = 0;
                for (int i = 0; i < 20; i++) {
                    AtomicValue<Long> v = n.increment();
                    if (v.succeeded()) {
                        ok++;
                    }
                }
                return ok;
            }));
        }
        int total = 0;
        for (Future<Integer> f : fs) {
            total += f.get(60, TimeUnit.SECONDS);
        }
        assertEquals(60, total);
        AtomicValue<Long> v = new DistributedAtomicLong(cs.get(0), root + "/n", new RetryNTimes(3, 10)).get();
        assertTrue(v.succeeded());
        assertEquals(60L, v.postValue());
        Stat s = cs.get(1).checkExists().forPath(root + "/n");
        assertEquals(59, s.getVersion(), "the first increment creates the node, each later one sets it once");
    }

    @Test
    void groupMembershipFollowsSessions() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        try (GroupMember ga = new GroupMember(a, root + "/group", "a", "A".getBytes(StandardCharsets.UTF_8));
                GroupMember gb = new GroupMember(b, root + "/group", "b", "B".getBytes(StandardCharsets.UTF_8))) {
            ga.start();
            gb.start();
            assertTrue(Zk.await(Duration.ofSeconds(10), () -> ga.getCurrentMembers().size() == 2
                    && gb.getCurrentMembers().size() == 2));
            Map<String, byte[]> m = ga.getCurrentMembers();
            assertArrayEquals("B".getBytes(StandardCharsets.UTF_8), m.get("b"));
            a.close();
            assertTrue(Zk.await(Duration.ofSeconds(15), () -> gb.getCurrentMembers().keySet().equals(java.util.Set.of("b"))),
                    "a's member node leaves with its session: " + gb.getCurrentMembers().keySet());
        }
    }

    @Test
    void transactionCommitsAllOrNothingWithPerOpResults() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        a.create().forPath(root);
        CuratorOp c1 = a.transactionOp().create().forPath(root + "/x", "x".getBytes(StandardCharsets.UTF_8));
        CuratorOp c2 = a.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(root + "/s-");
        CuratorOp c3 = a.transactionOp().setData().forPath(root + "/x", "y".getBytes(StandardCharsets.UTF_8));
        Collection<CuratorTransactionResult> res = a.transaction().forOperations(c1, c2, c3);
        List<String> got = res.stream().map(r -> r.getType() + " " + r.getForPath() + " " + r.getResultPath()
                + " " + r.getError()).toList();
        assertEquals(List.of(
                OperationType.CREATE + " " + root + "/x " + root + "/x 0",
                OperationType.CREATE + " " + root + "/s- " + root + "/s-0000000001 0",
                OperationType.SET_DATA + " " + root + "/x null 0"), got);
        assertArrayEquals("y".getBytes(StandardCharsets.UTF_8), b.getData().forPath(root + "/x"));

        CuratorOp d1 = b.transactionOp().delete().forPath(root + "/x");
        CuratorOp d2 = b.transactionOp().check().withVersion(5).forPath(root + "/s-0000000001");
        try {
            b.transaction().forOperations(d1, d2);
            throw new AssertionError("stale check must fail the transaction");
        } catch (KeeperException.BadVersionException expected) {
            List<Integer> codes = expected.getResults().stream()
                    .map(r -> ((org.apache.zookeeper.OpResult.ErrorResult) r).getErr()).toList();
            assertEquals(List.of(0, KeeperException.Code.BADVERSION.intValue()), codes);
        }
        assertNotNull(a.checkExists().forPath(root + "/x"), "failed transaction deleted nothing");
    }

    @Test
    void persistentTtlNodeStaysWhileTouchedAndExpiresAfterClose() throws Exception {
        CuratorFramework a = clients.open();
        CuratorFramework b = clients.open();
        String path = root + "/ttl";
        try (PersistentTtlNode node = new PersistentTtlNode(a, path, 1000, "live".getBytes(StandardCharsets.UTF_8))) {
            node.start();
            assertTrue(node.waitForInitialCreate(10, TimeUnit.SECONDS));
            Thread.sleep(3500); // several ttl periods: the recipe's touch child keeps the container alive
            assertArrayEquals("live".getBytes(StandardCharsets.UTF_8), b.getData().forPath(path));
        }
        assertTrue(Zk.await(Duration.ofSeconds(30), () -> {
            try {
                return b.checkExists().forPath(path) == null;
            } catch (Exception e) {
                return false;
            }
        }), "container and its ttl child go once no longer touched");
    }
}
