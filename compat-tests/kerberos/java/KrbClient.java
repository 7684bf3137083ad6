import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

/**
 * ZooKeeper 3.9's Java client logging in with GSSAPI (the JAAS Client section, a keytab), for
 * compat-tests/kerberos. Prints one line per fact, read by run.sh:
 *   state SaslAuthenticated|AuthFailed|...   the first authentication event
 *   whoami scheme:id,...                     the ids whoAmI returns
 *   acl ok|NoAuth                            creating, reading and deleting a node only sasl:ID may use
 *   other NoAuth|read                        an unauthenticated client's read of that node
 * Usage: KrbClient HOST:PORT ID [PATH]
 */
public class KrbClient {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String id = args[1];
        String path = args.length > 2 ? args[2] : "/krb-java";
        CountDownLatch auth = new CountDownLatch(1);
        String[] state = {"none"};
        ZooKeeper zk = new ZooKeeper(connect, 10000, e -> {
            KeeperState s = e.getState();
            if (s == KeeperState.SaslAuthenticated || s == KeeperState.AuthFailed) {
                synchronized (state) {
                    if (state[0].equals("none")) {
                        state[0] = s.toString();
                    }
                }
                auth.countDown();
            }
        });
        auth.await(20, TimeUnit.SECONDS);
        System.out.println("state " + state[0]);
        if (!state[0].equals("SaslAuthenticated")) {
            zk.close();
            System.exit(0);
        }
        List<ClientInfo> who = zk.whoAmI();
        StringBuilder sb = new StringBuilder();
        for (ClientInfo ci : who) {
            if (sb.length() > 0) {
                sb.append(',');
            }
            sb.append(ci.getAuthScheme()).append(':').append(ci.getUser());
        }
        System.out.println("whoami " + sb);
        List<ACL> acl = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", id)));
        try {
            zk.create(path, "k".getBytes(), acl, CreateMode.PERSISTENT);
            zk.getData(path, false, null);
            System.out.println("acl ok");
        } catch (KeeperException.NoAuthException e) {
            System.out.println("acl NoAuth");
        }
        ZooKeeper other = new ZooKeeper(connect, 10000, e -> { }, new org.apache.zookeeper.client.ZKClientConfig() {
            {
                setProperty(org.apache.zookeeper.client.ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
            }
        });
        try {
            other.getData(path, false, null);
            System.out.println("other read");
        } catch (KeeperException.NoAuthException e) {
            System.out.println("other NoAuth");
        } catch (KeeperException.NoNodeException e) {
            System.out.println("other NoNode");
        }
        other.close();
        try {
            zk.delete(path, -1);
        } catch (KeeperException e) {
            System.out.println("delete " + e.code());
        }
        zk.close();
    }
}
