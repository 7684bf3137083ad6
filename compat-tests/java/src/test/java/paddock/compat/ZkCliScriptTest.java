package paddock.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * zkCli 3.9.5 driven by scripts on stdin (one session per script) and in one-shot mode. Expected outputs
 * are exact after replacing zxids, times and session ids; watch notifications are compared as their own
 * ordered list because zkCli prints them from another thread.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ZkCliScriptTest {
    private String root;

    @BeforeEach
    void setUp(TestInfo info) {
        root = Zk.uniqueRoot("cli-", info);
    }

    @AfterEach
    void tearDown() throws Exception {
        Zk.deleteTrees(root, "/zookeeper/quota" + root);
    }

    private List<String> lines(String text) {
        String t = text.replace("$R", root);
        if (t.endsWith("\n")) {
            t = t.substring(0, t.length() - 1);
        }
        return Arrays.asList(t.split("\n", -1));
    }

    private static String stat(String owner, int cversion, int dataVersion, int aclVersion, int dataLength,
            int numChildren) {
        return """
                cZxid = <zxid>
                ctime = <time>
                mZxid = <zxid>
                mtime = <time>
                pZxid = <zxid>
                cversion = %d
                dataVersion = %d
                aclVersion = %d
                ephemeralOwner = %s
                dataLength = %d
                numChildren = %d
                """.formatted(cversion, dataVersion, aclVersion, owner, dataLength, numChildren);
    }

    private ZkCli.Result run(String script) throws Exception {
        return ZkCli.script(lines(script));
    }

    private void assertOutput(String expected, ZkCli.Result r) {
        assertEquals(String.join("\n", lines(expected)), String.join("\n", r.output()), "raw output:\n" + r.raw());
    }

    private void assertEvents(String expected, ZkCli.Result r) {
        assertEquals(String.join("\n", lines(expected)), String.join("\n", r.events()), "raw output:\n" + r.raw());
    }

    private static final String CONNECTED = "WatchedEvent state:SyncConnected type:None path:null zxid: -1\n";

    @Test
    void createWithEveryModeAndItsErrors() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create $R/a hello
                create -e $R/eph e1
                create -s $R/seq- s
                create -c $R/cont
                create -t 100000 $R/ttl t
                create -s -e $R/es- x
                create $R/a again
                create $R/missing/x
                create -e $R/eph/child
                ls $R
                getEphemerals $R/es
                getAllChildrenNumber $R
                get -s $R/eph
                stat $R/ttl
                stat $R/cont
                """);
        assertOutput("""
                Created $R
                Created $R/a
                Created $R/eph
                Created $R/seq-0000000002
                Created $R/cont
                Created $R/ttl
                Created $R/es-0000000005
                Node already exists: $R/a
                Node does not exist: $R/missing/x
                Ephemerals cannot have children: $R/eph/child
                [a, cont, eph, es-0000000005, seq-0000000002, ttl]
                [$R/es-0000000005]
                6
                e1
                """ + stat("<session>", 0, 0, 0, 2, 0) + stat("0x0", 0, 0, 0, 1, 0) + stat("0x0", 0, 0, 0, 0, 0), r);
        assertEvents(CONNECTED, r);
        assertEquals(0, r.exitCode());
    }

    @Test
    void ephemeralsFromAScriptSessionVanishWhenItEnds() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create -e $R/eph e
                getEphemerals $R
                quit
                """);
        assertOutput("""
                Created $R
                Created $R/eph
                [$R/eph]
                """, r);
        try (CuratorFramework c = Zk.client()) {
            assertNull(c.checkExists().forPath(root + "/eph"), "quit closes the session, taking its ephemerals");
            assertEquals(List.of(), c.getChildren().forPath(root));
        }
    }

    @Test
    void lsRecursiveWithStatAndWatch() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create $R/a
                create $R/a/b x
                create $R/c
                ls -R $R
                ls -s $R
                ls -w $R
                create $R/d
                ls $R/none
                """);
        assertOutput("""
                Created $R
                Created $R/a
                Created $R/a/b
                Created $R/c
                $R
                $R/a
                $R/c
                $R/a/b
                [a, c]
                """ + stat("0x0", 2, 0, 0, 0, 2) + """
                [a, c]
                Created $R/d
                Node does not exist: $R/none
                """, r);
        assertEvents(CONNECTED + "WatchedEvent state:SyncConnected type:NodeChildrenChanged path:$R zxid: <zxid>\n", r);
        assertEquals(1, r.exitCode(), "the last command failed");
    }

    @Test
    void setWithVersionStatDeleteAndDeleteall() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create $R/a hello
                create $R/a/b
                set -v 7 $R/a z
                set -v 0 $R/a world
                set -s $R/a again
                stat $R/a
                get $R/a
                delete $R/a
                delete -v 5 $R/a/b
                delete -v 0 $R/a/b
                delete $R/none
                create $R/x
                create $R/x/y
                create $R/x/y/z
                deleteall $R/x
                stat $R/x
                ls $R
                """);
        assertOutput("""
                Created $R
                Created $R/a
                Created $R/a/b
                version No is not valid : $R/a
                """ + stat("0x0", 1, 2, 0, 5, 1) + stat("0x0", 1, 2, 0, 5, 1) + """
                again
                Node not empty: $R/a
                version No is not valid : $R/a/b
                Node does not exist: $R/none
                Created $R/x
                Created $R/x/y
                Created $R/x/y/z
                Node does not exist: $R/x
                [a]
                """, r);
    }

    @Test
    void aclCommandsWithAddauthAndWhoami() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create $R/a hello
                getAcl $R/a
                whoami
                addauth digest user1:pw1
                whoami
                setAcl $R/a auth:user1:pw1:cdrwa
                getAcl $R/a
                get $R/a
                setAcl -v 0 $R/a world:anyone:r
                setAcl -v 1 $R/a digest:user1:GMJqCvSAmNfv41XqBotWHO0HsNc=:rw,ip:127.0.0.1:r
                getAcl -s $R/a
                create $R/b b ip:127.0.0.1:cdrwa
                getAcl $R/b
                setAcl $R/b world:anyone:r
                setAcl $R/b world:anyone:c
                getAcl $R/b
                getAcl $R/none
                """);
        assertOutput("""
                Created $R
                Created $R/a
                'world,'anyone
                : cdrwa
                Auth scheme: User
                ip: 127.0.0.1
                Auth scheme: User
                ip: 127.0.0.1
                digest: user1
                'digest,'user1:GMJqCvSAmNfv41XqBotWHO0HsNc=
                : cdrwa
                hello
                version No is not valid : $R/a
                'digest,'user1:x
                : rw
                'ip,'127.0.0.1
                : r
                """ + stat("0x0", 0, 0, 2, 5, 0) + """
                Created $R/b
                'ip,'127.0.0.1
                : cdrwa
                Insufficient permission : $R/b
                'world,'anyone
                : r
                Node does not exist: $R/none
                """, r);
        // Without ADMIN on the node, getAcl shows digest ids with the hash redacted to "x" (ZooKeeper 3.9).
        // A session without the digest identity: read allowed only through ip, writes refused.
        ZkCli.Result other = run("""
                get $R/a
                set $R/a x
                whoami
                """);
        assertOutput("""
                hello
                Insufficient permission : $R/a
                Auth scheme: User
                ip: 127.0.0.1
                """, other);
    }

    @Test
    void syncAndConfigInStandalone() throws Exception {
        ZkCli.Result r = run("""
                create $R
                sync $R
                sync $R/none
                config
                get /zookeeper/config
                """);
        // sync of a missing path succeeds; standalone config is empty (zkCli prints a blank line for each of
        // the last two commands, and blank lines are dropped, so anything non-blank there fails).
        assertOutput("""
                Created $R
                Sync is OK
                Sync is OK
                """, r);
        assertEquals(0, r.exitCode());
    }

    @Test
    void quotaCommandsSetListAndDelete() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create $R/a hello
                create $R/b x
                setquota -n 5 $R
                setquota -b 100 $R
                listquota $R
                setquota -n 2 $R/a
                delquota -n $R
                listquota $R
                delquota $R
                listquota $R
                delquota $R
                setquota -n 1 $R
                """);
        assertOutput("""
                Created $R
                Created $R/a
                Created $R/b
                absolute path is /zookeeper/quota$R/zookeeper_limits
                Output quota for $R count=5,bytes=100=;byteHardLimit=-1;countHardLimit=-1
                Output stat for $R count=3,bytes=6
                $R/a has a parent $R which has a quota
                absolute path is /zookeeper/quota$R/zookeeper_limits
                Output quota for $R count=-1,bytes=100=;byteHardLimit=-1;countHardLimit=-1
                Output stat for $R count=3,bytes=6
                absolute path is /zookeeper/quota$R/zookeeper_limits
                quota for $R does not exist.
                Quota does not exist for $R
                [Warning]: the count quota you create is less than the existing count:3
                """, r);
    }

    @Test
    void addWatchPersistentRecursiveAndRemovewatches() throws Exception {
        ZkCli.Result r = run("""
                create $R
                addWatch -m PERSISTENT_RECURSIVE $R
                create $R/x
                create $R/x/y
                set $R/x/y data
                delete $R/x/y
                removewatches $R -a
                create $R/after
                addWatch -m PERSISTENT $R
                create $R/z
                set $R/z z
                removewatches $R
                removewatches $R
                """);
        assertOutput("""
                Created $R
                Created $R/x
                Created $R/x/y
                Created $R/after
                Created $R/z
                KeeperErrorCode = No such watcher for $R
                """, r);
        assertEvents(CONNECTED + """
                WatchedEvent state:SyncConnected type:NodeCreated path:$R/x zxid: <zxid>
                WatchedEvent state:SyncConnected type:NodeCreated path:$R/x/y zxid: <zxid>
                WatchedEvent state:SyncConnected type:NodeDataChanged path:$R/x/y zxid: <zxid>
                WatchedEvent state:SyncConnected type:NodeDeleted path:$R/x/y zxid: <zxid>
                WatchedEvent state:SyncConnected type:PersistentWatchRemoved path:$R zxid: -1
                WatchedEvent state:SyncConnected type:NodeChildrenChanged path:$R zxid: <zxid>
                WatchedEvent state:SyncConnected type:PersistentWatchRemoved path:$R zxid: -1
                """, r);
    }

    @Test
    void oneShotWatchesFromGetAndStatFireOnce() throws Exception {
        ZkCli.Result r = run("""
                create $R
                create $R/a hello
                get -s -w $R/a
                stat -w $R/a
                set $R/a one
                set $R/a two
                get -w $R/a
                delete $R/a
                """);
        assertOutput("""
                Created $R
                Created $R/a
                hello
                """ + stat("0x0", 0, 0, 0, 5, 0) + stat("0x0", 0, 0, 0, 5, 0) + """
                two
                """, r);
        // get -w and stat -w set the same data watch: one event for the first set, none for the second.
        assertEvents(CONNECTED + """
                WatchedEvent state:SyncConnected type:NodeDataChanged path:$R/a zxid: <zxid>
                WatchedEvent state:SyncConnected type:NodeDeleted path:$R/a zxid: <zxid>
                """, r);
    }

    @Test
    void oneShotModeRunsOneCommandAndReportsFailureInTheExitCode() throws Exception {
        ZkCli.Result created = ZkCli.oneShot("create", root, "data");
        assertEquals(0, created.exitCode(), created.raw());
        assertEquals(List.of("Created " + root), created.output().subList(created.output().size() - 1,
                created.output().size()));
        ZkCli.Result got = ZkCli.oneShot("get", root);
        assertEquals(0, got.exitCode(), got.raw());
        assertEquals("data", got.output().get(got.output().size() - 1));
        ZkCli.Result missing = ZkCli.oneShot("get", root + "/none");
        assertEquals(1, missing.exitCode(), missing.raw());
        assertEquals("Node does not exist: " + root + "/none", missing.output().get(missing.output().size() - 1));
    }

    /** Needs a server with zookeeper.enforceQuota=true, as run.sh starts both. */
    @Test
    void hardQuotasRefuseWritesOverTheLimit() throws Exception {
        ZkCli.Result r = run("""
                create $R
                setquota -N 3 $R
                create $R/a
                create $R/b
                create $R/c
                setquota -B 10 $R/a
                set $R/a 0123456789
                set $R/a 0123456789A
                create $R/a/x 01234567890
                listquota $R
                delquota -N $R
                create $R/c
                listquota $R
                setquota -n 1 -N 2 $R
                """);
        // -B on /a is refused (a parent has a quota), so only the count limit of 3 on $R applies; the
        // root itself counts, and bytes are counted but not limited.
        assertOutput("""
                Created $R
                Created $R/a
                Created $R/b
                Quota has exceeded : $R/c
                $R/a has a parent $R which has a quota
                Quota has exceeded : $R/a/x
                absolute path is /zookeeper/quota$R/zookeeper_limits
                Output quota for $R count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3
                Output stat for $R count=3,bytes=11
                Created $R/c
                absolute path is /zookeeper/quota$R/zookeeper_limits
                Output quota for $R count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=-1
                Output stat for $R count=4,bytes=11
                org.apache.commons.cli.AlreadySelectedException: The option 'N' was specified but an option from this group has already been selected: 'n'
                """, r);
    }
}
