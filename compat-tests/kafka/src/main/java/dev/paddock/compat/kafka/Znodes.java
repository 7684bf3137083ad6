package dev.paddock.compat.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;

/**
 * The checker's own view of the server: a plain ZooKeeper client session (the 3.8.4 client Kafka
 * bundles), connected without a chroot so that it can also see what lies outside Kafka's /kafka.
 */
final class Znodes implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A znode's data and stat, read together. */
    record Node(byte[] data, Stat stat) {
        String text() {
            return new String(data == null ? new byte[0] : data, StandardCharsets.UTF_8);
        }

        JsonNode json() {
            try {
                return JSON.readTree(text());
            } catch (IOException e) {
                throw new Checks.Fail("not JSON: '" + text() + "'");
            }
        }
    }

    private final ZooKeeper zk;

    private Znodes(ZooKeeper zk) {
        this.zk = zk;
    }

    /**
     * Connects, retrying for a while: Apache ZooKeeper answers ruok slightly before it accepts sessions.
     */
    static Znodes connect(String hosts) throws Exception {
        return connect(hosts, new ZKClientConfig());
    }

    /**
     * A session in plaintext and without SASL whatever the JVM's zookeeper.client.secure and JAAS
     * file say: the unauthenticated client of the secured runs (on the members' plaintext ports).
     */
    static Znodes connectPlaintext(String hosts) throws Exception {
        ZKClientConfig config = new ZKClientConfig();
        config.setProperty(ZKClientConfig.SECURE_CLIENT, "false");
        config.setProperty(ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET, "org.apache.zookeeper.ClientCnxnSocketNIO");
        config.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        return connect(hosts, config);
    }

    static Znodes connect(String hosts, ZKClientConfig config) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(hosts, 30_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            }, config);
            if (connected.await(5, TimeUnit.SECONDS)) {
                return new Znodes(zk);
            }
            zk.close();
            if (System.nanoTime() > deadline) {
                throw new Checks.Abort("no ZooKeeper session with " + hosts + " within 20 s");
            }
        }
    }

    /** The znode, or null when it does not exist. */
    Node get(String path) throws KeeperException, InterruptedException {
        Stat stat = new Stat();
        try {
            byte[] data = zk.getData(path, false, stat);
            return new Node(data, stat);
        } catch (KeeperException.NoNodeException e) {
            return null;
        }
    }

    /** The znode's ACL as "scheme:id:perms" strings, sorted. */
    List<String> acl(String path) throws KeeperException, InterruptedException {
        List<String> out = new ArrayList<>();
        for (ACL acl : zk.getACL(path, new Stat())) {
            out.add(acl.getId().getScheme() + ":" + acl.getId().getId() + ":" + acl.getPerms());
        }
        Collections.sort(out);
        return out;
    }

    /** What an attempt answers: "ok", or the KeeperException's code (NOAUTH, ...). */
    interface Attempt {
        void run() throws KeeperException, InterruptedException;
    }

    static String outcome(Attempt attempt) throws InterruptedException {
        try {
            attempt.run();
            return "ok";
        } catch (KeeperException e) {
            return e.code().name();
        }
    }

    ZooKeeper zk() {
        return zk;
    }

    /** Sorted children, or null when the parent does not exist. */
    List<String> children(String path) throws KeeperException, InterruptedException {
        try {
            List<String> names = new ArrayList<>(zk.getChildren(path, false));
            Collections.sort(names);
            return names;
        } catch (KeeperException.NoNodeException e) {
            return null;
        }
    }

    /**
     * Sets an exists-watch on an existing znode and returns a future completed with System.nanoTime()
     * of the NodeDeleted event, so that removals are timed by the server's own notification, not by polling.
     */
    CompletableFuture<Long> whenDeleted(String path) throws KeeperException, InterruptedException {
        CompletableFuture<Long> deleted = new CompletableFuture<>();
        Stat stat = zk.exists(path, (WatchedEvent event) -> {
            if (event.getType() == Watcher.Event.EventType.NodeDeleted) {
                deleted.complete(System.nanoTime());
            } else {
                deleted.completeExceptionally(new IllegalStateException("unexpected event " + event));
            }
        });
        if (stat == null) {
            throw new Checks.Abort(path + " does not exist before the stop");
        }
        return deleted;
    }

    long sessionId() {
        return zk.getSessionId();
    }

    @Override
    public void close() throws InterruptedException {
        zk.close();
    }
}
