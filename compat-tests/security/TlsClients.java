// ZooKeeper 3.9.5's Java client and Curator 5.9 over the client port's TLS, for the security suite's
// group `client` (run.sh). Run as a single source file with the Java client's TLS as system properties:
//
//   java -cp CP -Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
//        -Dzookeeper.ssl.keyStore.location=... -Dzookeeper.ssl.trustStore.location=... TlsClients.java MODE HOST:PORT [ARG]
//
//   whoami HOST:PORT        prints whoAmI as `scheme:user`, one per line, sorted (ZooKeeper keeps a
//                           connection's ids in a hash set, so their order means nothing)
//   own HOST:PORT PATH      creates PATH readable only by this client's x509 id (the whoAmI one), reads it
//   read HOST:PORT PATH     reads PATH: prints `ok` or the error code's name
//   curator HOST:PORT PATH  Curator: creates PATH (with parents), reads it, takes and releases an
//                           InterProcessMutex under it
//
// Exit status: 0 done, 1 a request failed, 3 no session within 15 s (a refused handshake).
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

public class TlsClients {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String hp = args[1];
        try {
            switch (mode) {
                case "whoami" -> {
                    ZooKeeper zk = connect(hp);
                    for (String s : whoAmI(zk)) {
                        System.out.println(s);
                    }
                    zk.close();
                }
                case "own" -> {
                    ZooKeeper zk = connect(hp);
                    String x509 = null;
                    for (ClientInfo c : zk.whoAmI()) {
                        if (c.getAuthScheme().equals("x509")) {
                            x509 = c.getUser();
                        }
                    }
                    if (x509 == null) {
                        System.out.println("no x509 id: " + whoAmI(zk));
                        System.exit(1);
                    }
                    // A mutable list: ZooKeeper.validateACL asks it contains(null), which List.of refuses.
                    List<ACL> acl = new ArrayList<>();
                    acl.add(new ACL(ZooDefs.Perms.ALL, new Id("x509", x509)));
                    zk.create(args[2], "mine".getBytes(StandardCharsets.UTF_8), acl, CreateMode.PERSISTENT);
                    System.out.println(new String(zk.getData(args[2], false, null), StandardCharsets.UTF_8));
                    zk.close();
                }
                case "read" -> {
                    ZooKeeper zk = connect(hp);
                    try {
                        zk.getData(args[2], false, null);
                        System.out.println("ok");
                    } catch (KeeperException e) {
                        System.out.println(e.code());
                    }
                    zk.close();
                }
                case "curator" -> curator(hp, args[2]);
                default -> {
                    System.out.println("unknown mode " + mode);
                    System.exit(2);
                }
            }
        } catch (KeeperException e) {
            System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            System.exit(1);
        }
        System.exit(0);
    }

    static List<String> whoAmI(ZooKeeper zk) throws Exception {
        List<String> out = new ArrayList<>();
        for (ClientInfo c : zk.whoAmI()) {
            out.add(c.getAuthScheme() + ":" + c.getUser());
        }
        Collections.sort(out);
        return out;
    }

    static ZooKeeper connect(String hp) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(hp, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(15, TimeUnit.SECONDS)) {
            System.out.println("no session");
            zk.close();
            System.exit(3);
        }
        return zk;
    }

    static void curator(String hp, String path) throws Exception {
        try (CuratorFramework c = CuratorFrameworkFactory.newClient(hp, 10000, 10000, new RetryOneTime(500))) {
            c.start();
            if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
                System.out.println("no session");
                System.exit(3);
            }
            c.create().creatingParentsIfNeeded().forPath(path, "curator".getBytes(StandardCharsets.UTF_8));
            String got = new String(c.getData().forPath(path), StandardCharsets.UTF_8);
            InterProcessMutex lock = new InterProcessMutex(c, path + "-lock");
            if (!lock.acquire(10, TimeUnit.SECONDS)) {
                System.out.println("lock not acquired");
                System.exit(1);
            }
            lock.release();
            System.out.println(got + " locked");
        }
    }
}
