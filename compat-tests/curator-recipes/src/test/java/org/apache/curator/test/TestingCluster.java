package org.apache.curator.test;

import java.io.Closeable;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shadows curator-test 5.9.0's TestingCluster (same package, name and public API): every member is a real
 * server process (TestingZooKeeperServer -> ServerProcess) and together they form a real ensemble: paddock
 * members started from zoo.cfg files with server.N lines and myid (as compat-tests/lib.sh's
 * start_paddock_ensemble does), or Apache ZooKeeper's QuorumPeerMain with -Dpaddock.target=zookeeper.
 *
 * <p>As in curator-test: the specs come from InstanceSpec.newInstanceSpec() (random ports, server ids from
 * 1 after InstanceSpec.reset()), each member's view is the collection it is mapped to, killServer() kills
 * the member abruptly (SIGKILL here), restartServer() starts it again on its ports and data, stop() keeps
 * the data (a new TestingCluster over the same specs starts from it), close() deletes it, and
 * findConnectionInstance() names the member a ZooKeeper handle is connected to. start() launches every
 * member first and then waits until each serves (srvr says leader or follower), because no member of an
 * ensemble can serve before a quorum of them runs.
 */
public class TestingCluster implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(TestingCluster.class);

    private final List<TestingZooKeeperServer> servers;

    public TestingCluster(int instanceQty) {
        this(makeSpecs(instanceQty));
    }

    public TestingCluster(InstanceSpec... specs) {
        this(listToMap(List.of(specs)));
    }

    public TestingCluster(Collection<InstanceSpec> specs) {
        this(listToMap(specs));
    }

    public TestingCluster(Map<InstanceSpec, Collection<InstanceSpec>> specs) {
        List<TestingZooKeeperServer> list = new ArrayList<>();
        for (Map.Entry<InstanceSpec, Collection<InstanceSpec>> entry : specs.entrySet()) {
            List<InstanceSpec> view = new ArrayList<>(entry.getValue());
            int index = view.indexOf(entry.getKey());
            if (index < 0) {
                throw new IllegalStateException(entry.getKey() + " not in specs");
            }
            list.add(new TestingZooKeeperServer(new QuorumConfigBuilder(view), index));
        }
        servers = Collections.unmodifiableList(list);
    }

    public Collection<InstanceSpec> getInstances() {
        List<InstanceSpec> specs = new ArrayList<>();
        for (TestingZooKeeperServer server : servers) {
            specs.add(server.getInstanceSpec());
        }
        return specs;
    }

    public List<TestingZooKeeperServer> getServers() {
        return new ArrayList<>(servers);
    }

    public String getConnectString() {
        StringBuilder sb = new StringBuilder();
        for (InstanceSpec spec : getInstances()) {
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(spec.getConnectString());
        }
        return sb.toString();
    }

    public void start() throws Exception {
        List<TestingZooKeeperServer> launched = new ArrayList<>();
        for (TestingZooKeeperServer server : servers) {
            if (server.launch()) {
                launched.add(server);
            }
        }
        for (TestingZooKeeperServer server : launched) {
            server.awaitServing();
        }
        if (!launched.isEmpty()) {
            log.info("cluster of {} serving: {}", servers.size(), getConnectString());
        }
    }

    public void stop() throws IOException {
        for (TestingZooKeeperServer server : servers) {
            server.stop();
        }
    }

    @Override
    public void close() throws IOException {
        for (TestingZooKeeperServer server : servers) {
            server.close();
        }
    }

    public boolean killServer(InstanceSpec instance) throws Exception {
        for (TestingZooKeeperServer server : servers) {
            if (server.getInstanceSpec().equals(instance)) {
                server.kill();
                return true;
            }
        }
        return false;
    }

    public boolean restartServer(InstanceSpec instance) throws Exception {
        for (TestingZooKeeperServer server : servers) {
            if (server.getInstanceSpec().equals(instance)) {
                server.restart();
                return true;
            }
        }
        return false;
    }

    /** The member whose client port the handle is connected to (ZooKeeper's testableRemoteSocketAddress). */
    public InstanceSpec findConnectionInstance(ZooKeeper client) throws Exception {
        Method m = ZooKeeper.class.getDeclaredMethod("testableRemoteSocketAddress");
        m.setAccessible(true);
        InetSocketAddress address = (InetSocketAddress) m.invoke(client);
        if (address != null) {
            for (TestingZooKeeperServer server : servers) {
                if (server.getInstanceSpec().getPort() == address.getPort()) {
                    return server.getInstanceSpec();
                }
            }
        }
        return null;
    }

    public static Map<InstanceSpec, Collection<InstanceSpec>> makeSpecs(int instanceQty) {
        return makeSpecs(instanceQty, true);
    }

    public static Map<InstanceSpec, Collection<InstanceSpec>> makeSpecs(int instanceQty, boolean resetServerIds) {
        if (resetServerIds) {
            InstanceSpec.reset();
        }
        List<InstanceSpec> specs = new ArrayList<>();
        for (int i = 0; i < instanceQty; ++i) {
            specs.add(InstanceSpec.newInstanceSpec());
        }
        return listToMap(specs);
    }

    private static Map<InstanceSpec, Collection<InstanceSpec>> listToMap(Collection<InstanceSpec> specs) {
        List<InstanceSpec> view = List.copyOf(specs);
        Map<InstanceSpec, Collection<InstanceSpec>> map = new LinkedHashMap<>();
        for (InstanceSpec spec : view) {
            map.put(spec, view);
        }
        return map;
    }
}
