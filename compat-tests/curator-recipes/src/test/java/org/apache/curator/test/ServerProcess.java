package org.apache.curator.test;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.test.compatibility.Timing2;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One server as a separate OS process on a fixed loopback port and data directory: paddock (the default,
 * {@code -Dpaddock.bin=...}) or, with {@code -Dpaddock.target=zookeeper}, Apache ZooKeeper's
 * ZooKeeperServerMain from the jars named by {@code -Dpaddock.zkClasspath}. It stands in for curator-test's
 * embedded server (TestingZooKeeperServer) with the same lifecycle: LATENT, STARTED, STOPPED, CLOSED.
 *
 * <p>Given a view of more than one InstanceSpec (TestingCluster's members), the process is one member of a
 * real ensemble: it gets a zoo.cfg in its data directory with one {@code server.<id>=127.0.0.1:<quorumPort>:
 * <electionPort>;<clientPort>} line per spec of the view and {@code myid} in its dataDir (paddock serve
 * --config, or ZooKeeper's QuorumPeerMain), and it serves once {@code srvr} reports Mode leader or follower.
 *
 * <p>Settings follow what curator-test's QuorumConfigBuilder gives the embedded server: tickTime from the
 * InstanceSpec or Timing2 (1000 ms by default), minSessionTimeout = tickTime, maxClientCnxns and custom
 * properties from the spec. The server-side system properties Curator's tests set before creating a server
 * (znode.container.checkIntervalMs, znode.container.maxPerMinute) are read at each start and passed on, as
 * the embedded server would read them. TTL nodes are always enabled.
 */
final class ServerProcess {
    private static final Logger log = LoggerFactory.getLogger(ServerProcess.class);

    /** Every process still running, killed by a JVM shutdown hook so that none outlives the test JVM. */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    private static final String[] FORWARDED_PROPERTIES = {
        "znode.container.checkIntervalMs", "znode.container.maxPerMinute",
    };

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly)));
    }

    private enum State {
        LATENT,
        STARTED,
        STOPPED,
        CLOSED
    }

    private final InstanceSpec spec;
    /** Every member of the ensemble this server belongs to, itself included; empty when standalone. */
    private final List<InstanceSpec> view;
    private volatile int port;
    private volatile State state = State.LATENT;
    private Process process;
    private File logFile;

    ServerProcess(InstanceSpec spec) {
        this(spec, List.of());
    }

    /** A member of the ensemble {@code view} (which contains {@code spec}); standalone when it has one spec. */
    ServerProcess(InstanceSpec spec, List<InstanceSpec> view) {
        this.spec = spec;
        this.view = view.size() > 1 ? List.copyOf(view) : List.of();
        this.port = spec.getPort();
        if (!this.view.isEmpty() && !this.view.contains(spec)) {
            throw new IllegalArgumentException(spec + " is not in its ensemble " + view);
        }
        for (InstanceSpec m : this.view) {
            // Every member's server.N line names all three ports, so none may be left to pick at start.
            if (m.getPort() <= 0 || m.getQuorumPort() <= 0 || m.getElectionPort() <= 0 || m.getServerId() <= 0) {
                throw new IllegalArgumentException("an ensemble member needs fixed ports and a server id: " + m);
            }
        }
    }

    boolean isMember() {
        return !view.isEmpty();
    }

    static String target() {
        return System.getProperty("paddock.target", "paddock");
    }

    InstanceSpec spec() {
        return spec;
    }

    /** The client port; a spec with port 0 gets a free port on its first start and keeps it. */
    int port() {
        if (port == 0) {
            throw new IllegalStateException("server is configured to bind to port 0 but not started");
        }
        return port;
    }

    synchronized void start() throws Exception {
        if (launch()) {
            awaitServing();
        }
    }

    /**
     * Starts the process without waiting for it to serve (an ensemble's members must all be up before any
     * of them can). Returns false when the server was not LATENT (then nothing happens, as in curator-test).
     */
    synchronized boolean launch() throws Exception {
        if (state != State.LATENT) {
            return false;
        }
        if (port == 0) {
            port = freePort();
        }
        File dataDir = spec.getDataDirectory();
        if (!dataDir.isDirectory() && !dataDir.mkdirs()) {
            throw new IOException("cannot create " + dataDir);
        }
        File logDir = new File(System.getProperty("paddock.logDir", System.getProperty("java.io.tmpdir")));
        logDir.mkdirs();
        logFile = new File(logDir, target() + "-" + port + ".log");
        List<String> cmd = target().equals("zookeeper") ? zookeeperCommand(dataDir) : paddockCommand(dataDir);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("NO_COLOR", "1"); // plain server logs
        pb.redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        process = pb.start();
        LIVE.add(process);
        state = State.STARTED;
        log.info(
                "started {} {}on port {} (pid {}, data {}, log {})",
                target(),
                isMember() ? "member " + spec.getServerId() + " of " + view.size() + " " : "",
                port,
                process.pid(),
                dataDir,
                logFile);
        return true;
    }

    /** Waits until the launched server serves (see waitUntilServing); a no-op unless STARTED. */
    synchronized void awaitServing() throws Exception {
        if (state == State.STARTED && process != null) {
            waitUntilServing(logFile);
        }
    }

    /**
     * SIGKILL, as curator-test's kill() drops the embedded server without a clean shutdown: no goodbye to
     * clients or peers. The data stays; the state becomes STOPPED, so restart() starts it again.
     */
    synchronized void kill() {
        if (state != State.STARTED) {
            return;
        }
        state = State.STOPPED;
        Process p = process;
        process = null;
        p.destroyForcibly();
        try {
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            LIVE.remove(p);
        }
        log.info("killed {} on port {} (SIGKILL)", target(), port);
    }

    synchronized void stop() throws IOException {
        if (state != State.STARTED) {
            return;
        }
        state = State.STOPPED;
        Process p = process;
        process = null;
        p.destroy(); // SIGTERM: paddock shuts down cleanly, ZooKeeper's JVM exits
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                log.warn("{} on port {} ignored SIGTERM for 10 s; killing it", target(), port);
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            LIVE.remove(p);
        }
        log.info("stopped {} on port {}", target(), port);
    }

    synchronized void restart() throws Exception {
        if (state == State.CLOSED) {
            throw new IllegalStateException("Cannot restart a closed instance");
        }
        stop();
        state = State.LATENT;
        start();
    }

    synchronized void close() throws IOException {
        stop();
        if (state == State.STOPPED || state == State.LATENT) {
            state = State.CLOSED;
            if (spec.deleteDataDirectoryOnClose()) {
                DirectoryUtils.deleteRecursively(spec.getDataDirectory());
            }
        }
    }

    private int tickTime() {
        return spec.getTickTime() > 0 ? spec.getTickTime() : new Timing2().tickTime();
    }

    /** zoo.cfg-style settings shared by both targets. */
    private List<String[]> settings() {
        List<String[]> s = new ArrayList<>();
        s.add(new String[] {"minSessionTimeout", Integer.toString(tickTime())});
        for (String key : FORWARDED_PROPERTIES) {
            String v = System.getProperty(key);
            if (v != null) {
                s.add(new String[] {key, v});
            }
        }
        for (Map.Entry<String, Object> e : spec.getCustomProperties().entrySet()) {
            s.add(new String[] {e.getKey(), String.valueOf(e.getValue())});
        }
        return s;
    }

    /**
     * An ensemble member's zoo.cfg lines (both targets): timing as curator-test's QuorumConfigBuilder gives
     * its members (initLimit 10, syncLimit 5), the client port on loopback, and one server.N line per member
     * of the view. Writes {@code myid} into {@code memberData}, the dataDir the file names.
     */
    private String memberConfig(File memberData) throws IOException {
        if (!memberData.isDirectory() && !memberData.mkdirs()) {
            throw new IOException("cannot create " + memberData);
        }
        java.nio.file.Files.writeString(new File(memberData, "myid").toPath(), spec.getServerId() + "\n");
        StringBuilder sb = new StringBuilder();
        sb.append("tickTime=").append(tickTime()).append('\n');
        sb.append("initLimit=10\nsyncLimit=5\n");
        sb.append("dataDir=").append(memberData.getAbsolutePath()).append('\n');
        sb.append("clientPort=").append(port).append('\n');
        sb.append("clientPortAddress=127.0.0.1\n");
        sb.append("4lw.commands.whitelist=*\nadmin.enableServer=false\n");
        for (InstanceSpec m : view) {
            sb.append("server.").append(m.getServerId()).append("=127.0.0.1:")
                    .append(m.getQuorumPort()).append(':').append(m.getElectionPort())
                    .append(";127.0.0.1:").append(m.getPort()).append('\n');
        }
        return sb.toString();
    }

    private List<String> paddockCommand(File dataDir) throws IOException {
        String bin = System.getProperty("paddock.bin", System.getenv("PADDOCK_BIN"));
        if (bin == null || bin.isEmpty()) {
            throw new IllegalStateException("set -Dpaddock.bin or PADDOCK_BIN to the paddock binary");
        }
        List<String> cmd = new ArrayList<>(List.of(bin, "serve"));
        if (isMember()) {
            // Raft state in a subdirectory: the spec's directory also holds zoo.cfg.
            File cfg = new File(dataDir, "zoo.cfg");
            java.nio.file.Files.writeString(cfg.toPath(), memberConfig(new File(dataDir, "paddock-data")));
            cmd.addAll(List.of("--config", cfg.getAbsolutePath()));
        } else {
            cmd.addAll(List.of(
                    "--port", Integer.toString(port),
                    "--data-dir", dataDir.getAbsolutePath(),
                    "--tick-time", Integer.toString(tickTime())));
        }
        cmd.add("--extended-types");
        if (spec.getMaxClientCnxns() >= 0) {
            cmd.add("--max-client-cnxns");
            cmd.add(Integer.toString(spec.getMaxClientCnxns()));
        }
        for (String[] kv : settings()) {
            cmd.add("-D");
            cmd.add(kv[0] + "=" + kv[1]);
        }
        return cmd;
    }

    private List<String> zookeeperCommand(File dataDir) throws IOException {
        String cp = System.getProperty("paddock.zkClasspath", "");
        if (cp.isEmpty()) {
            throw new IllegalStateException("-Dpaddock.target=zookeeper needs -Dpaddock.zkClasspath");
        }
        File cfg = new File(dataDir, "zoo.cfg");
        StringBuilder sb = new StringBuilder();
        if (isMember()) {
            sb.append(memberConfig(new File(dataDir, "zk-data")));
        } else {
            sb.append("tickTime=").append(tickTime()).append('\n');
            sb.append("clientPort=").append(port).append('\n');
            sb.append("clientPortAddress=127.0.0.1\n");
            sb.append("dataDir=").append(new File(dataDir, "zk-data").getAbsolutePath()).append('\n');
            sb.append("4lw.commands.whitelist=*\nadmin.enableServer=false\n");
        }
        if (spec.getMaxClientCnxns() >= 0) {
            sb.append("maxClientCnxns=").append(spec.getMaxClientCnxns()).append('\n');
        }
        List<String> cmd = new ArrayList<>(List.of(
                "java",
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.extendedTypesEnabled=true",
                "-Dzookeeper.admin.enableServer=false"));
        for (String[] kv : settings()) {
            if (kv[0].startsWith("znode.")) {
                cmd.add("-D" + kv[0] + "=" + kv[1]); // system properties only, as in the embedded server
            } else {
                sb.append(kv[0]).append('=').append(kv[1]).append('\n');
            }
        }
        java.nio.file.Files.writeString(cfg.toPath(), sb.toString());
        String main = isMember()
                ? "org.apache.zookeeper.server.quorum.QuorumPeerMain"
                : "org.apache.zookeeper.server.ZooKeeperServerMain";
        cmd.addAll(List.of("-cp", cp, main, cfg.getAbsolutePath()));
        return cmd;
    }

    /**
     * Waits until the server takes sessions: paddock answers ruok with imok once it serves; ZooKeeper answers
     * imok slightly before it accepts sessions, so for it we wait for `srvr` to report a version. An ensemble
     * member (either target) serves once `srvr` reports Mode leader or follower, i.e. it is part of a quorum.
     */
    private void waitUntilServing(File logFile) throws Exception {
        boolean zk = target().equals("zookeeper");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            if (isMember()) {
                String reply = fourLetter("srvr");
                if (reply.contains("\nMode: leader") || reply.contains("\nMode: follower")) {
                    return;
                }
            } else {
                String reply = fourLetter(zk ? "srvr" : "ruok");
                if (zk ? reply.startsWith("Zookeeper version:") : reply.equals("imok")) {
                    return;
                }
            }
            if (!process.isAlive() || System.nanoTime() > deadline) {
                String why = process.isAlive() ? "did not serve within 60 s" : "exited with " + process.exitValue();
                stop();
                throw new FailedServerStartException(
                        target() + " on port " + port + " " + why + "; see " + logFile);
            }
            Thread.sleep(20);
        }
    }

    private String fourLetter(String word) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return "";
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
