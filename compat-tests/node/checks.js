'use strict';
// node-zookeeper-client against one server (ZK_CONNECT=host:port): each check prints `ok <name>` or
// `FAIL <name>: <why>`, and the last line is `summary <passed> <failed>` for run.sh.
// Every check works under its own fresh path below one run root, so checks do not see each other's nodes and
// the same expectations hold on a fresh or a reused server. Waits are events or replies with a deadline.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const zk = require('node-zookeeper-client');

const { Exception, CreateMode, Event, ACL, Id, Permission } = zk;
const CONNECT = process.env.ZK_CONNECT || '127.0.0.1:2181';
const CHECK_MS = Number(process.env.CHECK_TIMEOUT_MS || 20000);
const RUN_ROOT = `/node-compat-${process.pid}-${Date.now()}`;
const OP = { CREATE: 1, DELETE: 2, SET_DATA: 5, CHECK: 13, ERROR: -1 };
const ZERO_LONG = Buffer.alloc(8);

// ---- plumbing -------------------------------------------------------------------------------------

function withDeadline(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Calls a callback-style client method and resolves with its results (one value, or an array for several).
function call(client, method, ...args) {
    return new Promise((resolve, reject) => {
        client[method](...args, (err, ...results) => {
            if (err) reject(err);
            else resolve(results.length <= 1 ? results[0] : results);
        });
    });
}

// Resolves with the Exception a call fails with; rejects if it succeeds.
async function failure(promise) {
    try {
        const value = await promise;
        throw new assert.AssertionError({ message: `expected an error, got success (${inspect(value)})` });
    } catch (err) {
        if (err instanceof assert.AssertionError) throw err;
        return err;
    }
}

function assertCode(err, code, what) {
    assert.ok(err instanceof Exception, `${what}: expected an Exception, got ${err && err.stack}`);
    assert.equal(err.getCode(), code, `${what}: code ${err.getCode()} (${err.getName()}), expected ${code}`);
}

function inspect(v) {
    return require('node:util').inspect(v, { depth: 4, breakLength: Infinity });
}

function hex(buf) {
    return Buffer.isBuffer(buf) ? buf.toString('hex') : String(buf);
}

// zxids and times are 8-byte big-endian buffers in this client.
function long(buf) {
    return buf.readBigInt64BE(0);
}

const clients = new Set();

// Connects and resolves once the session is established. ZooKeeper answers imok a little before it accepts
// sessions; the client retries on its own, so waiting for `connected` with a deadline covers that.
async function connect(connectString = CONNECT) {
    const client = zk.createClient(connectString, { sessionTimeout: 10000, spinDelay: 100, retries: 0 });
    clients.add(client);
    const connected = new Promise((resolve) => client.once('connected', resolve));
    client.connect();
    await withDeadline(connected, 15000, `a session on ${connectString}`);
    return client;
}

// Closes the session (closeSession, then the socket) and resolves when the client reports it disconnected.
async function close(client) {
    const disconnected = new Promise((resolve) => client.once('disconnected', resolve));
    client.close();
    await withDeadline(disconnected, 10000, 'the client to disconnect after close');
    clients.delete(client);
}

// A watcher that records every event; next() resolves with the next one (deadline included).
function recorder() {
    const events = [];
    const waiting = [];
    const fn = (event) => {
        events.push(event);
        const w = waiting.shift();
        if (w) w(event);
    };
    let delivered = 0;
    return {
        fn,
        events,
        next(what = 'a watch event') {
            if (delivered < events.length) return Promise.resolve(events[delivered++]);
            return withDeadline(new Promise((resolve) => waiting.push(resolve)), 10000, what).then((e) => {
                delivered++;
                return e;
            });
        },
    };
}

function assertEvent(event, type, path) {
    assert.ok(event instanceof Event, `not an Event: ${inspect(event)}`);
    assert.deepEqual({ type: event.getType(), name: event.getName(), path: event.getPath() },
        { type, name: Object.keys(Event).find((k) => Event[k] === type), path });
}

const checks = [];
function check(name, fn) {
    checks.push({ name, fn });
}

// ---- checks ---------------------------------------------------------------------------------------

check('create_getdata_setdata_remove_stats', async ({ c, base }) => {
    const p = `${base}/n`;
    assert.equal(await call(c, 'create', p, Buffer.from('hello')), p);
    const [data, stat] = await call(c, 'getData', p);
    assert.equal(data.toString(), 'hello');
    assert.deepEqual(
        [stat.version, stat.cversion, stat.aversion, stat.numChildren, stat.dataLength, hex(stat.ephemeralOwner)],
        [0, 0, 0, 0, 5, hex(ZERO_LONG)]);
    assert.equal(long(stat.mzxid), long(stat.czxid), 'mzxid == czxid at creation');
    assert.equal(long(stat.pzxid), long(stat.czxid), 'pzxid == czxid at creation');
    assert.equal(long(stat.mtime), long(stat.ctime), 'mtime == ctime at creation');

    const set = await call(c, 'setData', p, Buffer.from('hello, world'), 0);
    assert.deepEqual([set.version, set.dataLength, set.cversion, set.numChildren], [1, 12, 0, 0]);
    assert.equal(long(set.czxid), long(stat.czxid), 'czxid unchanged by setData');
    assert.ok(long(set.mzxid) > long(stat.mzxid), 'mzxid grows on setData');
    const [data2, stat2] = await call(c, 'getData', p);
    assert.equal(data2.toString(), 'hello, world');
    assert.deepEqual(stat2, set, 'getData stat equals the setData reply stat');

    const setAny = await call(c, 'setData', p, Buffer.alloc(0), -1);
    assert.deepEqual([setAny.version, setAny.dataLength], [2, 0]);

    await call(c, 'remove', p, 2);
    assert.equal(await call(c, 'exists', p), null, 'exists after remove');
});

check('null_and_empty_data_stay_distinct', async ({ c, base }) => {
    // The client sends no data as a null buffer (length -1) and reads a null buffer back as undefined, so a
    // server that stores null as empty shows here as an empty Buffer.
    await call(c, 'create', `${base}/nul`);
    await call(c, 'create', `${base}/empty`, Buffer.alloc(0));
    const [nul, nulStat] = await call(c, 'getData', `${base}/nul`);
    const [empty, emptyStat] = await call(c, 'getData', `${base}/empty`);
    assert.equal(nul, undefined, `null data read back as ${inspect(nul)}`);
    assert.ok(Buffer.isBuffer(empty) && empty.length === 0, `empty data read back as ${inspect(empty)}`);
    assert.deepEqual([nulStat.dataLength, emptyStat.dataLength], [0, 0]);
});

check('parent_cversion_numchildren_pzxid', async ({ c, base }) => {
    const parent = `${base}/p`;
    await call(c, 'create', parent);
    await call(c, 'create', `${parent}/a`);
    await call(c, 'create', `${parent}/b`);
    let stat = await call(c, 'exists', parent);
    assert.deepEqual([stat.cversion, stat.numChildren, stat.version], [2, 2, 0]);
    const bStat = await call(c, 'exists', `${parent}/b`);
    assert.equal(long(stat.pzxid), long(bStat.czxid), 'pzxid is the last child create');
    await call(c, 'remove', `${parent}/a`);
    const [children, stat2] = await call(c, 'getChildren', parent);
    assert.deepEqual(children, ['b']);
    assert.deepEqual([stat2.cversion, stat2.numChildren, stat2.version], [3, 1, 0]);
    assert.ok(long(stat2.pzxid) > long(stat.pzxid), 'pzxid grows on child delete');
    assert.equal(long(stat2.mzxid), long(stat.mzxid), 'child changes leave mzxid alone');
});

check('ephemeral_owner_is_session_id', async ({ c, base }) => {
    const p = `${base}/e`;
    assert.equal(await call(c, 'create', p, Buffer.from('x'), CreateMode.EPHEMERAL), p);
    const stat = await call(c, 'exists', p);
    const sid = c.getSessionId();
    assert.equal(sid.length, 8);
    assert.notEqual(hex(sid), hex(ZERO_LONG), 'session id is not 0');
    assert.equal(hex(stat.ephemeralOwner), hex(sid));
    assert.equal(stat.dataLength, 1);
    const persistent = await call(c, 'exists', base);
    assert.equal(hex(persistent.ephemeralOwner), hex(ZERO_LONG), 'persistent node owner is 0');
    const err = await failure(call(c, 'create', `${p}/child`));
    assertCode(err, Exception.NO_CHILDREN_FOR_EPHEMERALS, 'create under an ephemeral');
});

check('error_no_node', async ({ c, base }) => {
    assertCode(await failure(call(c, 'getData', `${base}/missing`)), Exception.NO_NODE, 'getData missing');
    assertCode(await failure(call(c, 'setData', `${base}/missing`, Buffer.from('x'), -1)), Exception.NO_NODE,
        'setData missing');
    assertCode(await failure(call(c, 'remove', `${base}/missing`, -1)), Exception.NO_NODE, 'remove missing');
    assertCode(await failure(call(c, 'getChildren', `${base}/missing`)), Exception.NO_NODE, 'getChildren missing');
    assertCode(await failure(call(c, 'create', `${base}/missing/child`)), Exception.NO_NODE,
        'create without parent');
    assert.equal(await call(c, 'exists', `${base}/missing`), null, 'exists on a missing node is null, no error');
});

check('error_node_exists', async ({ c, base }) => {
    await call(c, 'create', `${base}/dup`, Buffer.from('first'));
    const err = await failure(call(c, 'create', `${base}/dup`, Buffer.from('second')));
    assertCode(err, Exception.NODE_EXISTS, 'second create');
    const [data, stat] = await call(c, 'getData', `${base}/dup`);
    assert.deepEqual([data.toString(), stat.version], ['first', 0], 'the node is untouched');
});

check('error_bad_version', async ({ c, base }) => {
    const p = `${base}/v`;
    await call(c, 'create', p, Buffer.from('a'));
    assertCode(await failure(call(c, 'setData', p, Buffer.from('b'), 3)), Exception.BAD_VERSION, 'setData v3');
    assertCode(await failure(call(c, 'remove', p, 1)), Exception.BAD_VERSION, 'remove v1');
    const [data, stat] = await call(c, 'getData', p);
    assert.deepEqual([data.toString(), stat.version], ['a', 0], 'the node is untouched');
});

check('error_not_empty', async ({ c, base }) => {
    await call(c, 'create', `${base}/full`);
    await call(c, 'create', `${base}/full/kid`);
    assertCode(await failure(call(c, 'remove', `${base}/full`, -1)), Exception.NOT_EMPTY, 'remove with a child');
    assert.deepEqual(await call(c, 'getChildren', `${base}/full`).then((r) => r[0]), ['kid']);
});

check('mkdirp_creates_every_level', async ({ c, base }) => {
    const p = `${base}/a/b/c/d`;
    assert.equal(await call(c, 'mkdirp', p, Buffer.from('leafdata')), p);
    for (const level of [`${base}/a`, `${base}/a/b`, `${base}/a/b/c`]) {
        const stat = await call(c, 'exists', level);
        assert.ok(stat, `${level} exists`);
        assert.equal(stat.numChildren, 1, `${level} has one child`);
    }
    const [data, stat] = await call(c, 'getData', p);
    assert.deepEqual([data.toString(), stat.numChildren], ['leafdata', 0]);
    // Idempotent: every level exists now, mkdirp skips NODE_EXISTS.
    assert.equal(await call(c, 'mkdirp', p), p);
    const [, stat2] = await call(c, 'getData', p);
    assert.equal(stat2.version, 0);
});

check('sequential_names_are_ten_digit_and_ordered', async ({ c, base }) => {
    const q = `${base}/q`;
    await call(c, 'create', q);
    const names = [];
    names.push(await call(c, 'create', `${q}/job-`, CreateMode.PERSISTENT_SEQUENTIAL));
    names.push(await call(c, 'create', `${q}/job-`, CreateMode.EPHEMERAL_SEQUENTIAL));
    // A plain create uses up a counter value too (the suffix is the parent's cversion).
    await call(c, 'create', `${q}/plain`);
    names.push(await call(c, 'create', `${q}/job-`, CreateMode.EPHEMERAL_SEQUENTIAL));
    names.push(await call(c, 'create', `${q}/other-`, CreateMode.PERSISTENT_SEQUENTIAL));
    assert.deepEqual(names, [`${q}/job-0000000000`, `${q}/job-0000000001`, `${q}/job-0000000003`,
        `${q}/other-0000000004`]);
    const [children] = await call(c, 'getChildren', q);
    assert.deepEqual(children.sort(), ['job-0000000000', 'job-0000000001', 'job-0000000003', 'other-0000000004',
        'plain']);
    const eph = await call(c, 'exists', `${q}/job-0000000001`);
    assert.equal(hex(eph.ephemeralOwner), hex(c.getSessionId()));
});

check('ephemerals_vanish_when_creator_closes', async ({ c, base }) => {
    const q = `${base}/eph`;
    await call(c, 'create', q);
    const creator = await connect();
    const made = [];
    for (let i = 0; i < 3; i++) {
        made.push(await call(creator, 'create', `${q}/member-`, Buffer.from(`m${i}`), CreateMode.EPHEMERAL_SEQUENTIAL));
    }
    await call(creator, 'create', `${q}/keep`, CreateMode.PERSISTENT);
    assert.deepEqual(made, [0, 1, 2].map((i) => `${q}/member-000000000${i}`));

    const children = recorder();
    const [seen] = await call(c, 'getChildren', q, children.fn);
    assert.deepEqual(seen.sort(), ['keep', 'member-0000000000', 'member-0000000001', 'member-0000000002']);
    const deleted = made.map(() => recorder());
    for (let i = 0; i < made.length; i++) {
        const stat = await call(c, 'exists', made[i], deleted[i].fn);
        assert.equal(hex(stat.ephemeralOwner), hex(creator.getSessionId()), `${made[i]} owner`);
    }

    await close(creator);
    assertEvent(await children.next('NODE_CHILDREN_CHANGED on the parent'), Event.NODE_CHILDREN_CHANGED, q);
    for (let i = 0; i < made.length; i++) {
        assertEvent(await deleted[i].next(`NODE_DELETED for ${made[i]}`), Event.NODE_DELETED, made[i]);
    }
    // The session's ephemerals all go in the close, so the other client sees none of them afterwards.
    const [after, stat] = await call(c, 'getChildren', q);
    assert.deepEqual(after, ['keep']);
    assert.deepEqual([stat.numChildren, stat.cversion], [1, 7]);
    assert.equal(children.events.length, 1, 'the child watch fired once');
});

check('getdata_watch_fires_data_changed_once', async ({ c, base }) => {
    const p = `${base}/w`;
    await call(c, 'create', p, Buffer.from('0'));
    const w = recorder();
    await call(c, 'getData', p, w.fn);
    await call(c, 'setData', p, Buffer.from('1'), -1);
    assertEvent(await w.next(), Event.NODE_DATA_CHANGED, p);
    await call(c, 'setData', p, Buffer.from('2'), -1);
    // Notifications precede later replies on the connection: after this reply no second event can be pending.
    const [data] = await call(c, 'getData', p);
    assert.equal(data.toString(), '2');
    assert.equal(w.events.length, 1, `one-shot watch fired ${w.events.length} times`);
});

check('getchildren_watch_fires_children_changed', async ({ c, base }) => {
    const p = `${base}/kids`;
    await call(c, 'create', p);
    const w = recorder();
    const [initial] = await call(c, 'getChildren', p, w.fn);
    assert.deepEqual(initial, []);
    await call(c, 'create', `${p}/one`);
    assertEvent(await w.next(), Event.NODE_CHILDREN_CHANGED, p);
    // A data change on the parent does not fire child watches; a second child create after the one-shot
    // fired does not either.
    const w2 = recorder();
    await call(c, 'getChildren', p, w2.fn);
    await call(c, 'setData', p, Buffer.from('parent data'), -1);
    await call(c, 'remove', `${p}/one`, -1);
    assertEvent(await w2.next(), Event.NODE_CHILDREN_CHANGED, p);
    await call(c, 'create', `${p}/two`);
    await call(c, 'exists', p);
    assert.deepEqual([w.events.length, w2.events.length], [1, 1]);
});

check('exists_watch_fires_node_created', async ({ c, base }) => {
    const p = `${base}/later`;
    const w = recorder();
    assert.equal(await call(c, 'exists', p, w.fn), null);
    await call(c, 'create', p, Buffer.from('now'));
    assertEvent(await w.next(), Event.NODE_CREATED, p);
    await call(c, 'exists', p);
    assert.equal(w.events.length, 1);
});

check('watches_fire_node_deleted', async ({ c, base }) => {
    const p = `${base}/doomed`;
    await call(c, 'create', p);
    const onData = recorder();
    const onExists = recorder();
    const parentKids = recorder();
    await call(c, 'getData', p, onData.fn);
    await call(c, 'exists', p, onExists.fn);
    await call(c, 'getChildren', base, parentKids.fn);
    await call(c, 'remove', p, 0);
    assertEvent(await onData.next(), Event.NODE_DELETED, p);
    assertEvent(await onExists.next(), Event.NODE_DELETED, p);
    assertEvent(await parentKids.next(), Event.NODE_CHILDREN_CHANGED, base);
});

check('two_clients_one_sets_other_watch_fires', async ({ c, base }) => {
    const p = `${base}/shared`;
    await call(c, 'create', p, Buffer.from('v0'));
    const other = await connect();
    try {
        assert.notEqual(hex(other.getSessionId()), hex(c.getSessionId()), 'two sessions');
        const data = recorder();
        const kids = recorder();
        await call(other, 'getData', p, data.fn);
        await call(other, 'getChildren', p, kids.fn);
        const set = await call(c, 'setData', p, Buffer.from('v1'), 0);
        assert.equal(set.version, 1);
        assertEvent(await data.next('NODE_DATA_CHANGED at the other client'), Event.NODE_DATA_CHANGED, p);
        const [seen, stat] = await call(other, 'getData', p);
        assert.deepEqual([seen.toString(), stat.version], ['v1', 1]);
        await call(c, 'create', `${p}/child`, CreateMode.EPHEMERAL);
        assertEvent(await kids.next('NODE_CHILDREN_CHANGED at the other client'), Event.NODE_CHILDREN_CHANGED, p);
        const childStat = await call(other, 'exists', `${p}/child`);
        assert.equal(hex(childStat.ephemeralOwner), hex(c.getSessionId()), 'owner is the creating session');
    } finally {
        await close(other);
    }
});

check('transaction_commits_all_ops', async ({ c, base }) => {
    await call(c, 'create', `${base}/a`, Buffer.from('a0'));
    await call(c, 'setData', `${base}/a`, Buffer.from('a1'), 0); // version 1: the client sends check(v=0) as -1
    await call(c, 'create', `${base}/gone`);
    const results = await new Promise((resolve, reject) => {
        c.transaction()
            .check(`${base}/a`, 1)
            .create(`${base}/new`, Buffer.from('fresh'))
            .setData(`${base}/a`, Buffer.from('a2'), 1)
            .remove(`${base}/gone`)
            .commit((err, res) => (err ? reject(err) : resolve(res)));
    });
    assert.deepEqual(results.map((r) => r.type), [OP.CHECK, OP.CREATE, OP.SET_DATA, OP.DELETE]);
    assert.equal(results[1].path, `${base}/new`);
    const setStat = results[2].stat;
    assert.deepEqual([setStat.version, setStat.dataLength], [2, 2]);
    const newStat = await call(c, 'exists', `${base}/new`);
    assert.equal(long(setStat.mzxid), long(newStat.czxid), 'every op of a multi shares one zxid');
    const [aData, aStat] = await call(c, 'getData', `${base}/a`);
    assert.deepEqual([aData.toString(), aStat.version], ['a2', 2]);
    const [newData] = await call(c, 'getData', `${base}/new`);
    assert.equal(newData.toString(), 'fresh');
    assert.equal(await call(c, 'exists', `${base}/gone`), null);
});

check('transaction_bad_version_applies_nothing', async ({ c, base }) => {
    await call(c, 'create', `${base}/a`, Buffer.from('a0'));
    await call(c, 'create', `${base}/keep`);
    const before = await call(c, 'exists', base);
    const w = recorder();
    await call(c, 'getData', `${base}/a`, w.fn);
    const [err, results] = await new Promise((resolve) => {
        c.transaction()
            .check(`${base}/a`) // any version
            .create(`${base}/new`, Buffer.from('fresh'))
            .setData(`${base}/a`, Buffer.from('nope'), 7)
            .remove(`${base}/keep`)
            .commit((e, res) => resolve([e, res]));
    });
    assertCode(err, Exception.BAD_VERSION, 'multi with a bad setData version');
    // ZooKeeper answers with one error result per op: OK before the failing op, its code, then
    // RuntimeInconsistency after it.
    assert.deepEqual(results, [
        { type: OP.ERROR, err: Exception.OK },
        { type: OP.ERROR, err: Exception.OK },
        { type: OP.ERROR, err: Exception.BAD_VERSION },
        { type: OP.ERROR, err: Exception.RUNTIME_INCONSISTENCY },
    ]);
    assert.equal(await call(c, 'exists', `${base}/new`), null, 'create not applied');
    assert.ok(await call(c, 'exists', `${base}/keep`), 'remove not applied');
    const [aData, aStat] = await call(c, 'getData', `${base}/a`);
    assert.deepEqual([aData.toString(), aStat.version], ['a0', 0], 'setData not applied');
    const after = await call(c, 'exists', base);
    assert.deepEqual([after.cversion, after.numChildren], [before.cversion, before.numChildren]);
    assert.equal(w.events.length, 0, 'no watch fired');
    // The sequence counter did not move either: the next sequential child gets cversion 2.
    assert.equal(await call(c, 'create', `${base}/s-`, CreateMode.PERSISTENT_SEQUENTIAL), `${base}/s-0000000002`);
});

check('transaction_missing_node_fails_with_no_node', async ({ c, base }) => {
    const [err, results] = await new Promise((resolve) => {
        c.transaction()
            .create(`${base}/x`)
            .remove(`${base}/absent`)
            .commit((e, res) => resolve([e, res]));
    });
    assertCode(err, Exception.NO_NODE, 'multi removing a missing node');
    assert.deepEqual(results, [
        { type: OP.ERROR, err: Exception.OK },
        { type: OP.ERROR, err: Exception.NO_NODE },
    ]);
    assert.equal(await call(c, 'exists', `${base}/x`), null, 'create not applied');
});

function digestId(userPassword) {
    const [user] = userPassword.split(':');
    return `${user}:${crypto.createHash('sha1').update(userPassword).digest('base64')}`;
}

check('acl_digest_auth_and_no_auth', async ({ c, base }) => {
    const p = `${base}/secret`;
    await call(c, 'create', p, Buffer.from('classified'));
    const alice = await connect();
    const stranger = await connect();
    const wrongPassword = await connect();
    try {
        alice.addAuthInfo('digest', Buffer.from('alice:s3cret'));
        wrongPassword.addAuthInfo('digest', Buffer.from('alice:guess'));
        const acl = [new ACL(Permission.ALL, new Id('digest', digestId('alice:s3cret'))),
            new ACL(Permission.READ, new Id('world', 'anyone'))];
        const setStat = await call(alice, 'setACL', p, acl, 0);
        assert.equal(setStat.aversion, 1);
        const [got, aclStat] = await call(alice, 'getACL', p);
        assert.deepEqual(got.map((a) => [a.permission, a.id.scheme, a.id.id]),
            [[31, 'digest', digestId('alice:s3cret')], [1, 'world', 'anyone']]);
        assert.deepEqual([aclStat.aversion, aclStat.version], [1, 0]);

        // READ is open, everything else needs alice.
        const [data] = await call(stranger, 'getData', p);
        assert.equal(data.toString(), 'classified');
        assertCode(await failure(call(stranger, 'setData', p, Buffer.from('x'), -1)), Exception.NO_AUTH,
            'setData without auth');
        assertCode(await failure(call(stranger, 'create', `${p}/kid`)), Exception.NO_AUTH, 'create without auth');
        assertCode(await failure(call(wrongPassword, 'setData', p, Buffer.from('x'), -1)), Exception.NO_AUTH,
            'setData with the wrong password');
        assertCode(await failure(call(stranger, 'setACL', p, ACL.OPEN_ACL_UNSAFE, -1)), Exception.NO_AUTH,
            'setACL without auth');
        const aliceSet = await call(alice, 'setData', p, Buffer.from('declassified'), 0);
        assert.equal(aliceSet.version, 1);

        // Lock reads too: a stranger now gets NO_AUTH for getData; alice's second connection gets in.
        await call(alice, 'setACL', p, [acl[0]], 1);
        assertCode(await failure(call(stranger, 'getData', p)), Exception.NO_AUTH, 'getData without auth');
        stranger.addAuthInfo('digest', Buffer.from('alice:s3cret'));
        const [data2] = await call(stranger, 'getData', p);
        assert.equal(data2.toString(), 'declassified');
    } finally {
        await close(alice);
        await close(stranger);
        await close(wrongPassword);
    }
});

check('acl_creator_all_expands_to_digest', async ({ c, base }) => {
    const bob = await connect();
    try {
        const p = `${base}/bobs`;
        // Without any authenticated id, the auth scheme cannot expand: INVALID_ACL.
        assertCode(await failure(call(bob, 'create', p, ACL.CREATOR_ALL_ACL)), Exception.INVALID_ACL,
            'CREATOR_ALL_ACL without auth');
        bob.addAuthInfo('digest', Buffer.from('bob:pw'));
        assert.equal(await call(bob, 'create', p, Buffer.from('b'), ACL.CREATOR_ALL_ACL), p);
        const [got] = await call(bob, 'getACL', p);
        assert.deepEqual(got.map((a) => [a.permission, a.id.scheme, a.id.id]), [[31, 'digest', digestId('bob:pw')]]);
        assertCode(await failure(call(c, 'getData', p)), Exception.NO_AUTH, 'getData by another session');
        // delete needs DELETE on the parent, which is open: another session may remove bob's node.
        await call(c, 'remove', p, -1);
        assert.equal(await call(bob, 'exists', p), null);
    } finally {
        await close(bob);
    }
});

check('chroot_connection_string', async ({ c, base }) => {
    const root = `${base}/jail`;
    await call(c, 'create', root);
    const jailed = await connect(`${CONNECT}${root}`);
    try {
        assert.equal(await call(jailed, 'create', '/x', Buffer.from('in')), '/x');
        assert.equal(await call(jailed, 'create', '/s-', CreateMode.EPHEMERAL_SEQUENTIAL), '/s-0000000001');
        const [data] = await call(c, 'getData', `${root}/x`);
        assert.equal(data.toString(), 'in');
        const [kids] = await call(jailed, 'getChildren', '/');
        assert.deepEqual(kids.sort(), ['s-0000000001', 'x']);
        const [outside] = await call(c, 'getChildren', root);
        assert.deepEqual(outside.sort(), ['s-0000000001', 'x']);

        // Watch paths come back relative to the chroot.
        const w = recorder();
        await call(jailed, 'getData', '/x', w.fn);
        await call(c, 'setData', `${root}/x`, Buffer.from('changed'), -1);
        assertEvent(await w.next(), Event.NODE_DATA_CHANGED, '/x');

        // So do multi create results.
        const results = await new Promise((resolve, reject) => {
            jailed.transaction().create('/t').setData('/x', Buffer.from('multi'), 1)
                .commit((err, res) => (err ? reject(err) : resolve(res)));
        });
        assert.deepEqual([results[0], results[1].type, results[1].stat.version],
            [{ type: OP.CREATE, path: '/t' }, OP.SET_DATA, 2]);
        assert.ok(await call(c, 'exists', `${root}/t`), 'multi create landed under the chroot');
        assert.equal(await call(c, 'exists', '/t'), null, 'and not at the real root');
    } finally {
        await close(jailed);
    }
});

check('session_timeout_negotiated_within_tick_bounds', async () => {
    // tickTime 2000 on both servers: ZooKeeper clamps the requested timeout to [2, 20] ticks.
    const asked = [[10000, 10000], [1000, 4000], [120000, 40000]];
    for (const [request, expected] of asked) {
        const client = zk.createClient(CONNECT, { sessionTimeout: request, spinDelay: 100, retries: 0 });
        clients.add(client);
        const connected = new Promise((resolve) => client.once('connected', resolve));
        client.connect();
        await withDeadline(connected, 15000, 'a session');
        try {
            assert.equal(client.getSessionTimeout(), expected, `asked for ${request} ms`);
            assert.equal(client.getSessionPassword().length, 16, 'password length');
        } finally {
            await close(client);
        }
    }
});

check('large_data_roundtrip', async ({ c, base }) => {
    const p = `${base}/big`;
    const big = crypto.randomBytes(1000 * 1000);
    await call(c, 'create', p, big);
    const [data, stat] = await call(c, 'getData', p);
    assert.equal(stat.dataLength, big.length);
    assert.ok(data.equals(big), 'the data comes back byte for byte');
    const [, stat2] = await call(c, 'getData', p);
    assert.equal(stat2.version, 0);
});

check('watch_events_arrive_in_op_order', async ({ c, base }) => {
    for (const n of ['a', 'b', 'c']) await call(c, 'create', `${base}/${n}`);
    const other = await connect();
    try {
        const seen = [];
        const all = recorder();
        const note = (event) => { seen.push(`${event.getName()} ${event.getPath()}`); all.fn(event); };
        await call(other, 'getData', `${base}/a`, note);
        await call(other, 'getData', `${base}/b`, note);
        await call(other, 'getChildren', `${base}/c`, note);
        await call(other, 'exists', `${base}/d`, note);
        await call(c, 'setData', `${base}/b`, Buffer.from('1'), -1);
        await call(c, 'create', `${base}/d`);
        await call(c, 'create', `${base}/c/x`);
        await call(c, 'remove', `${base}/a`, -1);
        for (let i = 0; i < 4; i++) await all.next(`event ${i + 1} of 4`);
        assert.deepEqual(seen, [`NODE_DATA_CHANGED ${base}/b`, `NODE_CREATED ${base}/d`,
            `NODE_CHILDREN_CHANGED ${base}/c`, `NODE_DELETED ${base}/a`]);
    } finally {
        await close(other);
    }
});

check('transaction_fires_watches_in_op_order', async ({ c, base }) => {
    await call(c, 'create', `${base}/a`);
    await call(c, 'create', `${base}/b`);
    await call(c, 'create', `${base}/dir`);
    const other = await connect();
    try {
        const seen = [];
        const all = recorder();
        const note = (event) => { seen.push(`${event.getName()} ${event.getPath()}`); all.fn(event); };
        await call(other, 'exists', `${base}/b`, note);
        await call(other, 'getChildren', `${base}/dir`, note);
        await call(other, 'getData', `${base}/a`, note);
        await new Promise((resolve, reject) => c.transaction()
            .setData(`${base}/a`, Buffer.from('x'))
            .create(`${base}/dir/f`)
            .remove(`${base}/b`)
            .commit((err, res) => (err ? reject(err) : resolve(res))));
        for (let i = 0; i < 3; i++) await all.next(`event ${i + 1} of 3`);
        assert.deepEqual(seen, [`NODE_DATA_CHANGED ${base}/a`, `NODE_CHILDREN_CHANGED ${base}/dir`,
            `NODE_DELETED ${base}/b`]);
    } finally {
        await close(other);
    }
});

check('transaction_builds_on_earlier_ops', async ({ c, base }) => {
    // Later ops see earlier ones: a create under a parent made in the same multi, sequential counters that
    // advance within the multi, a setData on a node created two ops before.
    const results = await new Promise((resolve, reject) => c.transaction()
        .create(`${base}/p`)
        .create(`${base}/p/s-`, CreateMode.PERSISTENT_SEQUENTIAL)
        .create(`${base}/p/s-`, CreateMode.PERSISTENT_SEQUENTIAL)
        .setData(`${base}/p`, Buffer.from('pd'))
        .remove(`${base}/p/s-0000000000`)
        .commit((err, res) => (err ? reject(err) : resolve(res))));
    assert.deepEqual(results.slice(0, 3), [{ type: OP.CREATE, path: `${base}/p` },
        { type: OP.CREATE, path: `${base}/p/s-0000000000` }, { type: OP.CREATE, path: `${base}/p/s-0000000001` }]);
    assert.deepEqual([results[3].type, results[3].stat.version, results[3].stat.numChildren, results[3].stat.cversion],
        [OP.SET_DATA, 1, 2, 2]);
    assert.deepEqual(results[4], { type: OP.DELETE });
    const [kids, stat] = await call(c, 'getChildren', `${base}/p`);
    assert.deepEqual([kids, stat.cversion, stat.numChildren], [['s-0000000001'], 3, 1]);
});

check('transaction_check_fails_first', async ({ c, base }) => {
    await call(c, 'create', `${base}/a`);
    const [err, results] = await new Promise((resolve) => c.transaction()
        .check(`${base}/a`, 5)
        .create(`${base}/b`)
        .commit((e, res) => resolve([e, res])));
    assertCode(err, Exception.BAD_VERSION, 'check with a wrong version');
    assert.deepEqual(results, [{ type: OP.ERROR, err: Exception.BAD_VERSION },
        { type: OP.ERROR, err: Exception.RUNTIME_INCONSISTENCY }]);
    const [err2, results2] = await new Promise((resolve) => c.transaction()
        .create(`${base}/c`)
        .create(`${base}/a`)
        .commit((e, res) => resolve([e, res])));
    assertCode(err2, Exception.NODE_EXISTS, 'create of an existing node in a multi');
    assert.deepEqual(results2, [{ type: OP.ERROR, err: Exception.OK }, { type: OP.ERROR, err: Exception.NODE_EXISTS }]);
    const [kids] = await call(c, 'getChildren', base);
    assert.deepEqual(kids, ['a']);
});

check('acl_readers_see_masked_digest_and_exists_needs_read', async ({ c, base }) => {
    const p = `${base}/masked`;
    const alice = await connect();
    try {
        alice.addAuthInfo('digest', Buffer.from('alice:s3cret'));
        const aliceId = digestId('alice:s3cret');
        await call(alice, 'create', p, Buffer.from('d'), [new ACL(Permission.ALL, new Id('digest', aliceId)),
            new ACL(Permission.READ, new Id('world', 'anyone'))]);
        // Reading the ACL without ADMIN masks digest ids to user:x; with ADMIN it is the full id.
        const [forReader] = await call(c, 'getACL', p);
        assert.deepEqual(forReader.map((a) => [a.permission, a.id.scheme, a.id.id]),
            [[31, 'digest', 'alice:x'], [1, 'world', 'anyone']]);
        const [forAdmin] = await call(alice, 'getACL', p);
        assert.deepEqual(forAdmin.map((a) => a.id.id), [aliceId, 'anyone']);
        // With no READ for the world, exists on the existing node is NO_AUTH too (ZooKeeper >= 3.9.2).
        await call(alice, 'setACL', p, [new ACL(Permission.ALL, new Id('digest', aliceId))], -1);
        assertCode(await failure(call(c, 'exists', p)), Exception.NO_AUTH, 'exists without READ');
        assertCode(await failure(call(c, 'getACL', p)), Exception.NO_AUTH, 'getACL without READ or ADMIN');
        assertCode(await failure(call(c, 'getChildren', p)), Exception.NO_AUTH, 'getChildren without READ');
        const stat = await call(alice, 'exists', p);
        assert.equal(stat.aversion, 1);
    } finally {
        await close(alice);
    }
});

check('acl_invalid_ids_and_ip_scheme', async ({ c, base }) => {
    const bad = [new Id('digest', 'no-colon'), new Id('world', 'someone'), new Id('ip', '300.1.1.1'),
        new Id('nosuchscheme', 'x')];
    for (const id of bad) {
        assertCode(await failure(call(c, 'create', `${base}/bad`, [new ACL(Permission.ALL, id)])),
            Exception.INVALID_ACL, `create with ${id.scheme}:${id.id}`);
    }
    assert.equal(await call(c, 'exists', `${base}/bad`), null);
    // Every connection carries ip:<its address>; a loopback /8 entry matches 127.0.0.1, another net does not.
    await call(c, 'create', `${base}/lo`, Buffer.from('lo'), [new ACL(Permission.ALL, new Id('ip', '127.0.0.0/8'))]);
    const [data] = await call(c, 'getData', `${base}/lo`);
    assert.equal(data.toString(), 'lo');
    await call(c, 'create', `${base}/far`, Buffer.from('far'), [new ACL(Permission.ALL, new Id('ip', '10.1.2.3'))]);
    assertCode(await failure(call(c, 'getData', `${base}/far`)), Exception.NO_AUTH, 'getData from another address');
});

check('remove_recursive_one_level', async ({ c, base }) => {
    // Only one level deep: with async 3.x (what 1.1.3 pins) listSubTreeBFS never visits children it pushes
    // while reducing, so it lists two levels only and removeRecursive fails deeper down, on any server.
    const t = `${base}/tree`;
    await call(c, 'create', t);
    await call(c, 'create', `${t}/a`);
    await call(c, 'create', `${t}/b`, CreateMode.EPHEMERAL);
    const listed = await call(c, 'listSubTreeBFS', t);
    assert.deepEqual([listed[0], ...listed.slice(1).sort()], [t, `${t}/a`, `${t}/b`]);
    await call(c, 'removeRecursive', t);
    assert.equal(await call(c, 'exists', t), null);
    const [kids, stat] = await call(c, 'getChildren', base);
    assert.deepEqual([kids, stat.numChildren, stat.cversion], [[], 0, 2]);
});

// A child process holds a session with an ephemeral, then is frozen with SIGSTOP: its TCP connection stays
// open but it stops pinging, so the server must expire the session by its timeout and delete the ephemeral.
const HOLDER = `
const zk = require('node-zookeeper-client');
const c = zk.createClient(process.env.ZK_CONNECT, { sessionTimeout: 4000, spinDelay: 100, retries: 0 });
c.once('connected', () => c.create(process.env.EPH_PATH, zk.CreateMode.EPHEMERAL, (err) => {
    if (err) { console.log('error ' + err.message); process.exit(1); }
    console.log('created ' + c.getSessionId().toString('hex') + ' ' + c.getSessionTimeout());
}));
c.connect();
`;

check('ephemeral_vanishes_when_session_expires', async ({ c, base }) => {
    const { spawn } = require('node:child_process');
    const p = `${base}/held`;
    const child = spawn(process.execPath, ['-e', HOLDER], {
        env: { ...process.env, ZK_CONNECT: CONNECT, EPH_PATH: p, NODE_PATH: require('node:path').join(__dirname, 'node_modules') },
        stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
        const line = await withDeadline(new Promise((resolve, reject) => {
            let out = '';
            child.stdout.on('data', (d) => {
                out += d;
                if (out.includes('\n')) resolve(out.trim());
            });
            child.once('exit', (code) => reject(new Error(`holder exited ${code}: ${out}`)));
        }), 15000, 'the holder to create its ephemeral');
        const [word, sid, timeout] = line.split(' ');
        assert.deepEqual([word, timeout], ['created', '4000'], line);
        const gone = recorder();
        const stat = await call(c, 'exists', p, gone.fn);
        assert.equal(hex(stat.ephemeralOwner), sid);
        const frozenAt = Date.now();
        child.kill('SIGSTOP');
        const event = await withDeadline(gone.next(), 15000, 'NODE_DELETED after the session expires');
        const waited = Date.now() - frozenAt;
        if (process.env.NODE_COMPAT_DEBUG) console.log(`# expired after ${waited} ms`);
        assertEvent(event, Event.NODE_DELETED, p);
        assert.equal(await call(c, 'exists', p), null);
        // Not before the session timeout (less a tick of slack for the last ping's timing).
        assert.ok(waited >= 2000, `deleted after only ${waited} ms`);
    } finally {
        child.kill('SIGKILL');
    }
});

check('reconnect_keeps_session_and_resets_watches', async ({ c, base }) => {
    for (const n of ['w', 'gone', 'dir']) await call(c, 'create', `${base}/${n}`);
    const a = await connect();
    try {
        const sid = hex(a.getSessionId());
        await call(a, 'create', `${base}/mine`, CreateMode.EPHEMERAL);
        const seen = [];
        const all = recorder();
        const note = (event) => { seen.push(`${event.getName()} ${event.getPath()}`); all.fn(event); };
        await call(a, 'getData', `${base}/w`, note);
        await call(a, 'getData', `${base}/gone`, note);
        await call(a, 'exists', `${base}/new`, note);
        await call(a, 'getChildren', `${base}/dir`, note);
        // Drop a's connection and hold its reconnect (the client would reconnect at once) while c changes
        // every watched node: the missed changes must come back through setWatches' relative zxid.
        const cm = a.connectionManager;
        const reconnect = cm.connect;
        let held = false;
        cm.connect = () => { held = true; };
        const disconnected = new Promise((resolve) => a.once('disconnected', resolve));
        cm.socket.destroy();
        await withDeadline(disconnected, 10000, 'a to notice its dropped connection');
        assert.ok(held, 'the client tried to reconnect');
        await call(c, 'setData', `${base}/w`, Buffer.from('while away'), -1);
        await call(c, 'remove', `${base}/gone`, -1);
        await call(c, 'create', `${base}/new`);
        await call(c, 'create', `${base}/dir/kid`);
        cm.connect = reconnect;
        const connected = new Promise((resolve) => a.once('connected', resolve));
        cm.connect();
        await withDeadline(connected, 10000, 'a to reconnect');
        assert.equal(hex(a.getSessionId()), sid, 'same session after reconnect');
        for (let i = 0; i < 4; i++) await all.next(`event ${i + 1} of 4 after reconnect`);
        // ZooKeeper answers setWatches data watches first, then exist watches, then child watches.
        assert.deepEqual(seen, [`NODE_DATA_CHANGED ${base}/w`, `NODE_DELETED ${base}/gone`,
            `NODE_CREATED ${base}/new`, `NODE_CHILDREN_CHANGED ${base}/dir`]);
        const mine = await call(c, 'exists', `${base}/mine`);
        assert.equal(hex(mine.ephemeralOwner), sid, 'the ephemeral survived the reconnect');
    } finally {
        await close(a);
    }
});

// ---- runner ---------------------------------------------------------------------------------------

async function main() {
    const only = process.argv.slice(2);
    let passed = 0;
    let failed = 0;
    let c;
    try {
        c = await connect();
        await call(c, 'create', RUN_ROOT);
    } catch (err) {
        console.log(`FAIL setup: ${err && err.message}`);
        console.log('summary 0 1');
        process.exit(1);
    }
    for (const { name, fn } of checks) {
        if (only.length && !only.includes(name)) continue;
        const base = `${RUN_ROOT}/${name}`;
        try {
            await withDeadline((async () => {
                await call(c, 'create', base);
                await fn({ c, base });
            })(), CHECK_MS, `check ${name}`);
            passed++;
            console.log(`ok ${name}`);
        } catch (err) {
            failed++;
            const why = err instanceof assert.AssertionError ? err.message : (err && err.stack) || String(err);
            console.log(`FAIL ${name}: ${why.replace(/\n+/g, ' | ')}`);
        }
    }
    for (const other of [...clients]) if (other !== c) other.close();
    await close(c).catch(() => {});
    console.log(`summary ${passed} ${failed}`);
    process.exit(failed ? 1 : 0);
}

main();
