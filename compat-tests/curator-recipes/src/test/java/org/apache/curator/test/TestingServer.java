package org.apache.curator.test;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shadows curator-test 5.9.0's TestingServer (same package, name and public API) so that Curator's own
 * tests run against a real server process (paddock, or Apache ZooKeeper with -Dpaddock.target=zookeeper)
 * instead of the embedded Java ZooKeeper. Compiled into target/test-classes, which surefire puts before
 * curator-test's jar; the first instance logs the location it was loaded from so a run shows which class won.
 *
 * <p>Semantics kept from the original: the server listens on the spec's port (a free one when 0, fixed
 * after the first start) and keeps its data in the spec's directory; stop() leaves the directory, restart()
 * stops and starts the same server on the same port and data, so sessions and znodes survive it; close()
 * stops and deletes the directory (when the spec says so); restart() after close() throws.
 */
public class TestingServer implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(TestingServer.class);
    private static volatile boolean announced;

    private final ServerProcess server;

    public TestingServer() throws Exception {
        this(-1, null, true);
    }

    public TestingServer(boolean start) throws Exception {
        this(-1, null, start);
    }

    public TestingServer(int port) throws Exception {
        this(port, null, true);
    }

    public TestingServer(int port, boolean start) throws Exception {
        this(port, null, start);
    }

    public TestingServer(int port, File tempDirectory) throws Exception {
        this(port, tempDirectory, true);
    }

    public TestingServer(int port, File tempDirectory, boolean start) throws Exception {
        this(new InstanceSpec(tempDirectory, Math.max(0, port), -1, -1, true, -1), start);
    }

    public TestingServer(InstanceSpec spec, boolean start) throws Exception {
        if (!announced) {
            announced = true;
            log.info(
                    "paddock shadow TestingServer loaded from {}; target {}",
                    TestingServer.class.getProtectionDomain().getCodeSource().getLocation(),
                    ServerProcess.target());
        }
        server = new ServerProcess(spec);
        if (start) {
            server.start();
        }
    }

    public int getPort() {
        return server.port();
    }

    public File getTempDirectory() {
        return server.spec().getDataDirectory();
    }

    public void start() throws Exception {
        server.start();
    }

    public void stop() throws IOException {
        server.stop();
    }

    public void restart() throws Exception {
        server.restart();
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    public String getConnectString() {
        return server.spec().getHostname() + ":" + getPort();
    }
}
