package org.apache.curator.framework.recipes.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryForever;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;

/**
 * Shows, against whichever server the shadow TestingServer starts (paddock, or ZooKeeper 3.9.5 with
 * {@code --against-zookeeper}), the CuratorCache behaviour behind TestCuratorCacheConsistency's rare
 * "Bad old value for change node": a node deleted and created again (same version, 0, new data) while the
 * cache's client is disconnected is stored by the reconnect's rebuild without any event, because
 * CuratorCacheImpl.putStorage compares versions only; the next change then reports, as its old value, data
 * the listener never saw. Both servers must give exactly this sequence: paddock answers as ZooKeeper does.
 *
 * <p>The cache's client goes through a relay that this test cuts (every relayed connection closed, new ones
 * closed at once) and restores within the session timeout, so the session and its persistent watch live on.
 */
public class TestCuratorCacheRebuildParity {
    private static final byte[] A = "A".getBytes(StandardCharsets.UTF_8);
    private static final byte[] B = "B".getBytes(StandardCharsets.UTF_8);
    private static final byte[] C = "C".getBytes(StandardCharsets.UTF_8);

    /** One cache event as the listener saw it. */
    private record Seen(CuratorCacheListener.Type type, String path, byte[] oldData, byte[] newData) {}

    @Test
    public void aNodeRecreatedAtTheSameVersionWhileDisconnectedIsStoredWithoutAnEvent() throws Exception {
        try (TestingServer server = new TestingServer();
                Relay relay = new Relay(server.getPort());
                CuratorFramework writer =
                        CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryForever(100))) {
            writer.start();
            writer.create().creatingParentsIfNeeded().forPath("/test/1", A);

            CuratorFramework client = CuratorFrameworkFactory.builder()
                    .connectString("127.0.0.1:" + relay.port())
                    .sessionTimeoutMs(30_000)
                    .connectionTimeoutMs(5_000)
                    .retryPolicy(new RetryForever(100))
                    .build();
            BlockingQueue<ConnectionState> states = new LinkedBlockingQueue<>();
            client.getConnectionStateListenable().addListener((c, s) -> states.add(s));
            client.start();
            try (CuratorCache cache = CuratorCache.build(client, "/test")) {
                BlockingQueue<Seen> seen = new LinkedBlockingQueue<>();
                CountDownLatch initialized = new CountDownLatch(1);
                cache.listenable().addListener(new CuratorCacheListener() {
                    @Override
                    public void event(Type type, ChildData oldData, ChildData data) {
                        seen.add(new Seen(
                                type,
                                data != null ? data.getPath() : oldData.getPath(),
                                oldData != null ? oldData.getData() : null,
                                data != null ? data.getData() : null));
                    }

                    @Override
                    public void initialized() {
                        initialized.countDown();
                    }
                });
                cache.start();
                assertTrue(initialized.await(30, TimeUnit.SECONDS), "cache not initialized");
                assertEquals(ConnectionState.CONNECTED, states.poll(10, TimeUnit.SECONDS));
                Seen root = seen.poll(10, TimeUnit.SECONDS);
                Seen one = seen.poll(10, TimeUnit.SECONDS);
                assertEquals(CuratorCacheListener.Type.NODE_CREATED, root.type());
                assertEquals("/test", root.path());
                assertEquals(CuratorCacheListener.Type.NODE_CREATED, one.type());
                assertEquals("/test/1", one.path());
                assertArrayEquals(A, one.newData());

                relay.cut();
                assertEquals(ConnectionState.SUSPENDED, states.poll(30, TimeUnit.SECONDS));
                writer.delete().forPath("/test/1");
                writer.create().forPath("/test/1", B);
                assertEquals(0, writer.checkExists().forPath("/test/1").getVersion());
                relay.restore();
                assertEquals(ConnectionState.RECONNECTED, states.poll(30, TimeUnit.SECONDS));

                // The rebuild reads /test/1 again: the cache holds B, and no listener heard of it.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!cache.get("/test/1").map(d -> java.util.Arrays.equals(d.getData(), B)).orElse(false)) {
                    assertTrue(System.nanoTime() < deadline, "the cache never read B");
                    Thread.sleep(20);
                }
                Thread.sleep(1_000); // room for any late event
                assertNull(seen.poll(), "an event for the re-created node");

                // The next change carries B as the old value.
                writer.setData().forPath("/test/1", C);
                Seen changed = seen.poll(30, TimeUnit.SECONDS);
                assertEquals(CuratorCacheListener.Type.NODE_CHANGED, changed.type());
                assertEquals("/test/1", changed.path());
                assertArrayEquals(B, changed.oldData());
                assertArrayEquals(C, changed.newData());
            } finally {
                client.close();
            }
        }
    }

    /** A TCP relay to the server's port that can drop every connection and refuse new ones for a while. */
    private static final class Relay implements AutoCloseable {
        private final ServerSocket listener;
        private final int target;
        private final List<Socket> open = new CopyOnWriteArrayList<>();
        private volatile boolean cut;

        Relay(int target) throws IOException {
            this.target = target;
            this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread accept = new Thread(this::acceptLoop, "relay-accept");
            accept.setDaemon(true);
            accept.start();
        }

        int port() {
            return listener.getLocalPort();
        }

        void cut() {
            cut = true;
            for (Socket s : open) {
                closeQuietly(s);
            }
            open.clear();
        }

        void restore() {
            cut = false;
        }

        private void acceptLoop() {
            while (!listener.isClosed()) {
                try {
                    Socket client = listener.accept();
                    if (cut) {
                        closeQuietly(client);
                        continue;
                    }
                    Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
                    open.add(client);
                    open.add(upstream);
                    pump(client, upstream);
                    pump(upstream, client);
                } catch (IOException e) {
                    // listener closed, or the server refused: the client retries
                }
            }
        }

        private void pump(Socket from, Socket to) {
            Thread t = new Thread(
                    () -> {
                        byte[] buf = new byte[64 * 1024];
                        try (InputStream in = from.getInputStream();
                                OutputStream out = to.getOutputStream()) {
                            int n;
                            while ((n = in.read(buf)) >= 0) {
                                out.write(buf, 0, n);
                                out.flush();
                            }
                        } catch (IOException e) {
                            // either side closed
                        } finally {
                            closeQuietly(from);
                            closeQuietly(to);
                        }
                    },
                    "relay-pump");
            t.setDaemon(true);
            t.start();
        }

        private static void closeQuietly(Socket s) {
            try {
                s.close();
            } catch (IOException ignored) {
                // already closed
            }
        }

        @Override
        public void close() throws IOException {
            cut();
            listener.close();
        }
    }
}
