package dev.paddock.locks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

/**
 * The Curator side of the locks suite and bench. Every mode prints lines the scripts read:
 *
 * <pre>
 *   SERVERS hold PATH MS          InterProcessMutex: `acquired EPOCH_MS`, hold MS, `released EPOCH_MS`
 *   SERVERS try PATH MS           InterProcessMutex.acquire(MS): `acquired` (then release) or `timeout`
 *   SERVERS latch PATH ID WAIT_MS LeaderLatch with participant ID: `leader-is LEADER_ID` once there is
 *                                 one, then `leads` once it leads (or `not-leader` after WAIT_MS)
 *   SERVERS bench-uncontended PATH N      N acquire+release rounds: `p50_us P p99_us P`
 *   SERVERS bench-contended PATH K SECS   K clients in a loop: `handoffs_per_s H`
 * </pre>
 */
public final class CuratorSide {
    private static CuratorFramework connect(String servers) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(servers)
                .sessionTimeoutMs(4000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(20, 200))
                .build();
        c.start();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("cannot connect to " + servers);
        }
        return c;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CuratorSide SERVERS MODE PATH [ARGS]");
            System.exit(2);
        }
        String servers = args[0];
        String mode = args[1];
        String path = args[2];
        switch (mode) {
            case "hold" -> {
                try (CuratorFramework c = connect(servers)) {
                    InterProcessMutex m = new InterProcessMutex(c, path);
                    m.acquire();
                    System.out.println("acquired " + System.currentTimeMillis());
                    Thread.sleep(Long.parseLong(args[3]));
                    System.out.println("released " + System.currentTimeMillis());
                    m.release();
                }
            }
            case "czxids" -> {
                // Each child of PATH as `name czxid`, sorted by name: what a fencing token must equal.
                try (CuratorFramework c = connect(servers)) {
                    java.util.List<String> kids = new java.util.ArrayList<>(c.getChildren().forPath(path));
                    java.util.Collections.sort(kids);
                    for (String k : kids) {
                        org.apache.zookeeper.data.Stat st = c.checkExists().forPath(path + "/" + k);
                        System.out.println(k + " " + (st == null ? "gone" : Long.toString(st.getCzxid())));
                    }
                }
            }
            case "try" -> {
                try (CuratorFramework c = connect(servers)) {
                    InterProcessMutex m = new InterProcessMutex(c, path);
                    if (m.acquire(Long.parseLong(args[3]), TimeUnit.MILLISECONDS)) {
                        System.out.println("acquired");
                        m.release();
                    } else {
                        System.out.println("timeout");
                    }
                }
            }
            case "latch" -> {
                try (CuratorFramework c = connect(servers)) {
                    LeaderLatch latch = new LeaderLatch(c, path, args[3]);
                    latch.start();
                    long deadline = System.currentTimeMillis() + 10000;
                    String leader = "";
                    while (leader.isEmpty() && System.currentTimeMillis() < deadline) {
                        try {
                            leader = latch.getLeader().getId();
                        } catch (Exception e) {
                            // no participants yet
                        }
                        if (leader.isEmpty()) Thread.sleep(50);
                    }
                    System.out.println("leader-is " + leader);
                    System.out.flush();
                    if (latch.await(Long.parseLong(args[4]), TimeUnit.MILLISECONDS)) {
                        System.out.println("leads");
                    } else {
                        System.out.println("not-leader");
                    }
                    latch.close();
                }
            }
            case "bench-uncontended" -> {
                int n = Integer.parseInt(args[3]);
                try (CuratorFramework c = connect(servers)) {
                    InterProcessMutex m = new InterProcessMutex(c, path);
                    for (int i = 0; i < 20; i++) { m.acquire(); m.release(); } // warm-up
                    long[] us = new long[n];
                    for (int i = 0; i < n; i++) {
                        long t0 = System.nanoTime();
                        m.acquire();
                        us[i] = (System.nanoTime() - t0) / 1000;
                        m.release();
                    }
                    Arrays.sort(us);
                    System.out.println("p50_us " + us[n / 2] + " p99_us " + us[Math.min(n - 1, n * 99 / 100)]);
                }
            }
            case "bench-contended" -> {
                int k = Integer.parseInt(args[3]);
                long secs = Long.parseLong(args[4]);
                List<CuratorFramework> clients = new ArrayList<>();
                for (int i = 0; i < k; i++) clients.add(connect(servers));
                AtomicLong count = new AtomicLong();
                long end = System.nanoTime() + secs * 1_000_000_000L;
                List<Thread> threads = new ArrayList<>();
                for (CuratorFramework c : clients) {
                    Thread t = new Thread(() -> {
                        InterProcessMutex m = new InterProcessMutex(c, path);
                        try {
                            while (System.nanoTime() < end) {
                                m.acquire();
                                count.incrementAndGet();
                                m.release();
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    t.start();
                    threads.add(t);
                }
                for (Thread t : threads) t.join();
                System.out.printf("handoffs_per_s %.1f%n", count.get() / (double) secs);
                for (CuratorFramework c : clients) c.close();
            }
            default -> {
                System.err.println("unknown mode " + mode);
                System.exit(2);
            }
        }
    }
}
