package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An interactive zkCli on a terminal (a tmux pane on a private tmux server), typed into like a person
 * would, while a second client checks what its session did: an ephemeral lives exactly as long as the
 * interactive session, and `close` ends the session without leaving the shell.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ZkCliTmuxTest {
    private final String socket = "paddock-java-" + UUID.randomUUID().toString().substring(0, 8);
    private final String root = Zk.uniqueRoot("tmux");
    private boolean started;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(onPath("tmux"), "tmux is not installed");
        String cmd = ZkCli.command().stream().map(ZkCliTmuxTest::shellQuote).collect(Collectors.joining(" "));
        tmux("new-session", "-d", "-s", "cli", "-x", "250", "-y", "50", cmd);
        started = true;
        awaitPane("WatchedEvent state:SyncConnected type:None path:null");
    }

    @AfterEach
    void stop() throws Exception {
        if (started) {
            // After quit the pane's process is gone and the private tmux server with it.
            try {
                tmux("kill-server");
            } catch (IOException alreadyGone) {
                // nothing left to stop
            }
        }
        Zk.deleteTrees(root);
    }

    @Test
    void interactiveSessionOwnsItsEphemeralUntilClose() throws Exception {
        type("create " + root + " top");
        awaitPane("Created " + root);
        type("create -e " + root + "/eph mine");
        awaitPane("Created " + root + "/eph");
        type("getEphemerals " + root);
        awaitPane("[" + root + "/eph]");

        try (CuratorFramework other = Zk.client()) {
            Stat s = other.checkExists().forPath(root + "/eph");
            assertNotNull(s, "ephemeral visible to another session");
            assertNotEquals(0L, s.getEphemeralOwner());
            assertNotEquals(other.getZookeeperClient().getZooKeeper().getSessionId(), s.getEphemeralOwner());
            assertEquals("mine", new String(other.getData().forPath(root + "/eph"), StandardCharsets.UTF_8));

            // A watch set interactively fires on the other client's write.
            type("get -w " + root);
            awaitPane("top");
            other.setData().forPath(root, "changed".getBytes(StandardCharsets.UTF_8));
            awaitPane("WatchedEvent state:SyncConnected type:NodeDataChanged path:" + root);

            type("close");
            assertTrue(Zk.await(Duration.ofSeconds(15), () -> {
                try {
                    return other.checkExists().forPath(root + "/eph") == null;
                } catch (Exception e) {
                    return false;
                }
            }), "close ends the session and removes its ephemeral");
            assertEquals(List.of(), other.getChildren().forPath(root));

            // The shell is still alive and can reconnect with a new session.
            type("connect " + Zk.hosts());
            awaitPaneCount("WatchedEvent state:SyncConnected type:None path:null", 2);
            type("ls " + root);
            awaitPane("[]");
            type("quit");
            assertTrue(Zk.await(Duration.ofSeconds(15), () -> {
                try {
                    tmux("has-session", "-t", "cli");
                    return false;
                } catch (IOException | InterruptedException gone) {
                    return true;
                }
            }), "quit leaves the shell");
        }
    }

    private void type(String line) throws IOException, InterruptedException {
        tmux("send-keys", "-t", "cli", "-l", line);
        tmux("send-keys", "-t", "cli", "Enter");
    }

    private String pane() throws IOException, InterruptedException {
        return tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", "cli");
    }

    private void awaitPane(String text) throws Exception {
        awaitPaneCount(text, 1);
    }

    private void awaitPaneCount(String text, int times) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        String last = "";
        while (System.nanoTime() < deadline) {
            last = pane();
            int n = 0;
            for (String l : last.split("\n")) {
                if (l.contains(text)) {
                    n++;
                }
            }
            if (n >= times) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("pane never showed " + times + "x '" + text + "'; pane:\n" + last);
    }

    private String tmux(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("tmux", "-L", socket));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("tmux " + String.join(" ", args) + " failed: " + out);
        }
        return out;
    }

    private static boolean onPath(String exe) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (new java.io.File(dir, exe).canExecute()) {
                return true;
            }
        }
        return false;
    }

    private static String shellQuote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
