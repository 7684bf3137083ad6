package dev.paddock.compat.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The server ensemble the brokers use, as scripts/ensemble.sh started it (member K: client port, dir mK with
 * zoo.cfg, server.pid, server.log), seen through four-letter words: {@code srvr} for a member's mode and
 * zxid, {@code cons} for the sessions connected to it. Kills a member with SIGKILL by the PID ensemble.sh
 * recorded and restarts it with {@code ensemble.sh start} (which starts only the members that are down,
 * with their data, and waits until every member serves and one leads).
 */
final class Ensemble {
    private static final Pattern MODE = Pattern.compile("(?m)^Mode: (\\S+)");
    private static final Pattern ZXID = Pattern.compile("(?m)^Zxid: 0x([0-9a-fA-F]+)");

    private final List<Integer> ports;
    private final Path dir;
    private final String script;
    private final boolean zookeeper;
    private final List<Integer> securePorts;
    private final SSLSocketFactory tls;

    /**
     * ports: the members' client ports, member K's at index K-1; securePorts: their secure client ports
     * (empty when the clients use plaintext), whose TLS connections only the secure port's {@code cons}
     * lists (ZooKeeper answers a four-letter word about the port's own connection factory), reached with
     * the key store and trust store of the JVM's zookeeper.ssl.* properties.
     */
    Ensemble(List<Integer> ports, List<Integer> securePorts, Path dir, String script, boolean zookeeper)
            throws Exception {
        this.ports = List.copyOf(ports);
        this.securePorts = List.copyOf(securePorts);
        this.dir = dir;
        this.script = script;
        this.zookeeper = zookeeper;
        this.tls = securePorts.isEmpty() ? null : tlsFactory();
    }

    /** A TLS client with zookeeper.ssl.keyStore (PKCS12) and zookeeper.ssl.trustStore (PEM, the CA). */
    private static SSLSocketFactory tlsFactory() throws Exception {
        char[] password = System.getProperty("zookeeper.ssl.keyStore.password", "").toCharArray();
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(Path.of(System.getProperty("zookeeper.ssl.keyStore.location")))) {
            keys.load(in, password);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, password);
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(Path.of(System.getProperty("zookeeper.ssl.trustStore.location")))) {
            int i = 0;
            for (var cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                trust.setCertificateEntry("ca" + i++, cert);
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return context.getSocketFactory();
    }

    /** The port the brokers' sessions use on member K: the secure one when the clients use TLS. */
    int clientPort(int member) {
        return securePorts.isEmpty() ? port(member) : securePorts.get(member - 1);
    }

    int size() {
        return ports.size();
    }

    int port(int member) {
        return ports.get(member - 1);
    }

    /** The four-letter word's reply from member K, or "" when it does not answer. */
    String fourLetter(int member, String word) {
        return fourLetter(member, word, false);
    }

    /** secure: through member K's secure client port, over TLS. */
    String fourLetter(int member, String word, boolean secure) {
        int port = secure ? securePorts.get(member - 1) : port(member);
        try (Socket s = secure ? tls.createSocket() : new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            s.setSoTimeout(3000);
            OutputStream out = s.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return "";
        }
    }

    /** Member K's Mode from srvr (leader, follower, ...), or "" while it does not serve. */
    String mode(int member) {
        Matcher m = MODE.matcher(fourLetter(member, "srvr"));
        return m.find() ? m.group(1) : "";
    }

    /** Member K's last zxid from srvr, or -1 while it does not serve. */
    long zxid(int member) {
        Matcher m = ZXID.matcher(fourLetter(member, "srvr"));
        return m.find() ? Long.parseUnsignedLong(m.group(1), 16) : -1;
    }

    /** The members whose srvr says leader (one, in a healthy ensemble). */
    List<Integer> leaders() {
        List<Integer> out = new ArrayList<>();
        for (int k = 1; k <= size(); k++) {
            if (mode(k).equals("leader")) {
                out.add(k);
            }
        }
        return out;
    }

    /** Whether member K's cons lists a connection of this session ({@code sid=0x...}). */
    boolean hasSession(int member, long session) {
        String sid = "sid=0x" + Long.toHexString(session).toLowerCase(Locale.ROOT) + ",";
        return fourLetter(member, "cons", !securePorts.isEmpty()).toLowerCase(Locale.ROOT).contains(sid);
    }

    /** The members whose cons lists the session (one, unless the client is between two). */
    List<Integer> membersWithSession(long session) {
        List<Integer> out = new ArrayList<>();
        for (int k = 1; k <= size(); k++) {
            if (hasSession(k, session)) {
                out.add(k);
            }
        }
        return out;
    }

    long pid(int member) throws IOException {
        return Long.parseLong(Files.readString(dir.resolve("m" + member).resolve("server.pid")).trim());
    }

    /** SIGKILL to member K; returns once the process is gone. */
    void kill(int member) throws Exception {
        long pid = pid(member);
        ProcessHandle p = ProcessHandle.of(pid).orElse(null);
        Checks.require(p != null && p.isAlive(), "member " + member + " (pid " + pid + ") is not running");
        p.destroyForcibly();
        p.onExit().get(10, TimeUnit.SECONDS);
    }

    /** ensemble.sh start: starts the members that are down and waits until all serve and one leads. */
    void restartDown() throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", script, "start", String.valueOf(size()), "--dir",
                dir.toString()));
        if (zookeeper) {
            cmd.add("--zookeeper");
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("restart.log").toFile())).start();
        Checks.require(p.waitFor(120, TimeUnit.SECONDS) && p.exitValue() == 0,
                "ensemble.sh start did not bring the ensemble back (see " + dir.resolve("restart.log") + ")");
    }
}
