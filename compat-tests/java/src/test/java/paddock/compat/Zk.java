package paddock.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.TestInfo;

/**
 * Shared plumbing: where the server under test is, Curator clients built the way applications build them
 * (ensemble tracker left on, so a non-empty /zookeeper/config would redirect them), and a polling wait.
 */
final class Zk {
    private Zk() {}

    /** The connect string: system property ZK_HOSTS (set by surefire from the environment), then the env. */
    static String hosts() {
        String h = System.getProperty("ZK_HOSTS");
        // An unset ${env.ZK_HOSTS} reaches us literally from the pom.
        if (h == null || h.isBlank() || h.startsWith("${")) {
            h = System.getenv("ZK_HOSTS");
        }
        if (h == null || h.isBlank()) {
            throw new IllegalStateException("set ZK_HOSTS (host:port of the server under test)");
        }
        return h;
    }

    /** A started, connected Curator client with a short session so that expiry-driven tests stay quick. */
    static CuratorFramework client() throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(hosts())
                .sessionTimeoutMs(6000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
            CloseableUtils.closeQuietly(c);
            throw new IllegalStateException("no connection to " + hosts());
        }
        return c;
    }

    /** A root path no other test or run uses. */
    static String uniqueRoot(String test) {
        return "/java-" + test + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** A root path for one test method: the prefix, the method's name and a random suffix. */
    static String uniqueRoot(String prefix, TestInfo info) {
        return uniqueRoot(prefix + info.getTestMethod().orElseThrow().getName());
    }

    /** Deletes each path and everything below it, through a fresh client; a missing path is fine. */
    static void deleteTrees(String... paths) throws Exception {
        try (CuratorFramework c = client()) {
            for (String path : paths) {
                c.delete().quietly().deletingChildrenIfNeeded().forPath(path);
            }
        }
    }

    /** Polls until the condition holds; false on timeout. */
    static boolean await(Duration timeout, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (cond.getAsBoolean()) {
                return true;
            }
            Thread.sleep(50);
        }
        return cond.getAsBoolean();
    }

    /** Closes clients in reverse order of creation, ignoring the ones a test already closed. */
    static final class Clients implements AutoCloseable {
        private final List<CuratorFramework> all = new ArrayList<>();

        CuratorFramework open() throws InterruptedException {
            CuratorFramework c = client();
            all.add(c);
            return c;
        }

        @Override
        public void close() {
            for (int i = all.size() - 1; i >= 0; i--) {
                CloseableUtils.closeQuietly(all.get(i));
            }
        }
    }

    /** The bare ZooKeeper handles a test opened, closed after it: the twin of Clients. */
    static final class Handles implements AutoCloseable {
        private final List<ZooKeeper> all = new ArrayList<>();

        ZooKeeper track(ZooKeeper zk) {
            all.add(zk);
            return zk;
        }

        /** A handle with a 10 s session, returned once it is connected. */
        ZooKeeper connect() throws Exception {
            BlockingQueue<KeeperState> st = new LinkedBlockingQueue<>();
            ZooKeeper zk = track(new ZooKeeper(hosts(), 10000, e -> st.add(e.getState())));
            Assertions.assertEquals(KeeperState.SyncConnected, st.poll(15, TimeUnit.SECONDS));
            return zk;
        }

        @Override
        public void close() throws InterruptedException {
            for (ZooKeeper zk : all) {
                zk.close();
            }
        }
    }
}
