package org.apache.curator.test;

import java.io.Closeable;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.zookeeper.ZooKeeper;
import org.opentest4j.TestAbortedException;

/**
 * Shadows curator-test's TestingCluster: paddock has no ensemble yet (and --ignore-peers servers would be
 * independent stores, not an ensemble), so every way into a cluster aborts the calling test, which JUnit
 * and surefire then report as skipped with this reason. The public signatures match curator-test 5.9.0's so
 * that the test classes link.
 */
public class TestingCluster implements Closeable {
    static final String REASON = "paddock has no ensemble yet (TestingCluster)";

    private static TestAbortedException noEnsemble() {
        return new TestAbortedException(REASON);
    }

    public TestingCluster(int instanceQty) {
        throw noEnsemble();
    }

    public TestingCluster(InstanceSpec... specs) {
        throw noEnsemble();
    }

    public TestingCluster(Collection<InstanceSpec> specs) {
        throw noEnsemble();
    }

    public TestingCluster(Map<InstanceSpec, Collection<InstanceSpec>> specs) {
        throw noEnsemble();
    }

    public Collection<InstanceSpec> getInstances() {
        throw noEnsemble();
    }

    public List<TestingZooKeeperServer> getServers() {
        throw noEnsemble();
    }

    public String getConnectString() {
        throw noEnsemble();
    }

    public void start() throws Exception {
        throw noEnsemble();
    }

    public void stop() throws IOException {
        throw noEnsemble();
    }

    @Override
    public void close() throws IOException {
        throw noEnsemble();
    }

    public boolean killServer(InstanceSpec instance) throws Exception {
        throw noEnsemble();
    }

    public boolean restartServer(InstanceSpec instance) throws Exception {
        throw noEnsemble();
    }

    public InstanceSpec findConnectionInstance(ZooKeeper client) throws Exception {
        throw noEnsemble();
    }

    public static Map<InstanceSpec, Collection<InstanceSpec>> makeSpecs(int instanceQty) {
        throw noEnsemble();
    }

    public static Map<InstanceSpec, Collection<InstanceSpec>> makeSpecs(int instanceQty, boolean resetServerIds) {
        throw noEnsemble();
    }
}
