package org.apache.curator.test;

import java.io.Closeable;
import java.io.IOException;
import java.util.Collection;

/**
 * Shadows curator-test 5.9.0's TestingZooKeeperServer (same package, name and public API): one member of a
 * TestingCluster, run as a separate process by ServerProcess instead of an embedded QuorumPeer. With one
 * spec in its QuorumConfigBuilder it is a standalone server, with more a member of a real ensemble (paddock
 * serve --config with server.N lines and myid, or ZooKeeper's QuorumPeerMain with -Dpaddock.target=zookeeper).
 *
 * <p>Lifecycle as in curator-test: start() only from LATENT; stop() leaves the data; kill() ends the process
 * at once (SIGKILL) and leaves it STOPPED; restart() stops it if running and starts it again on the same
 * ports and data, so it rejoins the ensemble; close() stops it and deletes its directory.
 */
public class TestingZooKeeperServer implements Closeable {
    private final QuorumConfigBuilder configBuilder;
    private final int thisInstanceIndex;
    private final ServerProcess server;

    public TestingZooKeeperServer(QuorumConfigBuilder configBuilder) {
        this(configBuilder, 0);
    }

    public TestingZooKeeperServer(QuorumConfigBuilder configBuilder, int thisInstanceIndex) {
        this.configBuilder = configBuilder;
        this.thisInstanceIndex = thisInstanceIndex;
        this.server = new ServerProcess(configBuilder.getInstanceSpec(thisInstanceIndex), configBuilder.getInstanceSpecs());
    }

    public Collection<InstanceSpec> getInstanceSpecs() {
        return configBuilder.getInstanceSpecs();
    }

    public void kill() {
        server.kill();
    }

    public void restart() throws Exception {
        server.restart();
    }

    public void stop() throws IOException {
        server.stop();
    }

    public InstanceSpec getInstanceSpec() {
        return configBuilder.getInstanceSpec(thisInstanceIndex);
    }

    @Override
    public void close() throws IOException {
        server.close();
        configBuilder.close();
    }

    public void start() throws Exception {
        server.start();
    }

    public int getLocalPort() {
        return server.port();
    }

    /** Starts the process without waiting for it to serve; TestingCluster.start() launches every member first. */
    boolean launch() throws Exception {
        return server.launch();
    }

    /** Waits until a launched member serves (srvr says leader or follower). */
    void awaitServing() throws Exception {
        server.awaitServing();
    }
}
