package dev.paddock.compat.cutover;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryForever;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/**
 * The Java clients of compat-tests/migration/cutover.sh, one JVM that lives through the cut-over:
 *
 * <ol>
 *   <li>a Curator client takes an InterProcessMutex on /cutover/lock and holds it; its session id, the
 *       lock node and the node's czxid and owner go to WORK/java.before;
 *   <li>a plain ZooKeeper client sets a data watch on /cutover/jwatched and a child watch on
 *       /cutover/jkids, once: after the cut-over only the client's SetWatches can have put them on
 *       the new server;
 *   <li>a Kafka producer (acks=all) sends one message every 50 ms to topic "cutover" (2 replicas), and
 *       remembers every message the brokers acknowledged;
 *   <li>WORK/java.ready tells the script that both are going; it cuts over and then creates WORK/java.check;
 *   <li>the checks, one "ok ..." or "FAIL ..." line each: the Curator session is the one it had, never
 *       LOST; the lock node is the same node with the same owner and this process still holds the lock;
 *       a second Curator client (a new session) does not get the lock in 3 s, and gets it once the holder
 *       releases it; the watcher's session is kept and both watches fire for changes made after the
 *       cut-over; every acknowledged message is consumed from the topic.
 * </ol>
 *
 * System properties: zk (connect string), bootstrap (broker listeners), work (directory), session.ms.
 */
public final class CutoverClients {
    private static final String LOCK = "/cutover/lock";
    private static final String TOPIC = "cutover";

    private static final List<String> results = new ArrayList<>();

    private static void ok(String what) {
        results.add("ok " + what);
        System.out.println("ok " + what);
        System.out.flush();
    }

    private static void fail(String what) {
        results.add("FAIL " + what);
        System.out.println("FAIL " + what);
        System.out.flush();
    }

    private static void log(String what) {
        System.out.println("java: " + what);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String zk = System.getProperty("zk");
        String bootstrap = System.getProperty("bootstrap");
        Path work = Path.of(System.getProperty("work"));
        int sessionMs = Integer.getInteger("session.ms", 30000);

        // --- the lock holder ------------------------------------------------------------------
        List<String> states = new CopyOnWriteArrayList<>();
        CuratorFramework holder = CuratorFrameworkFactory.newClient(zk, sessionMs, 15000, new RetryForever(250));
        holder.getConnectionStateListenable().addListener((c, s) -> {
            states.add(s.toString());
            log("curator holder: " + s + " at " + System.currentTimeMillis());
        });
        holder.start();
        if (!holder.blockUntilConnected(60, TimeUnit.SECONDS)) {
            fail("curator: could not connect to " + zk);
            System.exit(1);
        }
        InterProcessMutex mutex = new InterProcessMutex(holder, LOCK);
        if (!mutex.acquire(30, TimeUnit.SECONDS)) {
            fail("curator: the lock was not acquired before the cut-over");
            System.exit(1);
        }
        long sessionBefore = holder.getZookeeperClient().getZooKeeper().getSessionId();
        List<String> nodes = new ArrayList<>(mutex.getParticipantNodes());
        if (nodes.size() != 1) {
            fail("curator: expected one participant before the cut-over, got " + nodes);
            System.exit(1);
        }
        String lockNode = nodes.get(0);
        Stat before = holder.checkExists().forPath(lockNode);
        // --- the watches: a plain client, watches set once ----------------------------------------
        for (String p : List.of("/cutover/jwatched", "/cutover/jkids")) {
            if (holder.checkExists().forPath(p) == null) {
                holder.create().creatingParentsIfNeeded().forPath(p, "before".getBytes(StandardCharsets.UTF_8));
            }
        }
        List<String> watcherStates = new CopyOnWriteArrayList<>();
        List<WatchedEvent> fired = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch connected = new java.util.concurrent.CountDownLatch(1);
        ZooKeeper watcher = new ZooKeeper(zk, sessionMs, e -> {
            watcherStates.add(e.getState().toString());
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(60, TimeUnit.SECONDS)) {
            fail("zookeeper client: could not connect to " + zk);
            System.exit(1);
        }
        // A path watcher also hears every state change (type None: Disconnected, SyncConnected);
        // only the path events count.
        Watcher once = e -> {
            if (e.getType() != Watcher.Event.EventType.None) {
                fired.add(e);
            }
        };
        watcher.getData("/cutover/jwatched", once, null);
        watcher.getChildren("/cutover/jkids", once);
        long watcherSession = watcher.getSessionId();
        Files.writeString(work.resolve("java.before"), String.format(
                "session=0x%x%nnode=%s%nczxid=0x%x%nowner=0x%x%nwatcher=0x%x%n", sessionBefore, lockNode,
                before.getCzxid(), before.getEphemeralOwner(), watcherSession));
        log(String.format("curator holds %s (session 0x%x, czxid 0x%x)", lockNode, sessionBefore, before.getCzxid()));

        // --- the producer ---------------------------------------------------------------------
        Properties admin = new Properties();
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin a = Admin.create(admin)) {
            a.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 2))).all().get(60, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120000);
        pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30000);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(pp);
        Set<Long> acked = new ConcurrentSkipListSet<>();
        AtomicLong sent = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        AtomicLong errors = new AtomicLong();
        Thread produce = new Thread(() -> {
            long seq = 0;
            while (!Thread.currentThread().isInterrupted()) {
                long n = seq++;
                producer.send(new ProducerRecord<>(TOPIC, "k", "m-" + n), (md, e) -> {
                    if (e == null) {
                        acked.add(n);
                    } else {
                        errors.incrementAndGet();
                        firstError.compareAndSet(null, e.toString());
                    }
                });
                sent.set(seq);
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "producer");
        produce.start();
        long deadline = System.currentTimeMillis() + 60000;
        while (acked.isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        if (acked.isEmpty()) {
            fail("kafka: no message acknowledged before the cut-over (" + firstError.get() + ")");
            System.exit(1);
        }
        Files.writeString(work.resolve("java.ready"), "ready\n");
        log("ready: lock held, producer acknowledged " + acked.size());

        // --- the script cuts over ----------------------------------------------------------------
        Path check = work.resolve("java.check");
        while (!Files.exists(check)) {
            Thread.sleep(100);
        }
        long ackedAtCheck = acked.size();
        produce.interrupt();
        produce.join();
        producer.flush();
        producer.close(Duration.ofSeconds(30));

        // --- Curator -------------------------------------------------------------------------
        long sessionAfter = holder.getZookeeperClient().getZooKeeper().getSessionId();
        if (sessionAfter == sessionBefore && !states.contains(ConnectionState.LOST.toString())) {
            ok(String.format("curator session 0x%x kept (states: %s)", sessionAfter, states));
        } else {
            fail(String.format("curator session 0x%x, now 0x%x (states: %s)", sessionBefore, sessionAfter, states));
        }
        Stat after = holder.checkExists().forPath(lockNode);
        List<String> nodesAfter = new ArrayList<>(mutex.getParticipantNodes());
        if (after != null && after.getCzxid() == before.getCzxid() && after.getEphemeralOwner() == sessionBefore
                && nodesAfter.equals(nodes) && mutex.isOwnedByCurrentThread()) {
            ok(String.format("curator lock node %s unchanged (czxid 0x%x, owner 0x%x), still held",
                    lockNode, after.getCzxid(), after.getEphemeralOwner()));
        } else {
            fail(String.format("curator lock node %s: before czxid 0x%x owner 0x%x, after %s; participants %s",
                    lockNode, before.getCzxid(), sessionBefore,
                    after == null ? "gone" : String.format("czxid 0x%x owner 0x%x", after.getCzxid(),
                            after.getEphemeralOwner()), nodesAfter));
        }
        // --- the watches, set before the cut-over, fire for changes made after it ------------------
        holder.setData().forPath("/cutover/jwatched", "after".getBytes(StandardCharsets.UTF_8));
        holder.create().withMode(CreateMode.PERSISTENT).withACL(ZooDefs.Ids.OPEN_ACL_UNSAFE)
                .forPath("/cutover/jkids/after");
        long until = System.currentTimeMillis() + 10000;
        while (fired.size() < 2 && System.currentTimeMillis() < until) {
            Thread.sleep(50);
        }
        Set<String> seen = new HashSet<>();
        for (WatchedEvent e : fired) {
            seen.add(e.getType() + " " + e.getPath());
        }
        Set<String> want = Set.of("NodeDataChanged /cutover/jwatched", "NodeChildrenChanged /cutover/jkids");
        if (watcher.getSessionId() == watcherSession && !watcherStates.contains("Expired") && seen.equals(want)
                && fired.size() == 2) {
            ok(String.format("zookeeper client 0x%x: its data and child watches, set once before the cut-over, "
                    + "fired for changes after it (SetWatches; states %s)", watcherSession, watcherStates));
        } else {
            fail(String.format("zookeeper client 0x%x (now 0x%x, states %s): watch events %s, want %s",
                    watcherSession, watcher.getSessionId(), watcherStates, seen, want));
        }
        watcher.close();

        CuratorFramework contender = CuratorFrameworkFactory.newClient(zk, sessionMs, 15000, new RetryForever(250));
        contender.start();
        contender.blockUntilConnected(30, TimeUnit.SECONDS);
        InterProcessMutex other = new InterProcessMutex(contender, LOCK);
        AtomicReference<String> contended = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                boolean early = other.acquire(3, TimeUnit.SECONDS);
                if (early) {
                    contended.set("acquired while the holder held it");
                    other.release();
                    return;
                }
                contended.set("waiting");
            } catch (Exception e) {
                contended.set("error " + e);
            }
        });
        t.start();
        t.join();
        if ("waiting".equals(contended.get())) {
            mutex.release();
            boolean got = other.acquire(15, TimeUnit.SECONDS);
            if (got) {
                ok("curator: a second contender waited 3 s without the lock, and got it once the holder released it");
                other.release();
            } else {
                fail("curator: the holder released, and the second contender still did not get the lock in 15 s");
            }
        } else {
            fail("curator: second contender: " + contended.get());
        }
        contender.close();
        holder.close();

        // --- Kafka ---------------------------------------------------------------------------
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Set<Long> consumed = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(TOPIC, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            Map<TopicPartition, Long> end = consumer.endOffsets(List.of(tp));
            long stop = System.currentTimeMillis() + 60000;
            while (consumer.position(tp) < end.get(tp) && System.currentTimeMillis() < stop) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    consumed.add(Long.parseLong(r.value().substring(2)));
                }
            }
        }
        Set<Long> missing = new HashSet<>(acked);
        missing.removeAll(consumed);
        if (missing.isEmpty() && errors.get() == 0) {
            ok(String.format("kafka: all %d acknowledged messages consumed (%d sent, %d acknowledged by the check, no send error)",
                    acked.size(), sent.get(), ackedAtCheck));
        } else {
            fail(String.format("kafka: %d of %d acknowledged messages missing; %d send errors, first %s",
                    missing.size(), acked.size(), errors.get(), firstError.get()));
        }
        Files.writeString(work.resolve("java.done"), String.join("\n", results) + "\n", StandardCharsets.UTF_8);
        System.exit(results.stream().anyMatch(r -> r.startsWith("FAIL")) ? 1 : 0);
    }
}
