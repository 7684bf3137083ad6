package dev.paddock.compat.kafka;

import static dev.paddock.compat.kafka.Checks.expect;
import static dev.paddock.compat.kafka.Checks.require;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Two Kafka 3.9 brokers in ZooKeeper mode on a 3-member ensemble (paddock, or Apache ZooKeeper to prove the
 * checks): registration, controller election, a replicated topic, produce and consume, a kill -9 of the
 * ensemble member the controller broker's session is connected to while a producer writes (the sessions
 * must move to the other members without expiring, no acked message may be lost, the controller stays),
 * that member's restart (it must rejoin as a follower and catch up to the leader's zxid), a kill -9 of the
 * controller's broker (its registration must outlive it until the session expires, then the other broker
 * takes over), a restart, and a graceful stop (its registration must go at once, with the session's close).
 *
 * <p>The brokers are separate JVMs started by broker.sh (run.sh starts the first two); this program kills
 * them with signals (SIGKILL, SIGTERM) by the PIDs broker.sh records. System properties: zk (the connect
 * string, every member), chroot, work (the run's work dir), broker.script, listener.0 and listener.1
 * (host:port), session.timeout.ms, members (the members' client ports, comma-separated), ensemble.dir and
 * ensemble.script (scripts/ensemble.sh's --dir and path), ensemble.kind (paddock or zookeeper). Prints one ok/FAIL line per check and exits 0 only if every check passed.
 */
public final class KafkaFailover {
    static final String TOPIC = "paddock-failover";
    static final int PER_PARTITION = 10;

    static final String REGISTERED = "brokers registered (/brokers/ids == [0, 1], one session each)";
    static final String LAYOUT = "chroot holds Kafka's tree (root == [kafka, zookeeper], cluster id)";
    static final String ELECTED = "controller elected (/controller, /controller_epoch in one multi)";
    static final String DUPLICATE = "duplicate broker.id refused (registration multi fails with NODEEXISTS)";
    static final String CONFIG_CHANGE = "cluster config change reaches both brokers (/config/changes sequential)";
    static final String ACLS = "Kafka's znodes carry its identity's ACLs; an unauthenticated client gets NoAuth";
    static final String TOPIC_DELETED = "topic deletion removes its znodes (controller's fenced multi deletes)";
    static final String TOPIC_RF2 = "topic created with replication factor 2 (topic and partition state znodes)";
    static final String PRODUCE = "produce 20 messages acks=all";
    static final String CONSUME = "consume 20 messages back in order";
    static final String MEMBER_KILLED =
            "kill -9 of the member the controller's session is on, under produce load: acks go on";
    static final String SESSIONS_MOVED =
            "sessions move to the surviving members: /controller and /brokers/ids kept, controller stays";
    static final String LOAD_CONSUMED = "every message acked around the member's kill is consumed, in order";
    static final String MEMBER_REJOINS = "restarted member rejoins as follower and catches up to the leader's zxid";
    static final String KILL_EXPIRES = "kill -9 controller's broker: /brokers/ids entry goes at session expiry";
    static final String NEW_CONTROLLER = "other broker becomes controller";
    static final String EPOCH = "controller epoch incremented";
    static final String LEADERS_MOVED = "partition leadership and ISR moved to the survivor";
    static final String PRODUCE_AFTER = "produce after failover acks=all";
    static final String CONSUME_AFTER = "consumer still reads (old messages and the new ones)";
    static final String REREGISTERED = "restarted broker re-registers with a new session and rejoins the ISR";
    static final String TERM_GONE = "SIGTERM broker: /brokers/ids entry goes at once";
    static final String TERM_CONTROLLER = "controller moves at once after SIGTERM";
    static final String CONSUME_LAST = "consume everything from the last broker";

    private final String zkHosts;
    private final String chroot;
    private final Path work;
    private final String brokerScript;
    private final Map<Integer, String> listeners = new TreeMap<>();
    private final long sessionTimeoutMs;
    private final Ensemble ensemble;
    /** The secured runs: the brokers' ZooKeeper identity ("x509:CN=...", "sasl:kafka/..."), else null. */
    private final String identity;
    /** The secured runs: the members' plaintext client ports, for the unauthenticated client. */
    private final String plainHosts;
    private final Checks checks;
    private Znodes zn;

    // State carried from check to check.
    private final Map<Integer, Long> owners = new HashMap<>();
    private int controller;
    private int epoch0;
    private int epochVersion0;
    private final Map<Integer, List<String>> sent = new TreeMap<>();
    private Admin admin;
    private KafkaProducer<String, String> producer;
    private KafkaConsumer<String, String> consumer;
    private long killedOwner;
    private long termAt;
    private Znodes.Node handover;
    private double handoverSeconds;
    private String handoverError;
    private int killedMember;
    private final Map<Integer, List<String>> load = new TreeMap<>();

    private KafkaFailover(Checks checks) throws Exception {
        this.checks = checks;
        zkHosts = prop("zk");
        chroot = prop("chroot");
        work = Path.of(prop("work"));
        brokerScript = prop("broker.script");
        listeners.put(0, prop("listener.0"));
        listeners.put(1, prop("listener.1"));
        sessionTimeoutMs = Long.parseLong(prop("session.timeout.ms"));
        List<Integer> ports = new ArrayList<>();
        for (String port : prop("members").split(",")) {
            ports.add(Integer.parseInt(port.trim()));
        }
        List<Integer> securePorts = new ArrayList<>();
        for (String port : System.getProperty("secure.members", "").split(",")) {
            if (!port.isBlank()) {
                securePorts.add(Integer.parseInt(port.trim()));
            }
        }
        ensemble = new Ensemble(ports, securePorts, Path.of(prop("ensemble.dir")), prop("ensemble.script"),
                prop("ensemble.kind").equals("zookeeper"));
        identity = System.getProperty("identity");
        plainHosts = System.getProperty("zk.plain");
    }

    private static String prop(String name) {
        return Objects.requireNonNull(System.getProperty(name), "system property " + name);
    }

    public static void main(String[] args) throws Exception {
        List<String> names = new ArrayList<>(List.of(REGISTERED, LAYOUT, ELECTED, DUPLICATE, TOPIC_RF2, PRODUCE,
                CONSUME, MEMBER_KILLED, SESSIONS_MOVED, LOAD_CONSUMED, MEMBER_REJOINS, CONFIG_CHANGE));
        if (System.getProperty("identity") != null) {
            names.add(ACLS);
        }
        names.addAll(List.of(TOPIC_DELETED, KILL_EXPIRES, NEW_CONTROLLER, EPOCH, LEADERS_MOVED, PRODUCE_AFTER,
                CONSUME_AFTER, REREGISTERED, TERM_GONE, TERM_CONTROLLER, CONSUME_LAST));
        Checks checks = new Checks(names);
        KafkaFailover scenario = new KafkaFailover(checks);
        try {
            scenario.run();
        } catch (Checks.Abort e) {
            checks.notReached(e.getMessage());
        } finally {
            scenario.closeClients();
        }
        System.out.printf("kafka checks: %d passed, %d failed%n", checks.passed(), checks.failed());
        System.out.flush();
        System.exit(checks.failed() == 0 && checks.passed() > 0 ? 0 : 1);
    }

    private String z(String path) {
        return chroot + path;
    }

    private String bootstrap() {
        return String.join(",", listeners.values());
    }

    private void run() throws Exception {
        zn = Znodes.connect(zkHosts);
        checks.run(REGISTERED, this::registered);
        checks.run(LAYOUT, this::layout);
        checks.run(ELECTED, this::elected);
        checks.run(DUPLICATE, this::duplicateRefused);
        checks.run(TOPIC_RF2, this::topicCreated);
        checks.run(PRODUCE, this::produce);
        checks.run(CONSUME, this::consume);
        checks.run(MEMBER_KILLED, this::memberKilled);
        checks.run(SESSIONS_MOVED, this::sessionsMoved);
        checks.run(LOAD_CONSUMED, this::loadConsumed);
        checks.run(MEMBER_REJOINS, this::memberRejoins);
        checks.run(CONFIG_CHANGE, this::configChange);
        if (identity != null) {
            checks.run(ACLS, this::acls);
        }
        checks.run(TOPIC_DELETED, this::topicDeleted);
        int victim = controller;
        int survivor = 1 - victim;
        checks.run(KILL_EXPIRES, () -> killExpires(victim));
        checks.run(NEW_CONTROLLER, () -> newController(survivor));
        checks.run(EPOCH, () -> epochIncremented(1));
        checks.run(LEADERS_MOVED, () -> leadersMoved(victim, survivor));
        checks.run(PRODUCE_AFTER, this::produceAfter);
        checks.run(CONSUME_AFTER, this::consumeAfter);
        checks.run(REREGISTERED, () -> reregistered(victim, survivor));
        checks.run(TERM_GONE, () -> termGone(survivor));
        checks.run(TERM_CONTROLLER, () -> termController(victim));
        checks.run(CONSUME_LAST, () -> consumeLast(victim));
    }

    // ---- checks -------------------------------------------------------------------------------------

    private String registered() throws Exception {
        List<String> ids = poll("/brokers/ids == [0, 1]", Duration.ofSeconds(120),
                () -> zn.children(z("/brokers/ids")), List.of("0", "1")::equals, true);
        for (int id = 0; id <= 1; id++) {
            Znodes.Node node = zn.get(z("/brokers/ids/" + id));
            require(node != null, "/brokers/ids/" + id + " vanished");
            long owner = node.stat().getEphemeralOwner();
            expect(owner != 0, "/brokers/ids/" + id + " is not ephemeral");
            owners.put(id, owner);
            checkRegistration(id, node);
        }
        expect(!owners.get(0).equals(owners.get(1)), "both brokers registered under one session "
                + Long.toHexString(owners.get(0)));
        return ids + ", owners 0x" + Long.toHexString(owners.get(0)) + " 0x" + Long.toHexString(owners.get(1));
    }

    /** Registration is multi[create EPHEMERAL (no data), setData version 0]: one zxid, data version 1. */
    private void checkRegistration(int id, Znodes.Node node) {
        String where = "/brokers/ids/" + id;
        JsonNode json = node.json();
        expect(json.path("endpoints").size() == 1
                        && json.path("endpoints").get(0).asText().equals("PLAINTEXT://" + listeners.get(id)),
                where + " endpoints " + json.path("endpoints") + ", want PLAINTEXT://" + listeners.get(id));
        expect(node.stat().getVersion() == 1, where + " dataVersion " + node.stat().getVersion() + ", want 1");
        expect(node.stat().getCzxid() == node.stat().getMzxid(), where + " czxid 0x"
                + Long.toHexString(node.stat().getCzxid()) + " != mzxid 0x" + Long.toHexString(node.stat().getMzxid())
                + " although created and set in one multi");
        expect(node.stat().getDataLength() == node.data().length, where + " dataLength "
                + node.stat().getDataLength() + " != " + node.data().length);
    }

    private String layout() throws Exception {
        List<String> root = zn.children("/");
        expect(List.of(chroot.substring(1), "zookeeper").equals(root), "root children " + root);
        // /feature is the elected controller's to create, shortly after the registrations (seen 2.3 s after
        // them on a loaded machine): wait for the whole set a while.
        List<String> paths = List.of("/consumers", "/brokers/ids", "/brokers/topics", "/brokers/seqid",
                "/config/changes", "/config/topics", "/config/clients", "/config/users", "/config/brokers",
                "/config/ips", "/admin/delete_topics", "/isr_change_notification", "/latest_producer_id_block",
                "/log_dir_event_notification", "/feature", "/cluster/id");
        poll("Kafka's persistent paths under " + chroot, Duration.ofSeconds(30), () -> {
            List<String> missing = new ArrayList<>();
            for (String p : paths) {
                if (zn.get(z(p)) == null) {
                    missing.add(p);
                }
            }
            return "missing " + missing;
        }, "missing []"::equals, false);
        for (String p : paths) {
            expect(zn.get(z(p)).stat().getEphemeralOwner() == 0, p + " is ephemeral");
        }
        String id = zn.get(z("/cluster/id")).json().path("id").asText("");
        expect(!id.isEmpty(), "/cluster/id has no id");
        String seen = admin().describeCluster().clusterId().get(30, TimeUnit.SECONDS);
        expect(id.equals(seen), "/cluster/id says " + id + ", brokers report " + seen);
        return "cluster id " + id;
    }

    private String elected() throws Exception {
        Znodes.Node node = poll("/controller exists", Duration.ofSeconds(30), () -> zn.get(z("/controller")),
                n -> true, true);
        controller = node.json().path("brokerid").asInt(-1);
        require(controller == 0 || controller == 1, "/controller names broker " + node.text());
        expect(node.stat().getEphemeralOwner() == owners.get(controller), "/controller owned by 0x"
                + Long.toHexString(node.stat().getEphemeralOwner()) + ", broker " + controller + "'s session is 0x"
                + Long.toHexString(owners.get(controller)));
        Znodes.Node epoch = zn.get(z("/controller_epoch"));
        require(epoch != null, "/controller_epoch missing");
        epoch0 = Integer.parseInt(epoch.text());
        epochVersion0 = epoch.stat().getVersion();
        expect(epoch0 >= 1, "/controller_epoch " + epoch0);
        expect(epoch.stat().getMzxid() == node.stat().getCzxid(), "/controller_epoch mzxid 0x"
                + Long.toHexString(epoch.stat().getMzxid()) + " != /controller czxid 0x"
                + Long.toHexString(node.stat().getCzxid()) + " although written in one multi");
        int seen = poll("brokers report controller " + controller, Duration.ofSeconds(30),
                () -> admin().describeCluster().controller().get(30, TimeUnit.SECONDS).id(),
                id -> id == controller, false);
        return "broker " + seen + ", epoch " + epoch0;
    }

    /**
     * A second broker with broker.id 0 while broker 0 is registered: Kafka's registration multi[create
     * EPHEMERAL, setData] fails with NODEEXISTS, Kafka reads the znode, sees another session's
     * ephemeralOwner, and refuses to start. Nothing of broker 0's registration or the controller may change.
     */
    private String duplicateRefused() throws Exception {
        Znodes.Node before = zn.get(z("/brokers/ids/0"));
        Znodes.Node controllerBefore = zn.get(z("/controller"));
        require(before != null && controllerBefore != null, "/brokers/ids/0 or /controller missing");
        startBroker("dup-0");
        ProcessHandle dup = ProcessHandle.of(pidOf("dup-0")).orElse(null);
        if (dup != null) {
            try {
                dup.onExit().get(90, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                dup.destroyForcibly();
                throw new Checks.Fail("the broker with the duplicate id 0 still runs 90 s after its start");
            }
        }
        String log = Files.readString(work.resolve("dup-0.log"));
        // Kafka's own words after the failed multi and its getData of the existing znode.
        java.util.regex.Matcher refused = java.util.regex.Pattern.compile(
                "Error while creating ephemeral at /brokers/ids/0, node already exists and owner '0x([0-9a-f]+)'")
                .matcher(log);
        require(refused.find(), "dup-0.log lacks Kafka's NodeExists refusal for /brokers/ids/0 (see "
                + work.resolve("dup-0.log") + ")");
        expect(Long.parseUnsignedLong(refused.group(1), 16) == owners.get(0), "Kafka read the owner as 0x"
                + refused.group(1) + ", broker 0's session is 0x" + Long.toHexString(owners.get(0)));
        expect(log.contains("Exiting Kafka due to fatal exception during startup"), "dup-0 did not refuse to start");
        Znodes.Node after = zn.get(z("/brokers/ids/0"));
        require(after != null, "/brokers/ids/0 vanished");
        expect(after.stat().equals(before.stat()) && after.text().equals(before.text()),
                "/brokers/ids/0 changed: " + before.stat() + " -> " + after.stat());
        Znodes.Node controllerAfter = zn.get(z("/controller"));
        expect(controllerAfter != null && controllerAfter.stat().equals(controllerBefore.stat()),
                "/controller changed");
        expect(List.of("0", "1").equals(zn.children(z("/brokers/ids"))), "/brokers/ids "
                + zn.children(z("/brokers/ids")));
        return "refused: owner 0x" + refused.group(1) + " is not its session";
    }

    /**
     * Kills (SIGKILL) the ensemble member that the controller broker's ZooKeeper session is connected to
     * (cons lists it): the member whose loss the controller must ride out, with its /controller and
     * /brokers/ids ephemerals, by moving its session to another member before it expires. A producer
     * sends one message every 25 ms from 1.5 s before the kill to 6 s after it; every one must be acked.
     */
    private String memberKilled() throws Exception {
        long session = owners.get(controller);
        List<Integer> on = ensemble.membersWithSession(session);
        require(on.size() == 1, "controller broker " + controller + "'s session 0x" + Long.toHexString(session)
                + " is listed by cons on members " + on + ", want exactly one");
        killedMember = on.get(0);
        List<Integer> leaders = ensemble.leaders();
        require(leaders.size() == 1, "srvr names leaders " + leaders);
        List<Integer> affected = new ArrayList<>();
        for (int id = 0; id <= 1; id++) {
            if (ensemble.hasSession(killedMember, owners.get(id))) {
                affected.add(id);
            }
        }
        // run.sh allows connection-loss lines only in these brokers' logs: those connected to the killed
        // member, or both when it is the leader (then the followers, too, drop their clients until a new
        // leader is elected, on ZooKeeper as on paddock).
        List<Integer> disconnected = killedMember == leaders.get(0) ? List.of(0, 1) : affected;
        Files.writeString(work.resolve("member-kill.txt"),
                disconnected.toString().replaceAll("[\\[\\],]", "") + "\n");
        for (int p = 0; p <= 1; p++) {
            load.put(p, new ArrayList<>());
        }
        List<CompletableFuture<RecordMetadata>> acks = new ArrayList<>();
        List<Long> ackedAt = java.util.Collections.synchronizedList(new ArrayList<>());
        long killAt = 0;
        long start = System.nanoTime();
        for (int i = 0; ; i++) {
            long now = System.nanoTime();
            if (killAt == 0 && now - start >= 1_500_000_000L) {
                ensemble.kill(killedMember);
                killAt = System.nanoTime();
            }
            if (killAt != 0 && now - killAt >= 6_000_000_000L) {
                break;
            }
            int p = i % 2;
            String value = "load-" + i;
            load.get(p).add(value);
            CompletableFuture<RecordMetadata> ack = send(p, value);
            ack.thenRun(() -> ackedAt.add(System.nanoTime()));
            acks.add(ack);
            Thread.sleep(25);
        }
        int failed = 0;
        String firstError = null;
        for (CompletableFuture<RecordMetadata> ack : acks) {
            try {
                ack.get(90, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                failed++;
                firstError = firstError == null ? e.getCause().toString() : firstError;
            }
        }
        expect(failed == 0, failed + " of " + acks.size() + " sends failed, first: " + firstError);
        List<Long> times = new ArrayList<>(ackedAt);
        java.util.Collections.sort(times);
        long afterKill = 0;
        long gap = 0;
        for (int i = 0; i < times.size(); i++) {
            if (times.get(i) > killAt) {
                afterKill++;
            }
            if (i > 0) {
                gap = Math.max(gap, times.get(i) - times.get(i - 1));
            }
        }
        expect(afterKill > 0, "no ack after the member's kill");
        return String.format("member %d (%s; leader was member %d) killed with brokers %s on it; %d sent, "
                        + "%d acked after the kill, longest pause between acks %.2fs", killedMember,
                killedMember == leaders.get(0) ? "the leader" : "a follower", leaders.get(0), affected,
                acks.size(), afterKill, gap / 1e9);
    }

    /**
     * The killed member's clients (the controller broker, maybe the other broker and this checker) reconnect
     * to a surviving member with the same session: no expiry, so /controller (same czxid, same owner) and
     * both /brokers/ids entries stay, the brokers still name the same controller, and cons on a surviving
     * member lists each broker's session.
     */
    private String sessionsMoved() throws Exception {
        StringBuilder where = new StringBuilder();
        for (int id = 0; id <= 1; id++) {
            long session = owners.get(id);
            List<Integer> on = poll("broker " + id + "'s session 0x" + Long.toHexString(session)
                            + " on a surviving member", Duration.ofMillis(sessionTimeoutMs),
                    () -> ensemble.membersWithSession(session), l -> l.size() == 1 && l.get(0) != killedMember, false);
            where.append(" broker ").append(id).append(" on member ").append(on.get(0));
        }
        Znodes.Node node = poll("/controller readable", Duration.ofSeconds(20), () -> zn.get(z("/controller")),
                n -> true, false);
        expect(node.json().path("brokerid").asInt(-1) == controller, "/controller " + node.text()
                + ", want broker " + controller);
        expect(node.stat().getEphemeralOwner() == owners.get(controller), "/controller owned by 0x"
                + Long.toHexString(node.stat().getEphemeralOwner()) + ", was 0x" + Long.toHexString(owners.get(controller)));
        Znodes.Node epoch = zn.get(z("/controller_epoch"));
        expect(epoch != null && Integer.parseInt(epoch.text()) == epoch0, "/controller_epoch "
                + (epoch == null ? "missing" : epoch.text()) + ", want " + epoch0 + " (no new election)");
        for (int id = 0; id <= 1; id++) {
            Znodes.Node reg = zn.get(z("/brokers/ids/" + id));
            expect(reg != null && reg.stat().getEphemeralOwner() == owners.get(id), "/brokers/ids/" + id + " "
                    + (reg == null ? "gone" : "owned by 0x" + Long.toHexString(reg.stat().getEphemeralOwner())));
        }
        int seen = admin().describeCluster().controller().get(30, TimeUnit.SECONDS).id();
        expect(seen == controller, "brokers report controller " + seen + ", want " + controller);
        return where.toString().trim() + "; controller still broker " + controller + ", epoch " + epoch0;
    }

    /** The consumer from the consume check reads exactly the load messages, in order per partition. */
    private String loadConsumed() throws Exception {
        int count = load.get(0).size() + load.get(1).size();
        Map<Integer, List<String>> got = read(consumer, count, Duration.ofSeconds(60));
        expect(got.equals(load), "read " + summary(got) + ", want " + summary(load)
                + (got.equals(load) ? "" : "; first difference " + firstDifference(got, load)));
        return count + " messages";
    }

    /**
     * ensemble.sh starts the killed member again with its data; it must come back as a follower whose last
     * zxid equals the leader's (polled: both read back to back until they agree), and a client connected to
     * it alone must read what the brokers wrote while it was down.
     */
    private String memberRejoins() throws Exception {
        long started = System.nanoTime();
        ensemble.restartDown();
        String mode = poll("member " + killedMember + " serves", Duration.ofSeconds(30),
                () -> ensemble.mode(killedMember), m -> !m.isEmpty(), false);
        expect(mode.equals("follower"), "member " + killedMember + " came back as " + mode + ", want follower");
        long[] pair = poll("member " + killedMember + "'s zxid == the leader's", Duration.ofSeconds(30), () -> {
            List<Integer> leaders = ensemble.leaders();
            if (leaders.size() != 1) {
                return null;
            }
            return new long[] {ensemble.zxid(leaders.get(0)), ensemble.zxid(killedMember)};
        }, z -> z[0] >= 0 && z[0] == z[1], false);
        double seconds = Checks.seconds(started);
        Znodes direct = Znodes.connect("127.0.0.1:" + ensemble.clientPort(killedMember));
        try {
            Znodes.Node here = direct.get(z("/controller"));
            Znodes.Node there = zn.get(z("/controller"));
            expect(here != null && there != null && here.stat().equals(there.stat()), "/controller on member "
                    + killedMember + ": " + (here == null ? "missing" : here.stat()) + ", elsewhere "
                    + (there == null ? "missing" : there.stat()));
            List<String> ids = direct.children(z("/brokers/ids"));
            expect(List.of("0", "1").equals(ids), "/brokers/ids on member " + killedMember + ": " + ids);
        } finally {
            direct.close();
        }
        return String.format("member %d follower at zxid 0x%x, %.1fs after the restart began", killedMember,
                pair[1], seconds);
    }

    /**
     * The secured runs (zookeeper.set.acl=true): Kafka creates its znodes with CREATOR_ALL_ACL, which the
     * server turns into an ACL for the session's authenticated id (the broker certificate's subject, or its
     * Kerberos principal; both brokers share one identity so that each can change what the other made), plus
     * world:anyone read except on sensitive paths (/config/brokers holds broker configs). A client on the
     * plaintext port, authenticated as nobody, may read the rest but change nothing.
     */
    private String acls() throws Exception {
        List<String> open = new ArrayList<>(List.of(identity + ":31", "world:anyone:1"));
        java.util.Collections.sort(open);
        String topic = "/brokers/topics/" + TOPIC;
        for (String path : List.of("/brokers/ids/0", "/brokers/ids/1", "/controller", "/controller_epoch",
                "/cluster/id", topic, topic + "/partitions/0/state", "/config/changes/config_change_0000000000")) {
            List<String> acl = zn.acl(z(path));
            expect(open.equals(acl), path + " ACL " + acl + ", want " + open);
        }
        List<String> closed = List.of(identity + ":31");
        List<String> acl = zn.acl(z("/config/brokers/<default>"));
        expect(closed.equals(acl), "/config/brokers/<default> ACL " + acl + ", want " + closed);
        Znodes stranger = Znodes.connectPlaintext(plainHosts);
        List<String> got = new ArrayList<>();
        try {
            var zk = stranger.zk();
            got.add(Znodes.outcome(() -> zk.setData(z("/controller"), new byte[0], -1)));
            got.add(Znodes.outcome(() -> zk.setData(z(topic), new byte[0], -1)));
            got.add(Znodes.outcome(() -> zk.create(z("/brokers/ids/7"), new byte[0],
                    org.apache.zookeeper.ZooDefs.Ids.OPEN_ACL_UNSAFE, org.apache.zookeeper.CreateMode.EPHEMERAL)));
            got.add(Znodes.outcome(() -> zk.delete(z("/brokers/ids/0"), -1)));
            got.add(Znodes.outcome(() -> zk.getData(z("/config/brokers/<default>"), false, null)));
            got.add(Znodes.outcome(() -> zk.getData(z("/controller"), false, null)));
        } finally {
            stranger.close();
        }
        List<String> want = List.of("NOAUTH", "NOAUTH", "NOAUTH", "NOAUTH", "NOAUTH", "ok");
        expect(want.equals(got), "unauthenticated setData /controller, setData " + topic
                + ", create /brokers/ids/7, delete /brokers/ids/0, get /config/brokers/<default>, get /controller: "
                + got + ", want " + want);
        return "ACL " + open + " (/config/brokers/<default>: " + closed + "); unauthenticated: " + got;
    }

    /**
     * A dynamic cluster-wide broker config: Kafka writes /config/brokers/<default> and a sequential
     * /config/changes/config_change_ znode; each broker learns of it through its child watch there and
     * reports the new value from its own memory.
     */
    private String configChange() throws Exception {
        String key = "log.retention.ms";
        String value = "604800001";
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        admin().incrementalAlterConfigs(Map.of(cluster, List.of(new AlterConfigOp(new ConfigEntry(key, value),
                AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
        Znodes.Node stored = zn.get(z("/config/brokers/<default>"));
        expect(stored != null && stored.json().path("config").path(key).asText("").equals(value),
                "/config/brokers/<default> " + (stored == null ? "missing" : stored.text()));
        List<String> changes = zn.children(z("/config/changes"));
        expect(List.of("config_change_0000000000").equals(changes), "/config/changes " + changes);
        if (changes != null && !changes.isEmpty()) {
            Znodes.Node change = zn.get(z("/config/changes/" + changes.get(0)));
            expect(change != null && change.json().path("entity_path").asText("").equals("brokers/<default>"),
                    "change notification " + (change == null ? "missing" : change.text()));
        }
        for (int id = 0; id <= 1; id++) {
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(id));
            poll("broker " + id + " reports " + key + "=" + value, Duration.ofSeconds(30), () -> {
                ConfigEntry e = admin().describeConfigs(List.of(broker)).all().get(30, TimeUnit.SECONDS)
                        .get(broker).get(key);
                return e == null ? null : e.value();
            }, value::equals, false);
        }
        return changes.toString();
    }

    /**
     * Deletion goes through /admin/delete_topics/T (a child watch of the controller), then the controller
     * deletes the topic's znodes recursively with multi[check /controller_epoch, delete] and finally the
     * request znode.
     */
    private String topicDeleted() throws Exception {
        String doomed = "paddock-doomed";
        admin().createTopics(List.of(new NewTopic(doomed, Map.of(0, List.of(1, 0))))).all()
                .get(60, TimeUnit.SECONDS);
        String state = z("/brokers/topics/" + doomed + "/partitions/0/state");
        poll(state + " with an ISR of 2", Duration.ofSeconds(30), () -> {
            Znodes.Node node = zn.get(state);
            return node == null ? null : node.json();
        }, st -> st.path("isr").size() == 2, false);
        expect(zn.get(z("/config/topics/" + doomed)) != null, "/config/topics/" + doomed + " missing");
        admin().deleteTopics(List.of(doomed)).all().get(60, TimeUnit.SECONDS);
        poll("/brokers/topics == [" + TOPIC + "]", Duration.ofSeconds(60), () -> zn.children(z("/brokers/topics")),
                List.of(TOPIC)::equals, false);
        poll("/admin/delete_topics empty", Duration.ofSeconds(30), () -> zn.children(z("/admin/delete_topics")),
                List::isEmpty, false);
        List<String> configs = zn.children(z("/config/topics"));
        expect(List.of(TOPIC).equals(configs), "/config/topics " + configs);
        Znodes.Node topic = zn.get(z("/brokers/topics/" + TOPIC));
        expect(topic != null && zn.children(z("/brokers/topics/" + TOPIC + "/partitions")).equals(List.of("0", "1")),
                "the other topic's znodes changed");
        // The brokers' metadata caches drop the topic after the znodes go (asynchronously).
        poll("brokers stop listing " + doomed, Duration.ofSeconds(30),
                () -> admin().listTopics().names().get(30, TimeUnit.SECONDS), names -> !names.contains(doomed), false);
        return null;
    }

    private String topicCreated() throws Exception {
        Map<Integer, List<Integer>> assignment = new LinkedHashMap<>();
        assignment.put(0, List.of(0, 1));
        assignment.put(1, List.of(1, 0));
        admin().createTopics(List.of(new NewTopic(TOPIC, assignment))).all().get(60, TimeUnit.SECONDS);
        Znodes.Node topic = zn.get(z("/brokers/topics/" + TOPIC));
        require(topic != null, "/brokers/topics/" + TOPIC + " missing after createTopics");
        JsonNode partitions = topic.json().path("partitions");
        expect(partitions.toString().equals("{\"0\":[0,1],\"1\":[1,0]}"), "topic znode partitions " + partitions);
        // createTopics returns once the broker that took the request knows the partitions; the other
        // broker's metadata cache follows asynchronously, and describeTopics may go to either one
        // (UnknownTopicOrPartitionException until then), on ZooKeeper as on paddock.
        TopicDescription described = poll("brokers describe " + TOPIC + " with 2 partitions", Duration.ofSeconds(30),
                () -> admin().describeTopics(List.of(TOPIC)).allTopicNames().get(30, TimeUnit.SECONDS).get(TOPIC),
                d -> d.partitions().size() == 2, false);
        String topicId = topic.json().path("topic_id").asText("");
        expect(topicId.equals(described.topicId().toString()), "topic znode topic_id " + topicId
                + ", brokers report " + described.topicId());
        for (TopicPartitionInfo p : described.partitions()) {
            expect(p.replicas().size() == 2, "partition " + p.partition() + " replicas " + p.replicas());
        }
        for (int p = 0; p <= 1; p++) {
            int leader = assignment.get(p).get(0);
            JsonNode state = partitionState(p, Duration.ofSeconds(30),
                    s -> s.path("isr").size() == 2 && s.path("leader").asInt() == leader);
            expect(state.path("controller_epoch").asInt() == epoch0, "partition " + p + " state " + state
                    + ": controller_epoch, want " + epoch0);
            expect(state.path("leader_epoch").asInt() == 0, "partition " + p + " state " + state
                    + ": leader_epoch, want 0");
        }
        return "partitions " + partitions;
    }

    private String produce() throws Exception {
        for (int p = 0; p <= 1; p++) {
            sent.put(p, new ArrayList<>());
        }
        List<CompletableFuture<RecordMetadata>> acks = new ArrayList<>();
        for (int i = 0; i < 2 * PER_PARTITION; i++) {
            acks.add(send(i % 2, "m" + i));
        }
        for (int i = 0; i < acks.size(); i++) {
            RecordMetadata md = acks.get(i).get(60, TimeUnit.SECONDS);
            expect(md.partition() == i % 2 && md.offset() == i / 2, "message m" + i + " acked at partition "
                    + md.partition() + " offset " + md.offset() + ", want " + (i % 2) + "/" + (i / 2));
        }
        return null;
    }

    private String consume() throws Exception {
        consumer = consumer(bootstrap());
        Map<Integer, List<String>> got = read(consumer, 2 * PER_PARTITION, Duration.ofSeconds(60));
        expect(got.equals(sent), "read " + got + ", want " + sent);
        return null;
    }

    private String killExpires(int victim) throws Exception {
        CompletableFuture<Long> idGone = zn.whenDeleted(z("/brokers/ids/" + victim));
        CompletableFuture<Long> controllerGone = zn.whenDeleted(z("/controller"));
        ProcessHandle broker = broker(victim);
        killedOwner = owners.get(victim);
        long killAt = System.nanoTime();
        broker.destroyForcibly();
        broker.onExit().get(10, TimeUnit.SECONDS);
        double idSeconds = waitDeleted(idGone, killAt, sessionTimeoutMs + 30_000, "/brokers/ids/" + victim);
        double controllerSeconds = waitDeleted(controllerGone, killAt, 5_000, "/controller");
        // The client pings after a third of the session timeout idle, so expiry comes 2/3 to 1 timeout after
        // the last ping, rounded up to the server's expiry tick.
        double low = sessionTimeoutMs * 0.6 / 1000;
        double high = sessionTimeoutMs / 1000.0 + 5;
        expect(idSeconds >= low && idSeconds <= high, String.format(
                "/brokers/ids/%d removed %.1fs after kill -9, want %.1f..%.1fs (session timeout %d ms)",
                victim, idSeconds, low, high, sessionTimeoutMs));
        expect(Math.abs(controllerSeconds - idSeconds) < 1.0, String.format(
                "/controller removed at %.1fs, /brokers/ids/%d at %.1fs: one session, one expiry",
                controllerSeconds, victim, idSeconds));
        return String.format("removed %.1fs after kill -9 (session timeout %.0fs)", idSeconds,
                sessionTimeoutMs / 1000.0);
    }

    private String newController(int survivor) throws Exception {
        Znodes.Node node = poll("/controller names broker " + survivor, Duration.ofSeconds(20),
                () -> zn.get(z("/controller")), n -> n.json().path("brokerid").asInt(-1) == survivor, true);
        expect(node.stat().getEphemeralOwner() == owners.get(survivor), "/controller owned by 0x"
                + Long.toHexString(node.stat().getEphemeralOwner()) + ", broker " + survivor + "'s session is 0x"
                + Long.toHexString(owners.get(survivor)));
        List<String> ids = zn.children(z("/brokers/ids"));
        expect(List.of(String.valueOf(survivor)).equals(ids), "/brokers/ids " + ids);
        controller = survivor;
        return "broker " + survivor;
    }

    private String epochIncremented(int elections) throws Exception {
        Znodes.Node epoch = zn.get(z("/controller_epoch"));
        Znodes.Node node = zn.get(z("/controller"));
        require(epoch != null && node != null, "/controller_epoch or /controller missing");
        int now = Integer.parseInt(epoch.text());
        expect(now == epoch0 + elections, "/controller_epoch " + now + ", want " + (epoch0 + elections));
        expect(epoch.stat().getVersion() == epochVersion0 + elections, "/controller_epoch dataVersion "
                + epoch.stat().getVersion() + ", want " + (epochVersion0 + elections));
        expect(epoch.stat().getMzxid() == node.stat().getCzxid(), "/controller_epoch mzxid 0x"
                + Long.toHexString(epoch.stat().getMzxid()) + " != /controller czxid 0x"
                + Long.toHexString(node.stat().getCzxid()));
        return epoch0 + " -> " + now;
    }

    private String leadersMoved(int victim, int survivor) throws Exception {
        StringBuilder states = new StringBuilder();
        for (int p = 0; p <= 1; p++) {
            JsonNode state = partitionState(p, Duration.ofSeconds(30), s -> s.path("leader").asInt() == survivor
                    && s.path("isr").toString().equals("[" + survivor + "]"));
            // Partition p's preferred leader is broker p.
            if (p == victim) {
                expect(state.path("controller_epoch").asInt() == epoch0 + 1, "partition " + p + " state " + state
                        + ": controller_epoch, want " + (epoch0 + 1));
                expect(state.path("leader_epoch").asInt() >= 1, "partition " + p + " state " + state
                        + ": leader_epoch did not move");
            }
            states.append(" p").append(p).append('=').append(state);
        }
        return states.toString().trim();
    }

    private String produceAfter() throws Exception {
        List<CompletableFuture<RecordMetadata>> acks = new ArrayList<>();
        List<Integer> offsets = new ArrayList<>();
        for (int p = 0; p <= 1; p++) {
            offsets.add(sent.get(p).size());
            acks.add(send(p, "after-failover-" + p));
        }
        for (int p = 0; p <= 1; p++) {
            RecordMetadata md = acks.get(p).get(90, TimeUnit.SECONDS);
            expect(md.partition() == p && md.offset() == offsets.get(p), "after-failover-" + p + " acked at "
                    + md.partition() + "/" + md.offset() + ", want " + p + "/" + offsets.get(p));
        }
        return null;
    }

    private String consumeAfter() throws Exception {
        Map<Integer, List<String>> fresh = read(consumer, 2, Duration.ofSeconds(60));
        Map<Integer, List<String>> want = new TreeMap<>();
        for (int p = 0; p <= 1; p++) {
            want.put(p, List.of("after-failover-" + p));
        }
        expect(fresh.equals(want), "the consumer from before the failover read " + fresh + ", want " + want);
        try (KafkaConsumer<String, String> again = consumer(bootstrap())) {
            Map<Integer, List<String>> all = read(again, sentCount(), Duration.ofSeconds(60));
            expect(all.equals(sent), "a new consumer read " + all + ", want " + sent);
        }
        return null;
    }

    private String reregistered(int victim, int survivor) throws Exception {
        startBroker("broker-" + victim);
        poll("/brokers/ids == [0, 1] again", Duration.ofSeconds(120), () -> zn.children(z("/brokers/ids")),
                List.of("0", "1")::equals, true);
        Znodes.Node node = zn.get(z("/brokers/ids/" + victim));
        require(node != null, "/brokers/ids/" + victim + " vanished");
        long owner = node.stat().getEphemeralOwner();
        expect(owner != 0 && owner != killedOwner && owner != owners.get(survivor), "re-registered under 0x"
                + Long.toHexString(owner) + " (killed session 0x" + Long.toHexString(killedOwner) + ")");
        owners.put(victim, owner);
        checkRegistration(victim, node);
        for (int p = 0; p <= 1; p++) {
            partitionState(p, Duration.ofSeconds(90), s -> s.path("isr").size() == 2);
        }
        return "session 0x" + Long.toHexString(owner);
    }

    private String termGone(int survivor) throws Exception {
        int last = 1 - survivor;
        CompletableFuture<Long> idGone = zn.whenDeleted(z("/brokers/ids/" + survivor));
        ProcessHandle broker = broker(survivor);
        termAt = System.nanoTime();
        broker.destroy();
        double seconds = waitDeleted(idGone, termAt, 60_000, "/brokers/ids/" + survivor);
        // Timed here, before waiting for the JVM to exit, and checked by the next check.
        try {
            handover = poll("/controller names broker " + last, Duration.ofSeconds(20),
                    () -> zn.get(z("/controller")), n -> n.json().path("brokerid").asInt(-1) == last, false);
            handoverSeconds = Checks.seconds(termAt);
        } catch (Checks.Fail e) {
            handoverError = e.getMessage();
        }
        expect(seconds < 4.0, String.format("/brokers/ids/%d removed %.1fs after SIGTERM, want < 4s "
                + "(the session is closed, not left to expire after %d ms)", survivor, seconds, sessionTimeoutMs));
        broker.onExit().get(60, TimeUnit.SECONDS);
        return String.format("removed %.1fs after SIGTERM", seconds);
    }

    private String termController(int last) throws Exception {
        expect(handoverError == null, handoverError);
        expect(handover != null, "not measured: the SIGTERM check stopped first");
        expect(handoverSeconds < 4.0, String.format("/controller named broker %d only %.1fs after SIGTERM", last,
                handoverSeconds));
        expect(handover.stat().getEphemeralOwner() == owners.get(last), "/controller owned by 0x"
                + Long.toHexString(handover.stat().getEphemeralOwner()) + ", broker " + last + "'s session is 0x"
                + Long.toHexString(owners.get(last)));
        epochIncremented(2);
        return String.format("broker %d, %.1fs after SIGTERM", last, handoverSeconds);
    }

    private String consumeLast(int last) throws Exception {
        try (KafkaConsumer<String, String> again = consumer(listeners.get(last))) {
            Map<Integer, List<String>> all = read(again, sentCount(), Duration.ofSeconds(60));
            expect(all.equals(sent), "read " + all + ", want " + sent);
        }
        return null;
    }

    // ---- helpers ------------------------------------------------------------------------------------

    private int sentCount() {
        int n = 0;
        for (List<String> values : sent.values()) {
            n += values.size();
        }
        return n;
    }

    private static String summary(Map<Integer, List<String>> perPartition) {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<Integer, List<String>> e : perPartition.entrySet()) {
            List<String> v = e.getValue();
            sb.append(e.getKey()).append(": ").append(v.size()).append(" messages");
            if (!v.isEmpty()) {
                sb.append(' ').append(v.get(0)).append("..").append(v.get(v.size() - 1));
            }
            sb.append("; ");
        }
        return sb.append('}').toString();
    }

    private static String firstDifference(Map<Integer, List<String>> got, Map<Integer, List<String>> want) {
        for (Integer p : want.keySet()) {
            List<String> g = got.getOrDefault(p, List.of());
            List<String> w = want.get(p);
            for (int i = 0; i < Math.max(g.size(), w.size()); i++) {
                String a = i < g.size() ? g.get(i) : "(nothing)";
                String b = i < w.size() ? w.get(i) : "(nothing)";
                if (!a.equals(b)) {
                    return "partition " + p + " #" + i + ": " + a + " instead of " + b;
                }
            }
        }
        return "none";
    }

    private JsonNode partitionState(int partition, Duration timeout, Predicate<JsonNode> ok) throws Exception {
        String path = z("/brokers/topics/" + TOPIC + "/partitions/" + partition + "/state");
        return poll(path + " as wanted", timeout, () -> {
            Znodes.Node node = zn.get(path);
            return node == null ? null : node.json();
        }, ok, false);
    }

    /** Polls until the probe's value passes; on timeout fails (or aborts) with the last value seen. */
    private static <T> T poll(String what, Duration timeout, Callable<T> probe, Predicate<T> ok, boolean abort)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        T last = null;
        Exception lastError = null;
        while (true) {
            try {
                last = probe.call();
                lastError = null;
                if (last != null && ok.test(last)) {
                    return last;
                }
            } catch (Checks.Fail | java.util.concurrent.ExecutionException
                    | org.apache.zookeeper.KeeperException.ConnectionLossException e) {
                // ConnectionLoss: this checker's own session is moving to another member (member kill).
                lastError = e;
            }
            if (System.nanoTime() > deadline) {
                String message = what + ": not within " + timeout.toSeconds() + " s; last "
                        + (lastError != null ? lastError.toString() : String.valueOf(last));
                throw abort ? new Checks.Abort(message) : new Checks.Fail(message);
            }
            Thread.sleep(100);
        }
    }

    private static double waitDeleted(CompletableFuture<Long> deleted, long since, long timeoutMs, String path)
            throws Exception {
        try {
            return (deleted.get(timeoutMs, TimeUnit.MILLISECONDS) - since) / 1e9;
        } catch (TimeoutException e) {
            throw new Checks.Abort(path + " still there " + timeoutMs / 1000 + " s later");
        }
    }

    private long pidOf(String name) throws IOException {
        return Long.parseLong(Files.readString(work.resolve(name + ".pid")).trim());
    }

    private ProcessHandle broker(int id) throws IOException {
        long pid = pidOf("broker-" + id);
        ProcessHandle handle = ProcessHandle.of(pid).orElse(null);
        require(handle != null && handle.isAlive(), "broker " + id + " (pid " + pid + ") is not running");
        return handle;
    }

    private void startBroker(String name) throws Exception {
        Process p = new ProcessBuilder("bash", brokerScript, name).inheritIO().start();
        require(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0, "broker.sh " + name + " failed");
    }

    private Admin admin() {
        if (admin == null) {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
            admin = Admin.create(props);
        }
        return admin;
    }

    private CompletableFuture<RecordMetadata> send(int partition, String value) {
        if (producer == null) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
            props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 90_000);
            props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            producer = new KafkaProducer<>(props);
        }
        sent.get(partition).add(value);
        CompletableFuture<RecordMetadata> ack = new CompletableFuture<>();
        producer.send(new ProducerRecord<>(TOPIC, partition, value, value), (md, e) -> {
            if (e != null) {
                ack.completeExceptionally(e);
            } else {
                ack.complete(md);
            }
        });
        return ack;
    }

    /** A group-less consumer of both partitions from the start: no offsets topic, no coordinator to fail. */
    private static KafkaConsumer<String, String> consumer(String bootstrap) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaConsumer<String, String> c = new KafkaConsumer<>(props);
        List<TopicPartition> parts = List.of(new TopicPartition(TOPIC, 0), new TopicPartition(TOPIC, 1));
        c.assign(parts);
        c.seekToBeginning(parts);
        return c;
    }

    /** Polls until count records arrived (or the timeout); returns the values per partition in arrival order. */
    private static Map<Integer, List<String>> read(KafkaConsumer<String, String> c, int count, Duration timeout) {
        Map<Integer, List<String>> got = new TreeMap<>();
        int n = 0;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (n < count && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
                n++;
            }
        }
        // A short extra poll so that surplus (duplicated) records show up as a mismatch.
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
            got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
        }
        return got;
    }

    private void closeClients() {
        if (consumer != null) {
            consumer.close(Duration.ofSeconds(5));
        }
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
        }
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
        if (zn != null) {
            try {
                zn.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
