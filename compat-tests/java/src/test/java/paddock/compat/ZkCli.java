package paddock.compat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * Runs zkCli (org.apache.zookeeper.ZooKeeperMain) from the test classpath in a child JVM. Without jline on
 * the classpath zkCli reads commands line by line from stdin, so a script runs in one session.
 */
final class ZkCli {
    private ZkCli() {}

    /** What one zkCli process printed (stdout and stderr merged, in order), split and normalised. */
    record Result(int exitCode, List<String> output, List<String> events, String raw) {}

    private static final Pattern ZXID = Pattern.compile("^(cZxid|mZxid|pZxid) = 0x[0-9a-f]+$");
    private static final Pattern TIME = Pattern.compile("^(ctime|mtime) = .+$");
    private static final Pattern OWNER = Pattern.compile("^ephemeralOwner = 0x[0-9a-f]*[1-9a-f][0-9a-f]*$");
    private static final Pattern EVENT_ZXID = Pattern.compile("zxid: (?!-1$)\\d+$");

    static String classpath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null && !cp.isBlank() ? cp : System.getProperty("java.class.path");
    }

    static Path javaBin() {
        return Paths.get(System.getProperty("java.home"), "bin", "java");
    }

    /** The command line for zkCli against ZK_HOSTS, followed by one-shot arguments if any. */
    static List<String> command(String... oneShot) {
        List<String> cmd = new ArrayList<>(List.of(javaBin().toString(), "-Xmx128m", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.extendedTypesEnabled=true",
                "-cp", classpath(), "org.apache.zookeeper.ZooKeeperMain", "-server", Zk.hosts()));
        cmd.addAll(List.of(oneShot));
        return cmd;
    }

    /** Feeds the script lines to one zkCli session and waits for it to exit at end of input. */
    static Result script(List<String> lines) throws IOException, InterruptedException {
        return run(command(), String.join("\n", lines) + "\n");
    }

    /** One-shot mode: a single command given as arguments. */
    static Result oneShot(String... args) throws IOException, InterruptedException {
        return run(command(args), "");
    }

    private static Result run(List<String> cmd, String stdin) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Thread reader = new Thread(() -> copy(p.getInputStream(), out));
        reader.start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("zkCli did not exit; output so far:\n" + out);
        }
        reader.join(5000);
        String raw = out.toString(StandardCharsets.UTF_8);
        return split(p.exitValue(), raw);
    }

    private static void copy(InputStream in, ByteArrayOutputStream out) {
        try {
            in.transferTo(out);
        } catch (IOException e) {
            // the process went away; what was read is kept
        }
    }

    /**
     * Separates watch notifications (printed by the event thread as blank, "WATCHER::", blank,
     * "WatchedEvent ...") from command output (printed by the main thread), since the two threads race
     * line by line,
     * and replaces zxids, times and session ids, which differ from run to run.
     */
    static Result split(int exit, String raw) {
        List<String> lines = new ArrayList<>(List.of(raw.split("\n", -1)));
        if (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty()) {
            lines.remove(lines.size() - 1);
        }
        List<String> output = new ArrayList<>();
        List<String> events = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            // The event thread's blank lines can land between any two output lines, so blank lines are
            // dropped everywhere (no zkCli command prints a meaningful blank line except an empty value).
            if (l.equals("WATCHER::") || l.isEmpty()) {
                continue;
            }
            if (l.startsWith("WatchedEvent ")) {
                events.add(EVENT_ZXID.matcher(l).replaceAll("zxid: <zxid>"));
                continue;
            }
            if (l.startsWith("Connecting to ") || l.equals("Welcome to ZooKeeper!")
                    || l.equals("JLine support is disabled") || l.contains("Exiting JVM with code")) {
                continue;
            }
            l = ZXID.matcher(l).replaceAll("$1 = <zxid>");
            l = TIME.matcher(l).replaceAll("$1 = <time>");
            l = OWNER.matcher(l).replaceAll("ephemeralOwner = <session>");
            output.add(l);
        }
        return new Result(exit, output, events, raw);
    }
}
