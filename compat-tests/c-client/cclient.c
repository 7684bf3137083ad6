/*
 * paddock compatibility checks through Apache ZooKeeper's multi-threaded C client (libzookeeper_mt).
 *
 *   cclient HOST:PORT [--restart-hook]
 *
 * Runs named checks against a fresh server, prints `ok <name>` or `FAIL <name>: <why>` per check and a
 * final `RESULT passed=N failed=M skipped=K` line (run.sh parses it). Exit status 0 only when every check
 * that ran passed. With --restart-hook, the restart check prints `# restart-server` and waits for a line
 * on stdin: `go` once the server is back on the same port and data, anything else if it is not.
 * The same program runs against Apache ZooKeeper (run.sh --against-zookeeper): a check that fails there is
 * a wrong check.
 *
 * Watch events are awaited with condition variables and deadlines. "Exactly these events" is proved with a
 * fence: after the operations under test, the same watcher also watches a fresh path that is then created;
 * the server sends notifications in zxid order, so once the fence's event arrives, every event the earlier
 * operations could cause has arrived too.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#define SESSION_TIMEOUT_MS 10000
#define EVENT_WAIT_MS 10000
#define MAX_EVENTS 64

/* ---------- failure reporting ---------- */

static char why[1024];

static bool failf(int line, const char *fmt, ...) {
    va_list ap;
    int n = snprintf(why, sizeof why, "line %d: ", line);
    va_start(ap, fmt);
    vsnprintf(why + n, sizeof why - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

static const char *rc_name(int rc) {
    static char other[32];
    switch (rc) {
    case ZOK: return "ZOK";
    case ZRUNTIMEINCONSISTENCY: return "ZRUNTIMEINCONSISTENCY";
    case ZDATAINCONSISTENCY: return "ZDATAINCONSISTENCY";
    case ZCONNECTIONLOSS: return "ZCONNECTIONLOSS";
    case ZMARSHALLINGERROR: return "ZMARSHALLINGERROR";
    case ZUNIMPLEMENTED: return "ZUNIMPLEMENTED";
    case ZOPERATIONTIMEOUT: return "ZOPERATIONTIMEOUT";
    case ZBADARGUMENTS: return "ZBADARGUMENTS";
    case ZINVALIDSTATE: return "ZINVALIDSTATE";
    case ZAPIERROR: return "ZAPIERROR";
    case ZNONODE: return "ZNONODE";
    case ZNOAUTH: return "ZNOAUTH";
    case ZBADVERSION: return "ZBADVERSION";
    case ZNOCHILDRENFOREPHEMERALS: return "ZNOCHILDRENFOREPHEMERALS";
    case ZNODEEXISTS: return "ZNODEEXISTS";
    case ZNOTEMPTY: return "ZNOTEMPTY";
    case ZSESSIONEXPIRED: return "ZSESSIONEXPIRED";
    case ZINVALIDCALLBACK: return "ZINVALIDCALLBACK";
    case ZINVALIDACL: return "ZINVALIDACL";
    case ZAUTHFAILED: return "ZAUTHFAILED";
    case ZCLOSING: return "ZCLOSING";
    case ZNOTHING: return "ZNOTHING";
    case ZSESSIONMOVED: return "ZSESSIONMOVED";
    default: snprintf(other, sizeof other, "rc %d", rc); return other;
    }
}

static const char *event_name(int type) {
    static char other[32];
    if (type == ZOO_CREATED_EVENT) return "CREATED";
    if (type == ZOO_DELETED_EVENT) return "DELETED";
    if (type == ZOO_CHANGED_EVENT) return "CHANGED";
    if (type == ZOO_CHILD_EVENT) return "CHILD";
    if (type == ZOO_SESSION_EVENT) return "SESSION";
    if (type == ZOO_NOTWATCHING_EVENT) return "NOTWATCHING";
    snprintf(other, sizeof other, "event %d", type);
    return other;
}

/* Assertions inside a check function (which returns bool): on failure, fill `why` and return false. */
#define EXPECT(cond, ...)                                                                                  \
    do {                                                                                                   \
        if (!(cond)) return failf(__LINE__, __VA_ARGS__);                                                  \
    } while (0)
#define EXPECT_RC(call, want)                                                                              \
    do {                                                                                                   \
        int rc_ = (call);                                                                                  \
        if (rc_ != (want))                                                                                 \
            return failf(__LINE__, "%s returned %s, want %s", #call, rc_name(rc_), rc_name(want));         \
    } while (0)
#define EXPECT_I64(got, want)                                                                              \
    do {                                                                                                   \
        int64_t g_ = (int64_t)(got), w_ = (int64_t)(want);                                                 \
        if (g_ != w_) return failf(__LINE__, "%s = %" PRId64 ", want %" PRId64, #got, g_, w_);             \
    } while (0)
#define TRY(call)                                                                                          \
    do {                                                                                                   \
        if (!(call)) return false;                                                                         \
    } while (0)
#define EXPECT_STR(got, want)                                                                              \
    do {                                                                                                   \
        const char *g_ = (got), *w_ = (want);                                                              \
        if (g_ == NULL || strcmp(g_, w_) != 0)                                                             \
            return failf(__LINE__, "%s = \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", w_);              \
    } while (0)

/* ---------- watch event recorder ---------- */

typedef struct {
    int type;
    int state;
    char path[256];
} event_t;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int session_state;  /* last state seen in a session event (global watcher only) */
    int session_events; /* how many session events so far */
    int n;
    event_t ev[MAX_EVENTS];
} recorder_t;

static void recorder_init(recorder_t *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void recorder_destroy(recorder_t *r) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
}

/* Both the global watcher and per-call watchers (zoo_wget, zoo_wexists) land here; ctx is a recorder. */
static void record_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh;
    recorder_t *r = ctx;
    if (r == NULL) return;
    pthread_mutex_lock(&r->mu);
    if (type == ZOO_SESSION_EVENT) {
        r->session_state = state;
        r->session_events++;
    } else if (r->n < MAX_EVENTS) {
        event_t *e = &r->ev[r->n++];
        e->type = type;
        e->state = state;
        snprintf(e->path, sizeof e->path, "%s", path ? path : "");
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static struct timespec deadline_in(int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

static bool has_path_locked(recorder_t *r, const char *path) {
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->ev[i].path, path) == 0) return true;
    return false;
}

/* Waits until an event for `path` has been recorded; false on timeout. */
static bool wait_event_for(recorder_t *r, const char *path, int ms) {
    struct timespec dl = deadline_in(ms);
    bool found;
    pthread_mutex_lock(&r->mu);
    while (!(found = has_path_locked(r, path)))
        if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT) {
            found = has_path_locked(r, path);
            break;
        }
    pthread_mutex_unlock(&r->mu);
    return found;
}

/* Waits until at least `count` events have been recorded; false on timeout. */
static bool wait_event_count(recorder_t *r, int count, int ms) {
    struct timespec dl = deadline_in(ms);
    bool ok;
    pthread_mutex_lock(&r->mu);
    while (!(ok = r->n >= count))
        if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT) {
            ok = r->n >= count;
            break;
        }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static void describe_events(recorder_t *r, char *out, size_t len) {
    size_t used = 0;
    out[0] = 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < r->n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s %s", i ? ", " : "", event_name(r->ev[i].type),
                                 r->ev[i].path);
    pthread_mutex_unlock(&r->mu);
    if (r->n == 0) snprintf(out, len, "(none)");
}

typedef struct {
    int type;
    const char *path;
} want_event_t;

/* Exact comparison of the recorded events with `want`, in order. */
static bool events_equal(recorder_t *r, const want_event_t *want, int n, int line) {
    char got[600];
    bool same;
    pthread_mutex_lock(&r->mu);
    same = r->n == n;
    for (int i = 0; same && i < n; i++)
        same = r->ev[i].type == want[i].type && strcmp(r->ev[i].path, want[i].path) == 0 &&
               r->ev[i].state == ZOO_CONNECTED_STATE;
    pthread_mutex_unlock(&r->mu);
    if (same) return true;
    describe_events(r, got, sizeof got);
    char exp[600];
    size_t used = 0;
    exp[0] = 0;
    for (int i = 0; i < n && used < sizeof exp; i++)
        used += (size_t)snprintf(exp + used, sizeof exp - used, "%s%s %s", i ? ", " : "", event_name(want[i].type),
                                 want[i].path);
    return failf(line, "events [%s], want [%s]", got, exp);
}
#define EXPECT_EVENTS(rec, ...)                                                                            \
    do {                                                                                                   \
        const want_event_t w_[] = {__VA_ARGS__};                                                           \
        if (!events_equal((rec), w_, (int)(sizeof w_ / sizeof w_[0]), __LINE__)) return false;             \
    } while (0)

static int fence_seq;

/*
 * Watches a fresh path with `rec` (through zoo_wexists and record_watcher), creates it and waits for its
 * CREATED event. Afterwards every event caused by earlier writes has been delivered. `fence_path` receives
 * the path so that the caller can list it among the expected events.
 */
static bool fence(zhandle_t *zh, recorder_t *rec, char *fence_path, size_t len) {
    struct Stat st;
    snprintf(fence_path, len, "/fence-%d", fence_seq++);
    EXPECT_RC(zoo_wexists(zh, fence_path, record_watcher, rec, &st), ZNONODE);
    EXPECT_RC(zoo_create(zh, fence_path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0), ZOK);
    EXPECT(wait_event_for(rec, fence_path, EVENT_WAIT_MS), "no CREATED event for fence %s", fence_path);
    return true;
}

/* ---------- sessions ---------- */

typedef struct {
    zhandle_t *zh;
    recorder_t rec; /* the global watcher's recorder: session state and watch=1 events */
} session_t;

static const char *server; /* "127.0.0.1:PORT" */

/*
 * Opens a session on server + suffix (a chroot such as "/chroot", or "") and waits for CONNECTED. ZooKeeper
 * answers ruok slightly before it accepts sessions, so a handle that has not connected within a few seconds
 * is closed and retried until the overall deadline.
 */
static bool session_open_flags(session_t *s, const char *suffix, int timeout_ms, int flags) {
    char host[256];
    snprintf(host, sizeof host, "%s%s", server, suffix);
    recorder_init(&s->rec);
    for (int attempt = 0; attempt < 5; attempt++) {
        s->zh = zookeeper_init(host, record_watcher, timeout_ms, NULL, &s->rec, flags);
        EXPECT(s->zh != NULL, "zookeeper_init(%s) failed: %s", host, strerror(errno));
        struct timespec dl = deadline_in(4000);
        pthread_mutex_lock(&s->rec.mu);
        while (s->rec.session_state != ZOO_CONNECTED_STATE)
            if (pthread_cond_timedwait(&s->rec.cv, &s->rec.mu, &dl) == ETIMEDOUT) break;
        bool up = s->rec.session_state == ZOO_CONNECTED_STATE;
        pthread_mutex_unlock(&s->rec.mu);
        if (up) return true;
        zookeeper_close(s->zh);
        s->zh = NULL;
        s->rec.session_state = 0;
    }
    return failf(__LINE__, "no ZOO_CONNECTED_STATE from %s within 20 s", host);
}

static bool session_open_with(session_t *s, const char *suffix, int timeout_ms) {
    return session_open_flags(s, suffix, timeout_ms, 0);
}

static bool session_open(session_t *s, const char *suffix) {
    return session_open_with(s, suffix, SESSION_TIMEOUT_MS);
}

/* Waits until the global watcher has seen session state `state`; false on timeout. */
static bool wait_session_state(session_t *s, int state, int ms) {
    struct timespec dl = deadline_in(ms);
    pthread_mutex_lock(&s->rec.mu);
    while (s->rec.session_state != state)
        if (pthread_cond_timedwait(&s->rec.cv, &s->rec.mu, &dl) == ETIMEDOUT) break;
    bool ok = s->rec.session_state == state;
    pthread_mutex_unlock(&s->rec.mu);
    return ok;
}

static int session_close(session_t *s) {
    int rc = ZOK;
    if (s->zh) rc = zookeeper_close(s->zh);
    s->zh = NULL;
    recorder_destroy(&s->rec);
    return rc;
}

/* Field-by-field comparison, so that a mismatch names the field. */
static bool stat_equal(const struct Stat *got, const struct Stat *want, const char *what, int line) {
#define FIELD(f)                                                                                           \
    if (got->f != want->f)                                                                                 \
        return failf(line, "%s: " #f " = %" PRId64 ", want %" PRId64, what, (int64_t)got->f, (int64_t)want->f);
    FIELD(czxid) FIELD(mzxid) FIELD(ctime) FIELD(mtime) FIELD(version) FIELD(cversion) FIELD(aversion)
    FIELD(ephemeralOwner) FIELD(dataLength) FIELD(numChildren) FIELD(pzxid)
#undef FIELD
    return true;
}
#define EXPECT_STAT(got, want, what)                                                                       \
    do {                                                                                                   \
        if (!stat_equal((got), (want), (what), __LINE__)) return false;                                    \
    } while (0)

/* ---------- shared state between checks ---------- */

static session_t A; /* the main session; stays open for the whole run */

static bool create_plain(zhandle_t *zh, const char *path, const char *data) {
    EXPECT_RC(zoo_create(zh, path, data, data ? (int)strlen(data) : -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT,
                         NULL, 0),
              ZOK);
    return true;
}

static bool expect_data(zhandle_t *zh, const char *path, const char *want, struct Stat *st, int line) {
    char buf[256];
    int len = sizeof buf;
    int rc = zoo_get(zh, path, 0, buf, &len, st);
    if (rc != ZOK) return failf(line, "zoo_get(%s) returned %s", path, rc_name(rc));
    if (len != (int)strlen(want) || memcmp(buf, want, (size_t)len) != 0)
        return failf(line, "zoo_get(%s) data \"%.*s\" (len %d), want \"%s\"", path, len < 0 ? 0 : len, buf, len,
                     want);
    return true;
}
#define EXPECT_DATA(zh, path, want, st)                                                                    \
    do {                                                                                                   \
        if (!expect_data((zh), (path), (want), (st), __LINE__)) return false;                              \
    } while (0)

/* ---------- the checks ---------- */

static bool check_connect(void) {
    if (!session_open(&A, "")) return false;
    const clientid_t *id = zoo_client_id(A.zh);
    EXPECT(id != NULL && id->client_id != 0, "zoo_client_id gave no session id");
    EXPECT_I64(zoo_state(A.zh), ZOO_CONNECTED_STATE);
    EXPECT(zoo_recv_timeout(A.zh) > 0, "negotiated timeout %d", zoo_recv_timeout(A.zh));
    return true;
}

static struct Stat crud_created;

static bool check_create_stat(void) {
    char path[64];
    struct Stat st;
    EXPECT_RC(zoo_create2(A.zh, "/crud", "hello", 5, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, path, sizeof path, &st),
              ZOK);
    EXPECT_STR(path, "/crud");
    EXPECT_I64(st.version, 0);
    EXPECT_I64(st.cversion, 0);
    EXPECT_I64(st.aversion, 0);
    EXPECT_I64(st.numChildren, 0);
    EXPECT_I64(st.dataLength, 5);
    EXPECT_I64(st.ephemeralOwner, 0);
    EXPECT(st.czxid > 0, "czxid %" PRId64, st.czxid);
    EXPECT_I64(st.mzxid, st.czxid);
    EXPECT_I64(st.pzxid, st.czxid);
    EXPECT(st.ctime > 1600000000000LL, "ctime %" PRId64 " is not ms since the epoch", st.ctime);
    EXPECT_I64(st.mtime, st.ctime);
    crud_created = st;
    return true;
}

static bool check_get_data(void) {
    struct Stat st;
    EXPECT_DATA(A.zh, "/crud", "hello", &st);
    EXPECT_STAT(&st, &crud_created, "zoo_get stat vs create2 stat");
    struct Stat ex;
    EXPECT_RC(zoo_exists(A.zh, "/crud", 0, &ex), ZOK);
    EXPECT_STAT(&ex, &crud_created, "zoo_exists stat vs create2 stat");
    /* A node created with NULL data reads back as length -1 through the C client. */
    EXPECT_RC(zoo_create2(A.zh, "/nulldata", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0, &st), ZOK);
    EXPECT_I64(st.dataLength, 0);
    char buf[16];
    int len = sizeof buf;
    EXPECT_RC(zoo_get(A.zh, "/nulldata", 0, buf, &len, &st), ZOK);
    EXPECT_I64(len, -1);
    /* Empty data is not NULL data: it reads back as length 0; setting NULL makes it -1 again. */
    EXPECT_RC(zoo_set(A.zh, "/nulldata", "", 0, 0), ZOK);
    len = sizeof buf;
    EXPECT_RC(zoo_get(A.zh, "/nulldata", 0, buf, &len, &st), ZOK);
    EXPECT_I64(len, 0);
    EXPECT_RC(zoo_set(A.zh, "/nulldata", NULL, -1, 1), ZOK);
    len = sizeof buf;
    EXPECT_RC(zoo_get(A.zh, "/nulldata", 0, buf, &len, &st), ZOK);
    EXPECT_I64(len, -1);
    EXPECT_I64(st.version, 2);
    EXPECT_I64(st.dataLength, 0);
    EXPECT_RC(zoo_delete(A.zh, "/nulldata", 2), ZOK);
    return true;
}

static bool check_set_stat(void) {
    struct Stat st;
    EXPECT_RC(zoo_set2(A.zh, "/crud", "hello world", 11, 0, &st), ZOK);
    EXPECT_I64(st.version, 1);
    EXPECT_I64(st.dataLength, 11);
    EXPECT_I64(st.czxid, crud_created.czxid);
    EXPECT(st.mzxid > st.czxid, "mzxid %" PRId64 " not > czxid %" PRId64, st.mzxid, st.czxid);
    EXPECT_I64(st.ctime, crud_created.ctime);
    EXPECT(st.ctime <= st.mtime, "ctime %" PRId64 " > mtime %" PRId64, st.ctime, st.mtime);
    EXPECT_I64(st.pzxid, crud_created.pzxid);
    EXPECT_I64(st.cversion, 0);
    EXPECT_I64(st.aversion, 0);
    struct Stat got;
    EXPECT_DATA(A.zh, "/crud", "hello world", &got);
    EXPECT_STAT(&got, &st, "zoo_get stat vs set2 stat");
    /* zoo_set (no stat) with the right version, then -1 (any version). */
    EXPECT_RC(zoo_set(A.zh, "/crud", "v2", 2, 1), ZOK);
    EXPECT_RC(zoo_set(A.zh, "/crud", "v3", 2, -1), ZOK);
    EXPECT_DATA(A.zh, "/crud", "v3", &got);
    EXPECT_I64(got.version, 3);
    EXPECT_I64(got.dataLength, 2);
    EXPECT(got.mzxid > st.mzxid, "mzxid did not grow: %" PRId64 " after %" PRId64, got.mzxid, st.mzxid);
    return true;
}

static bool check_children_stat(void) {
    struct Stat a, b, parent;
    EXPECT_RC(zoo_create2(A.zh, "/crud/a", "1", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0, &a), ZOK);
    EXPECT_RC(zoo_create2(A.zh, "/crud/b", "22", 2, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0, &b), ZOK);
    EXPECT(b.czxid > a.czxid, "second child czxid %" PRId64 " not > first %" PRId64, b.czxid, a.czxid);
    struct String_vector kids = {0};
    EXPECT_RC(zoo_get_children2(A.zh, "/crud", 0, &kids, &parent), ZOK);
    int count = kids.count;
    bool names = count == 2 && ((strcmp(kids.data[0], "a") == 0 && strcmp(kids.data[1], "b") == 0) ||
                                (strcmp(kids.data[0], "b") == 0 && strcmp(kids.data[1], "a") == 0));
    deallocate_String_vector(&kids);
    EXPECT(names, "children of /crud: %d names, want {a, b}", count);
    EXPECT_I64(parent.numChildren, 2);
    EXPECT_I64(parent.cversion, 2);
    EXPECT_I64(parent.pzxid, b.czxid);
    EXPECT_I64(parent.version, 3); /* child changes leave the data version and mzxid alone */
    EXPECT(parent.mzxid < a.czxid, "parent mzxid %" PRId64 " moved with a child create", parent.mzxid);
    EXPECT_RC(zoo_delete(A.zh, "/crud/a", 0), ZOK);
    EXPECT_RC(zoo_exists(A.zh, "/crud", 0, &parent), ZOK);
    EXPECT_I64(parent.numChildren, 1);
    EXPECT_I64(parent.cversion, 3); /* create + create + delete */
    EXPECT(parent.pzxid > b.czxid, "pzxid %" PRId64 " did not move on child delete", parent.pzxid);
    return true;
}

static bool check_err_nonode(void) {
    char buf[16];
    int len = sizeof buf;
    struct Stat st;
    EXPECT_RC(zoo_get(A.zh, "/nope", 0, buf, &len, &st), ZNONODE);
    EXPECT_RC(zoo_exists(A.zh, "/nope", 0, &st), ZNONODE);
    EXPECT_RC(zoo_set(A.zh, "/nope", "x", 1, -1), ZNONODE);
    EXPECT_RC(zoo_delete(A.zh, "/nope", -1), ZNONODE);
    EXPECT_RC(zoo_create(A.zh, "/nope/child", "x", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0), ZNONODE);
    struct String_vector kids = {0};
    EXPECT_RC(zoo_get_children2(A.zh, "/nope", 0, &kids, &st), ZNONODE);
    struct ACL_vector acl = {0};
    EXPECT_RC(zoo_get_acl(A.zh, "/nope", &acl, &st), ZNONODE);
    return true;
}

static bool check_err_nodeexists(void) {
    char path[64] = "unchanged";
    EXPECT_RC(zoo_create(A.zh, "/crud", "again", 5, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, path, sizeof path),
              ZNODEEXISTS);
    EXPECT_RC(zoo_create(A.zh, "/crud/b", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZNODEEXISTS);
    struct Stat st;
    EXPECT_DATA(A.zh, "/crud", "v3", &st);
    EXPECT_I64(st.version, 3);
    return true;
}

static bool check_err_badversion(void) {
    struct Stat st;
    EXPECT_RC(zoo_set2(A.zh, "/crud", "nope", 4, 2, &st), ZBADVERSION);
    EXPECT_RC(zoo_set(A.zh, "/crud", "nope", 4, 7), ZBADVERSION);
    EXPECT_RC(zoo_delete(A.zh, "/crud/b", 1), ZBADVERSION);
    EXPECT_RC(zoo_set_acl(A.zh, "/crud", 5, &ZOO_OPEN_ACL_UNSAFE), ZBADVERSION);
    EXPECT_DATA(A.zh, "/crud", "v3", &st);
    EXPECT_I64(st.version, 3);
    EXPECT_I64(st.aversion, 0);
    EXPECT_RC(zoo_exists(A.zh, "/crud/b", 0, &st), ZOK);
    return true;
}

static bool check_err_notempty(void) {
    EXPECT_RC(zoo_delete(A.zh, "/crud", -1), ZNOTEMPTY);
    EXPECT_RC(zoo_delete(A.zh, "/crud", 3), ZNOTEMPTY);
    struct Stat st;
    EXPECT_RC(zoo_exists(A.zh, "/crud", 0, &st), ZOK);
    EXPECT_I64(st.numChildren, 1);
    return true;
}

static bool check_delete(void) {
    struct Stat st;
    EXPECT_RC(zoo_delete(A.zh, "/crud/b", 0), ZOK);
    EXPECT_RC(zoo_exists(A.zh, "/crud/b", 0, &st), ZNONODE);
    EXPECT_RC(zoo_delete(A.zh, "/crud", 3), ZOK);
    EXPECT_RC(zoo_exists(A.zh, "/crud", 0, &st), ZNONODE);
    EXPECT_RC(zoo_delete(A.zh, "/crud", -1), ZNONODE);
    return true;
}

/* Session B creates the sequential ephemerals; A watches them vanish when B closes. */
static session_t B;
static int64_t b_session_id;

static bool check_sequential_ephemeral(void) {
    if (!session_open(&B, "")) return false;
    b_session_id = zoo_client_id(B.zh)->client_id;
    EXPECT(b_session_id != zoo_client_id(A.zh)->client_id, "two handles share session id %" PRIx64,
           b_session_id);
    TRY(create_plain(A.zh, "/q", NULL));
    char path[64];
    struct Stat st;
    EXPECT_RC(zoo_create2(B.zh, "/q/n-", "e0", 2, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, path, sizeof path,
                          &st),
              ZOK);
    EXPECT_STR(path, "/q/n-0000000000");
    EXPECT_I64(st.ephemeralOwner, b_session_id);
    EXPECT_I64(st.dataLength, 2);
    EXPECT_RC(zoo_create(B.zh, "/q/n-", "e1", 2, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, path, sizeof path),
              ZOK);
    EXPECT_STR(path, "/q/n-0000000001");
    /* A truncated path buffer still creates the full name on the server. */
    char small[8];
    EXPECT_RC(
        zoo_create(B.zh, "/q/n-", "e2", 2, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, small, sizeof small),
        ZOK);
    EXPECT_STR(small, "/q/n-00");
    /* Another session's view: owner is B's session id, not A's. */
    EXPECT_RC(zoo_exists(A.zh, "/q/n-0000000002", 0, &st), ZOK);
    EXPECT_I64(st.ephemeralOwner, b_session_id);
    EXPECT_RC(zoo_exists(A.zh, "/q", 0, &st), ZOK);
    EXPECT_I64(st.ephemeralOwner, 0);
    EXPECT_I64(st.numChildren, 3);
    EXPECT_I64(st.cversion, 3);
    /* A persistent sequential under the same parent continues the same counter. */
    EXPECT_RC(zoo_create(A.zh, "/q/p-", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, path, sizeof path),
              ZOK);
    EXPECT_STR(path, "/q/p-0000000003");
    EXPECT_RC(zoo_delete(A.zh, "/q/p-0000000003", 0), ZOK);
    return true;
}

static bool check_no_children_for_ephemerals(void) {
    EXPECT_RC(zoo_create(B.zh, "/q/n-0000000000/x", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0),
              ZNOCHILDRENFOREPHEMERALS);
    EXPECT_RC(zoo_create(A.zh, "/q/n-0000000000/x", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0),
              ZNOCHILDRENFOREPHEMERALS);
    return true;
}

static bool check_ephemerals_vanish_on_close(void) {
    static recorder_t rec; /* static: a watch left behind by a failure must not point into a dead frame */
    recorder_init(&rec);
    bool ok = false;
    struct Stat st;
    struct String_vector kids = {0};
    const char *names[] = {"/q/n-0000000000", "/q/n-0000000001", "/q/n-0000000002"};
    for (int i = 0; i < 3; i++)
        if (zoo_wexists(A.zh, names[i], record_watcher, &rec, &st) != ZOK || st.ephemeralOwner != b_session_id) {
            failf(__LINE__, "zoo_wexists(%s) before close: not an ephemeral of B", names[i]);
            goto out;
        }
    /* A child watch through the global watcher (watch=1). */
    if (zoo_get_children2(A.zh, "/q", 1, &kids, &st) != ZOK || kids.count != 3) {
        failf(__LINE__, "zoo_get_children2(/q) before close: %d children", kids.count);
        goto out;
    }
    deallocate_String_vector(&kids);
    int rc = session_close(&B);
    if (rc != ZOK) {
        failf(__LINE__, "zookeeper_close(B) returned %s", rc_name(rc));
        goto out;
    }
    if (!wait_event_count(&rec, 3, EVENT_WAIT_MS)) {
        char got[600];
        describe_events(&rec, got, sizeof got);
        failf(__LINE__, "after closing B, want 3 DELETED events, got [%s]", got);
        goto out;
    }
    /* The order of the deletes is not specified by ZooKeeper: compare as a set. */
    for (int i = 0; i < 3; i++) {
        int hits = 0;
        for (int j = 0; j < rec.n; j++)
            if (strcmp(rec.ev[j].path, names[i]) == 0 && rec.ev[j].type == ZOO_DELETED_EVENT) hits++;
        if (hits != 1) {
            char got[600];
            describe_events(&rec, got, sizeof got);
            failf(__LINE__, "want one DELETED %s, got [%s]", names[i], got);
            goto out;
        }
    }
    char fp[64];
    if (!fence(A.zh, &A.rec, fp, sizeof fp)) goto out;
    {
        /* One CHILD event for /q despite three deletes: the child watch is one-shot. */
        bool same = A.rec.n == 2 && A.rec.ev[0].type == ZOO_CHILD_EVENT && strcmp(A.rec.ev[0].path, "/q") == 0 &&
                    A.rec.ev[1].type == ZOO_CREATED_EVENT && strcmp(A.rec.ev[1].path, fp) == 0;
        if (!same) {
            char got[600];
            describe_events(&A.rec, got, sizeof got);
            failf(__LINE__, "global watcher events [%s], want [CHILD /q, CREATED %s]", got, fp);
            goto out;
        }
    }
    if (rec.n != 3) {
        failf(__LINE__, "%d events for the ephemerals, want 3", rec.n);
        goto out;
    }
    if (zoo_get_children2(A.zh, "/q", 0, &kids, &st) != ZOK || kids.count != 0 || st.numChildren != 0) {
        failf(__LINE__, "/q still has %d children after B closed", kids.count);
        goto out;
    }
    ok = true;
out:
    deallocate_String_vector(&kids);
    pthread_mutex_lock(&A.rec.mu);
    A.rec.n = 0;
    pthread_mutex_unlock(&A.rec.mu);
    return ok;
}

static void reset_recorder(recorder_t *r) {
    pthread_mutex_lock(&r->mu);
    r->n = 0;
    pthread_mutex_unlock(&r->mu);
}

static bool check_watch_data_once(void) {
    static recorder_t rec;
    recorder_init(&rec);
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    TRY(create_plain(A.zh, "/w", "0"));
    EXPECT_RC(zoo_wget(A.zh, "/w", record_watcher, &rec, buf, &len, &st), ZOK);
    EXPECT_RC(zoo_set(A.zh, "/w", "1", 1, -1), ZOK);
    EXPECT(wait_event_for(&rec, "/w", EVENT_WAIT_MS), "no event for /w after set");
    EXPECT_RC(zoo_set(A.zh, "/w", "2", 1, -1), ZOK); /* the watch is spent: no second event */
    char fp[64];
    if (!fence(A.zh, &rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&rec, {ZOO_CHANGED_EVENT, "/w"}, {ZOO_CREATED_EVENT, fp});
    /* The global watcher saw none of it. */
    EXPECT_I64(A.rec.n, 0);
    /* zoo_get with watch=1 registers on the global watcher instead. */
    len = sizeof buf;
    EXPECT_RC(zoo_get(A.zh, "/w", 1, buf, &len, &st), ZOK);
    EXPECT_RC(zoo_set(A.zh, "/w", "3", 1, -1), ZOK);
    if (!fence(A.zh, &A.rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&A.rec, {ZOO_CHANGED_EVENT, "/w"}, {ZOO_CREATED_EVENT, fp});
    reset_recorder(&A.rec);
    return true;
}

static bool check_watch_child(void) {
    struct String_vector kids = {0};
    struct Stat st;
    EXPECT_RC(zoo_get_children2(A.zh, "/w", 1, &kids, &st), ZOK);
    EXPECT_I64(kids.count, 0);
    deallocate_String_vector(&kids);
    TRY(create_plain(A.zh, "/w/c1", "x"));
    EXPECT(wait_event_for(&A.rec, "/w", EVENT_WAIT_MS), "no event for /w after a child create");
    TRY(create_plain(A.zh, "/w/c2", "x")); /* spent: no second CHILD event */
    EXPECT_RC(zoo_set(A.zh, "/w", "4", 1, -1), ZOK);      /* a child watch ignores data changes */
    char fp[64];
    if (!fence(A.zh, &A.rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&A.rec, {ZOO_CHILD_EVENT, "/w"}, {ZOO_CREATED_EVENT, fp});
    reset_recorder(&A.rec);
    return true;
}

static bool check_watch_exists_created(void) {
    static recorder_t rec;
    recorder_init(&rec);
    struct Stat st;
    EXPECT_RC(zoo_wexists(A.zh, "/w/e", record_watcher, &rec, &st), ZNONODE);
    TRY(create_plain(A.zh, "/w/e", "born"));
    EXPECT(wait_event_for(&rec, "/w/e", EVENT_WAIT_MS), "no event for /w/e after create");
    char fp[64];
    if (!fence(A.zh, &rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&rec, {ZOO_CREATED_EVENT, "/w/e"}, {ZOO_CREATED_EVENT, fp});
    return true;
}

static bool check_watch_deleted(void) {
    static recorder_t rec;
    recorder_init(&rec);
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    struct String_vector kids = {0};
    EXPECT_RC(zoo_wget(A.zh, "/w/e", record_watcher, &rec, buf, &len, &st), ZOK);
    EXPECT_RC(zoo_get_children2(A.zh, "/w", 1, &kids, &st), ZOK); /* child watch on the global watcher */
    EXPECT_I64(kids.count, 3);
    deallocate_String_vector(&kids);
    EXPECT_RC(zoo_delete(A.zh, "/w/e", -1), ZOK);
    EXPECT(wait_event_for(&rec, "/w/e", EVENT_WAIT_MS), "no event for /w/e after delete");
    char fp[64];
    if (!fence(A.zh, &rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&rec, {ZOO_DELETED_EVENT, "/w/e"}, {ZOO_CREATED_EVENT, fp});
    if (!fence(A.zh, &A.rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&A.rec, {ZOO_CHILD_EVENT, "/w"}, {ZOO_CREATED_EVENT, fp});
    reset_recorder(&A.rec);
    return true;
}

static bool check_watch_from_other_session(void) {
    /* A watch set by one session fires for a write made by another. */
    static recorder_t rec;
    recorder_init(&rec);
    session_t C;
    if (!session_open(&C, "")) return false;
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    int rc = zoo_wget(A.zh, "/w", record_watcher, &rec, buf, &len, &st);
    if (rc == ZOK) rc = zoo_set(C.zh, "/w", "from C", 6, st.version);
    bool got = rc == ZOK && wait_event_for(&rec, "/w", EVENT_WAIT_MS);
    session_close(&C);
    EXPECT(rc == ZOK, "wget/set returned %s", rc_name(rc));
    EXPECT(got, "no event for /w after another session's set");
    char fp[64];
    if (!fence(A.zh, &rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&rec, {ZOO_CHANGED_EVENT, "/w"}, {ZOO_CREATED_EVENT, fp});
    EXPECT_DATA(A.zh, "/w", "from C", &st);
    return true;
}

static bool check_multi_commit(void) {
    struct Stat m0, st;
    EXPECT_RC(zoo_create2(A.zh, "/m", "m", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0, &m0), ZOK);
    TRY(create_plain(A.zh, "/m/old", "old"));
    zoo_op_t ops[4];
    zoo_op_result_t res[4];
    char created[64] = "";
    struct Stat set_stat;
    memset(res, 0x5a, sizeof res);
    memset(&set_stat, 0, sizeof set_stat);
    zoo_check_op_init(&ops[0], "/m", 0);
    zoo_create_op_init(&ops[1], "/m/new-", "n", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, created,
                       sizeof created);
    zoo_set_op_init(&ops[2], "/m", "x", 1, 0, &set_stat);
    zoo_delete_op_init(&ops[3], "/m/old", 0);
    EXPECT_RC(zoo_multi(A.zh, 4, ops, res), ZOK);
    for (int i = 0; i < 4; i++) EXPECT(res[i].err == ZOK, "op %d err %s", i, rc_name(res[i].err));
    /* /m had one child create before (/m/old), so the sequence counter is 1. */
    EXPECT_STR(created, "/m/new-0000000001");
    EXPECT_I64(set_stat.version, 1);
    EXPECT_I64(set_stat.dataLength, 1);
    EXPECT(set_stat.mzxid > m0.mzxid, "set op mzxid %" PRId64 " not > %" PRId64, set_stat.mzxid, m0.mzxid);
    /* The state afterwards, and one zxid for the whole transaction. */
    struct Stat nst;
    EXPECT_DATA(A.zh, "/m/new-0000000001", "n", &nst);
    EXPECT_I64(nst.czxid, set_stat.mzxid);
    EXPECT_DATA(A.zh, "/m", "x", &st);
    EXPECT_I64(st.version, 1);
    EXPECT_I64(st.numChildren, 1);
    EXPECT_I64(st.cversion, 3); /* /m/old create, /m/new create, /m/old delete */
    EXPECT_I64(st.pzxid, set_stat.mzxid);
    EXPECT_RC(zoo_exists(A.zh, "/m/old", 0, &st), ZNONODE);
    return true;
}

static bool check_multi_fail(void) {
    struct Stat before, st;
    EXPECT_RC(zoo_exists(A.zh, "/m", 0, &before), ZOK);
    zoo_op_t ops[3];
    zoo_op_result_t res[3];
    char created[64] = "";
    struct Stat set_stat;
    memset(res, 0x5a, sizeof res);
    zoo_create_op_init(&ops[0], "/m/never", "z", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, created, sizeof created);
    zoo_check_op_init(&ops[1], "/m", 99);
    zoo_set_op_init(&ops[2], "/m", "y", 1, -1, &set_stat);
    EXPECT_RC(zoo_multi(A.zh, 3, ops, res), ZBADVERSION);
    EXPECT(res[0].err == ZOK, "op 0 (create) err %s, want ZOK", rc_name(res[0].err));
    EXPECT(res[1].err == ZBADVERSION, "op 1 (check) err %s, want ZBADVERSION", rc_name(res[1].err));
    EXPECT(res[2].err == ZRUNTIMEINCONSISTENCY, "op 2 (set) err %s, want ZRUNTIMEINCONSISTENCY",
           rc_name(res[2].err));
    /* Nothing applied. */
    EXPECT_RC(zoo_exists(A.zh, "/m/never", 0, &st), ZNONODE);
    EXPECT_DATA(A.zh, "/m", "x", &st);
    EXPECT_I64(st.version, before.version);
    EXPECT_I64(st.mzxid, before.mzxid);
    EXPECT_I64(st.cversion, before.cversion);
    EXPECT_I64(st.pzxid, before.pzxid);
    /* A failing op first: every later op is ZRUNTIMEINCONSISTENCY. */
    zoo_delete_op_init(&ops[0], "/m/ghost", -1);
    zoo_create_op_init(&ops[1], "/m/never", "z", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    memset(res, 0x5a, sizeof res);
    EXPECT_RC(zoo_multi(A.zh, 2, ops, res), ZNONODE);
    EXPECT(res[0].err == ZNONODE, "op 0 (delete) err %s, want ZNONODE", rc_name(res[0].err));
    EXPECT(res[1].err == ZRUNTIMEINCONSISTENCY, "op 1 (create) err %s, want ZRUNTIMEINCONSISTENCY",
           rc_name(res[1].err));
    EXPECT_RC(zoo_exists(A.zh, "/m/never", 0, &st), ZNONODE);
    /* The failed multis left the sequence counter alone. */
    char path[64];
    EXPECT_RC(zoo_create(A.zh, "/m/s-", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, path, sizeof path),
              ZOK);
    EXPECT_STR(path, "/m/s-0000000002");
    return true;
}

static bool check_acl_default(void) {
    struct ACL_vector acl = {0};
    struct Stat st;
    EXPECT_RC(zoo_get_acl(A.zh, "/m", &acl, &st), ZOK);
    int count = acl.count;
    bool world = count == 1 && acl.data[0].perms == ZOO_PERM_ALL && strcmp(acl.data[0].id.scheme, "world") == 0 &&
                 strcmp(acl.data[0].id.id, "anyone") == 0;
    deallocate_ACL_vector(&acl);
    EXPECT(world, "ACL of /m: %d entries, want [world:anyone perms 31]", count);
    EXPECT_I64(st.aversion, 0);
    EXPECT_I64(st.version, 1);
    return true;
}

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
} completion_t;

static void auth_done(int rc, const void *data) {
    completion_t *c = (completion_t *)data;
    pthread_mutex_lock(&c->mu);
    c->done = true;
    c->rc = rc;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static bool add_digest(zhandle_t *zh, const char *cred, int line) {
    completion_t c = {.done = false, .rc = -999};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    int rc = zoo_add_auth(zh, "digest", cred, (int)strlen(cred), auth_done, &c);
    struct timespec dl = deadline_in(EVENT_WAIT_MS);
    pthread_mutex_lock(&c.mu);
    while (rc == ZOK && !c.done)
        if (pthread_cond_timedwait(&c.cv, &c.mu, &dl) == ETIMEDOUT) break;
    bool done = c.done;
    int crc = c.rc;
    pthread_mutex_unlock(&c.mu);
    if (rc != ZOK) return failf(line, "zoo_add_auth returned %s", rc_name(rc));
    if (!done) {
        /* The callback may still run later and touch `c`: leak it rather than destroy it under the library. */
        return failf(line, "zoo_add_auth completion did not run within %d ms", EVENT_WAIT_MS);
    }
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    if (crc != ZOK) return failf(line, "zoo_add_auth completion rc %s", rc_name(crc));
    return true;
}

/* base64(sha1("alice:secret")), the id ZooKeeper's DigestAuthenticationProvider derives for alice. */
#define ALICE_DIGEST_ID "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="

static bool check_acl_digest_noauth(void) {
    if (!add_digest(A.zh, "alice:secret", __LINE__)) return false;
    TRY(create_plain(A.zh, "/acl", "secret data"));
    EXPECT_RC(zoo_set_acl(A.zh, "/acl", 0, &ZOO_CREATOR_ALL_ACL), ZOK);
    struct ACL_vector acl = {0};
    struct Stat st;
    EXPECT_RC(zoo_get_acl(A.zh, "/acl", &acl, &st), ZOK);
    char desc[256] = "";
    if (acl.count >= 1)
        snprintf(desc, sizeof desc, "%s:%s perms %d", acl.data[0].id.scheme, acl.data[0].id.id, acl.data[0].perms);
    bool digest = acl.count == 1 && acl.data[0].perms == ZOO_PERM_ALL &&
                  strcmp(acl.data[0].id.scheme, "digest") == 0 && strcmp(acl.data[0].id.id, ALICE_DIGEST_ID) == 0;
    int count = acl.count;
    deallocate_ACL_vector(&acl);
    EXPECT(digest, "ACL of /acl: %d entries, first [%s], want [digest:" ALICE_DIGEST_ID " perms 31]", count, desc);
    EXPECT_I64(st.aversion, 1);
    EXPECT_I64(st.version, 0);

    /* Session without credentials, and one with the wrong password. */
    session_t anon, wrong;
    if (!session_open(&anon, "")) return false;
    if (!session_open(&wrong, "")) {
        session_close(&anon);
        return false;
    }
    bool ok = add_digest(wrong.zh, "alice:guess", __LINE__);
    char buf[32];
    int len = sizeof buf;
    int r_get = zoo_get(anon.zh, "/acl", 0, buf, &len, &st);
    int r_set = zoo_set(anon.zh, "/acl", "x", 1, -1);
    int r_acl = zoo_set_acl(anon.zh, "/acl", 1, &ZOO_OPEN_ACL_UNSAFE);
    int r_kid = zoo_create(anon.zh, "/acl/k", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    int r_exists = zoo_exists(anon.zh, "/acl", 0, &st);
    struct ACL_vector acl2 = {0};
    int r_getacl = zoo_get_acl(anon.zh, "/acl", &acl2, &st); /* getACL needs READ or ADMIN */
    deallocate_ACL_vector(&acl2);
    len = sizeof buf;
    int w_get = zoo_get(wrong.zh, "/acl", 0, buf, &len, &st);
    /* Deleting /acl itself needs DELETE on its parent (/), which is open to everyone. */
    int r_del = zoo_delete(anon.zh, "/acl", -1);
    session_close(&wrong);
    session_close(&anon);
    if (!ok) return false;
    EXPECT(r_get == ZNOAUTH, "anonymous zoo_get: %s, want ZNOAUTH", rc_name(r_get));
    EXPECT(r_set == ZNOAUTH, "anonymous zoo_set: %s, want ZNOAUTH", rc_name(r_set));
    EXPECT(r_acl == ZNOAUTH, "anonymous zoo_set_acl: %s, want ZNOAUTH", rc_name(r_acl));
    EXPECT(r_kid == ZNOAUTH, "anonymous zoo_create child: %s, want ZNOAUTH", rc_name(r_kid));
    EXPECT(r_del == ZOK, "anonymous zoo_delete(/acl) under an open parent: %s, want ZOK", rc_name(r_del));
    /* exists checks READ on a node that exists since ZooKeeper 3.9.2 / 3.8.4. */
    EXPECT(r_exists == ZNOAUTH, "anonymous zoo_exists: %s, want ZNOAUTH", rc_name(r_exists));
    EXPECT(r_getacl == ZNOAUTH, "anonymous zoo_get_acl: %s, want ZNOAUTH", rc_name(r_getacl));
    EXPECT(w_get == ZNOAUTH, "wrong-password zoo_get: %s, want ZNOAUTH", rc_name(w_get));
    EXPECT_RC(zoo_exists(A.zh, "/acl", 0, &st), ZNONODE);
    return true;
}

static bool check_acl_owner_access(void) {
    /* The authenticated session keeps full access to a CREATOR_ALL_ACL node, and can open it again. */
    struct Stat st;
    char path[64];
    EXPECT_RC(zoo_create(A.zh, "/acl2", "mine", 4, &ZOO_CREATOR_ALL_ACL, ZOO_PERSISTENT, path, sizeof path), ZOK);
    EXPECT_DATA(A.zh, "/acl2", "mine", &st);
    EXPECT_RC(zoo_set(A.zh, "/acl2", "still mine", 10, 0), ZOK);
    EXPECT_RC(zoo_create(A.zh, "/acl2/k", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0), ZOK);
    session_t anon;
    if (!session_open(&anon, "")) return false;
    char buf[32];
    int len = sizeof buf;
    int r_get = zoo_get(anon.zh, "/acl2", 0, buf, &len, &st);
    int r_kid = zoo_delete(anon.zh, "/acl2/k", -1);
    session_close(&anon);
    EXPECT(r_get == ZNOAUTH, "anonymous zoo_get(/acl2): %s, want ZNOAUTH", rc_name(r_get));
    EXPECT(r_kid == ZNOAUTH, "anonymous zoo_delete(/acl2/k): %s, want ZNOAUTH", rc_name(r_kid));
    EXPECT_RC(zoo_set_acl(A.zh, "/acl2", 0, &ZOO_READ_ACL_UNSAFE), ZOK);
    EXPECT_RC(zoo_set(A.zh, "/acl2", "ro", 2, -1), ZNOAUTH);
    EXPECT_DATA(A.zh, "/acl2", "still mine", &st);
    EXPECT_I64(st.aversion, 1);
    return true;
}

static bool check_acl_getacl_masks_digest(void) {
    /* Readers without ADMIN see each digest id masked to `user:x`; the owner sees the hash. */
    struct ACL entries[2] = {
        {.perms = ZOO_PERM_ALL, .id = {.scheme = (char *)"digest", .id = (char *)ALICE_DIGEST_ID}},
        {.perms = ZOO_PERM_READ, .id = {.scheme = (char *)"world", .id = (char *)"anyone"}},
    };
    struct ACL_vector mixed = {.count = 2, .data = entries};
    struct Stat st;
    EXPECT_RC(zoo_create(A.zh, "/acl3", "r", 1, &mixed, ZOO_PERSISTENT, NULL, 0), ZOK);
    session_t anon;
    if (!session_open(&anon, "")) return false;
    struct ACL_vector got = {0};
    char buf[8];
    int len = sizeof buf;
    int r_get = zoo_get(anon.zh, "/acl3", 0, buf, &len, &st);
    int r_set = zoo_set(anon.zh, "/acl3", "w", 1, -1);
    int r_acl = zoo_get_acl(anon.zh, "/acl3", &got, &st);
    session_close(&anon);
    EXPECT(r_get == ZOK, "anonymous zoo_get(/acl3) with world READ: %s", rc_name(r_get));
    EXPECT(r_set == ZNOAUTH, "anonymous zoo_set(/acl3) with world READ only: %s", rc_name(r_set));
    EXPECT(r_acl == ZOK, "anonymous zoo_get_acl(/acl3): %s", rc_name(r_acl));
    char desc[300] = "";
    for (int i = 0; i < got.count; i++) {
        size_t used = strlen(desc);
        snprintf(desc + used, sizeof desc - used, "%s%s:%s/%d", i ? ", " : "", got.data[i].id.scheme,
                 got.data[i].id.id, got.data[i].perms);
    }
    bool masked = got.count == 2 && strcmp(got.data[0].id.scheme, "digest") == 0 &&
                  strcmp(got.data[0].id.id, "alice:x") == 0 && got.data[0].perms == ZOO_PERM_ALL &&
                  strcmp(got.data[1].id.scheme, "world") == 0 && strcmp(got.data[1].id.id, "anyone") == 0 &&
                  got.data[1].perms == ZOO_PERM_READ;
    deallocate_ACL_vector(&got);
    EXPECT(masked, "anonymous getACL [%s], want [digest:alice:x/31, world:anyone/1]", desc);
    EXPECT_RC(zoo_get_acl(A.zh, "/acl3", &got, &st), ZOK);
    bool full = got.count == 2 && strcmp(got.data[0].id.id, ALICE_DIGEST_ID) == 0;
    deallocate_ACL_vector(&got);
    EXPECT(full, "owner's getACL does not show the digest hash");
    return true;
}

static bool check_chroot(void) {
    TRY(create_plain(A.zh, "/chroot", "root"));
    session_t R;
    if (!session_open(&R, "/chroot")) return false;
    static recorder_t rec;
    recorder_init(&rec);
    bool ok = false;
    char path[64];
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    struct String_vector kids = {0};
    int rc;
#define CHROOT_EXPECT(cond, ...)                                                                           \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            failf(__LINE__, __VA_ARGS__);                                                                  \
            goto out;                                                                                      \
        }                                                                                                  \
    } while (0)
    rc = zoo_create(R.zh, "/x", "in chroot", 9, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, path, sizeof path);
    CHROOT_EXPECT(rc == ZOK && strcmp(path, "/x") == 0, "create /x in chroot: %s, path \"%s\"", rc_name(rc), path);
    if (!expect_data(A.zh, "/chroot/x", "in chroot", &st, __LINE__)) goto out;
    rc = zoo_get(R.zh, "/", 0, buf, &len, &st);
    CHROOT_EXPECT(rc == ZOK && len == 4 && memcmp(buf, "root", 4) == 0, "get / in chroot: %s", rc_name(rc));
    rc = zoo_create2(R.zh, "/s-", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, path, sizeof path, &st);
    CHROOT_EXPECT(rc == ZOK && strcmp(path, "/s-0000000001") == 0, "sequential in chroot: %s, path \"%s\"",
                  rc_name(rc), path);
    CHROOT_EXPECT(st.ephemeralOwner == zoo_client_id(R.zh)->client_id, "ephemeralOwner %" PRIx64, st.ephemeralOwner);
    rc = zoo_exists(A.zh, "/chroot/s-0000000001", 0, &st);
    CHROOT_EXPECT(rc == ZOK, "outside view of /chroot/s-0000000001: %s", rc_name(rc));
    /* Watches report paths relative to the chroot. */
    rc = zoo_wexists(R.zh, "/y", record_watcher, &rec, &st);
    CHROOT_EXPECT(rc == ZNONODE, "wexists /y in chroot: %s", rc_name(rc));
    rc = zoo_get_children2(R.zh, "/", 1, &kids, &st);
    CHROOT_EXPECT(rc == ZOK && kids.count == 2 && st.numChildren == 2, "children of chroot /: %s, %d",
                  rc_name(rc), kids.count);
    if (!create_plain(A.zh, "/chroot/y", "outside")) goto out;
    CHROOT_EXPECT(wait_event_for(&rec, "/y", EVENT_WAIT_MS), "no event for /y in chroot");
    CHROOT_EXPECT(wait_event_for(&R.rec, "/", EVENT_WAIT_MS), "no CHILD event for / in chroot");
    CHROOT_EXPECT(rec.n == 1 && rec.ev[0].type == ZOO_CREATED_EVENT, "event for /y: %s", event_name(rec.ev[0].type));
    CHROOT_EXPECT(R.rec.n == 1 && R.rec.ev[0].type == ZOO_CHILD_EVENT, "event for /: %s",
                  event_name(R.rec.ev[0].type));
    /* multi inside the chroot: paths in, created path out. */
    {
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        char created[64] = "";
        zoo_create_op_init(&ops[0], "/z", "z", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, created, sizeof created);
        zoo_delete_op_init(&ops[1], "/x", 0);
        rc = zoo_multi(R.zh, 2, ops, res);
        CHROOT_EXPECT(rc == ZOK && res[0].err == ZOK && res[1].err == ZOK, "multi in chroot: %s (%s, %s)",
                      rc_name(rc), rc_name(res[0].err), rc_name(res[1].err));
        CHROOT_EXPECT(strcmp(created, "/z") == 0, "multi create in chroot returned \"%s\", want \"/z\"", created);
    }
    rc = zoo_exists(A.zh, "/chroot/z", 0, &st);
    CHROOT_EXPECT(rc == ZOK, "outside view of /chroot/z: %s", rc_name(rc));
    rc = zoo_exists(A.zh, "/chroot/x", 0, &st);
    CHROOT_EXPECT(rc == ZNONODE, "outside view of /chroot/x after multi delete: %s", rc_name(rc));
    rc = zoo_exists(A.zh, "/z", 0, &st);
    CHROOT_EXPECT(rc == ZNONODE, "/z escaped the chroot: %s", rc_name(rc));
    ok = true;
out:
#undef CHROOT_EXPECT
    deallocate_String_vector(&kids);
    rc = session_close(&R);
    if (ok && rc != ZOK) ok = failf(__LINE__, "zookeeper_close(chroot) returned %s", rc_name(rc));
    /* The chroot session's ephemeral is gone once it closed. */
    if (ok && zoo_exists(A.zh, "/chroot/s-0000000001", 0, &st) != ZNONODE)
        ok = failf(__LINE__, "chroot session's ephemeral outlived its session");
    return ok;
}

static bool check_session_timeout_negotiation(void) {
    /* Both servers run with tickTime 2000: sessions get between 2 and 20 ticks. */
    const int asked[] = {10000, 1000, 100000};
    const int want[] = {10000, 4000, 40000};
    for (int i = 0; i < 3; i++) {
        session_t s;
        if (!session_open_with(&s, "", asked[i])) return false;
        int got = zoo_recv_timeout(s.zh);
        session_close(&s);
        EXPECT(got == want[i], "asked for %d ms, negotiated %d ms, want %d", asked[i], got, want[i]);
    }
    return true;
}

static bool check_session_bad_password_expired(void) {
    /* Reattaching to a live session with the wrong password, or to an unknown session, is refused with
     * timeout 0, which the client reports as ZOO_EXPIRED_SESSION_STATE. */
    clientid_t forged[2];
    forged[0] = *zoo_client_id(A.zh);
    forged[0].passwd[0] ^= 0x55;
    memset(&forged[1], 0, sizeof forged[1]);
    forged[1].client_id = 0x7e57000000000001LL;
    memset(forged[1].passwd, 7, sizeof forged[1].passwd);
    for (int i = 0; i < 2; i++) {
        session_t s;
        recorder_init(&s.rec);
        s.zh = zookeeper_init(server, record_watcher, SESSION_TIMEOUT_MS, &forged[i], &s.rec, 0);
        EXPECT(s.zh != NULL, "zookeeper_init failed: %s", strerror(errno));
        bool expired = wait_session_state(&s, ZOO_EXPIRED_SESSION_STATE, EVENT_WAIT_MS);
        int last = s.rec.session_state;
        session_close(&s);
        EXPECT(expired, "%s session: last state %d, want ZOO_EXPIRED_SESSION_STATE (%d)",
               i == 0 ? "wrong-password" : "unknown", last, ZOO_EXPIRED_SESSION_STATE);
    }
    /* The real session is unharmed. */
    struct Stat st;
    EXPECT_RC(zoo_exists(A.zh, "/", 0, &st), ZOK);
    return true;
}

static bool check_special_nodes(void) {
    struct String_vector kids = {0};
    struct Stat st;
    EXPECT_RC(zoo_get_children2(A.zh, "/zookeeper", 0, &kids, &st), ZOK);
    bool names = kids.count == 2 && ((strcmp(kids.data[0], "config") == 0 && strcmp(kids.data[1], "quota") == 0) ||
                                     (strcmp(kids.data[0], "quota") == 0 && strcmp(kids.data[1], "config") == 0));
    int count = kids.count;
    deallocate_String_vector(&kids);
    EXPECT(names, "children of /zookeeper: %d, want {config, quota}", count);
    EXPECT_I64(st.numChildren, 2);
    EXPECT_I64(st.cversion, -2); /* stored 0 with 2 children: wire 0*2 - 2 */
    EXPECT_I64(st.czxid, 0);
    EXPECT_I64(st.ephemeralOwner, 0);
    /* zoo_getconfig reads /zookeeper/config: standalone servers have no dynamic config there. */
    char cfg[512], raw[512];
    int cfg_len = sizeof cfg, raw_len = sizeof raw;
    struct Stat cst, rst;
    EXPECT_RC(zoo_getconfig(A.zh, 0, cfg, &cfg_len, &cst), ZOK);
    EXPECT_RC(zoo_get(A.zh, "/zookeeper/config", 0, raw, &raw_len, &rst), ZOK);
    EXPECT(cfg_len == raw_len && (cfg_len <= 0 || memcmp(cfg, raw, (size_t)cfg_len) == 0),
           "zoo_getconfig gave %d bytes, zoo_get(/zookeeper/config) %d", cfg_len, raw_len);
    EXPECT_I64(cfg_len, 0);
    EXPECT_STAT(&cst, &rst, "getconfig stat vs get stat");
    return true;
}

static bool check_large_binary_data(void) {
    enum { SIZE = 512 * 1024 };
    char *data = malloc(SIZE), *back = malloc(SIZE + 1);
    EXPECT(data && back, "out of memory");
    for (int i = 0; i < SIZE; i++) data[i] = (char)((i * 131 + i / 997) & 0xff); /* NULs and high bytes */
    struct Stat st;
    int rc = zoo_create2(A.zh, "/big", data, SIZE, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0, &st);
    int len = SIZE + 1;
    struct Stat got;
    int rc2 = rc == ZOK ? zoo_get(A.zh, "/big", 0, back, &len, &got) : rc;
    bool same = rc2 == ZOK && len == SIZE && memcmp(data, back, SIZE) == 0;
    free(data);
    free(back);
    EXPECT(rc == ZOK, "create 512 KiB: %s", rc_name(rc));
    EXPECT(rc2 == ZOK, "get 512 KiB: %s", rc_name(rc2));
    EXPECT(same, "512 KiB read back as %d bytes, or with different content", len);
    EXPECT_I64(st.dataLength, SIZE);
    EXPECT_I64(got.dataLength, SIZE);
    EXPECT_RC(zoo_delete(A.zh, "/big", 0), ZOK);
    return true;
}

static bool check_ttl_container_modes(void) {
    /* Both servers run with extended types on (run.sh): TTL nodes exist, and like containers they show
     * ephemeralOwner 0 on the wire. */
    char path[64];
    struct Stat st;
    EXPECT_RC(zoo_create2_ttl(A.zh, "/ttl", "t", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_WITH_TTL, 600000, path,
                              sizeof path, &st),
              ZOK);
    EXPECT_STR(path, "/ttl");
    EXPECT_I64(st.ephemeralOwner, 0);
    EXPECT_I64(st.dataLength, 1);
    EXPECT_RC(zoo_create2_ttl(A.zh, "/ttl/s-", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL,
                              600000, path, sizeof path, &st),
              ZOK);
    EXPECT_STR(path, "/ttl/s-0000000000");
    EXPECT_I64(st.ephemeralOwner, 0);
    /* A TTL of 0 is out of range. */
    EXPECT_RC(zoo_create_ttl(A.zh, "/ttl0", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_WITH_TTL, 0, NULL, 0),
              ZBADARGUMENTS);
    EXPECT_RC(zoo_exists(A.zh, "/ttl0", 0, &st), ZNONODE);
    EXPECT_RC(zoo_create2(A.zh, "/box", "c", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, path, sizeof path, &st), ZOK);
    EXPECT_STR(path, "/box");
    EXPECT_I64(st.ephemeralOwner, 0);
    EXPECT_I64(st.version, 0);
    EXPECT_RC(zoo_delete(A.zh, "/box", 0), ZOK);
    EXPECT_RC(zoo_delete(A.zh, "/ttl/s-0000000000", 0), ZOK);
    EXPECT_RC(zoo_delete(A.zh, "/ttl", 0), ZOK);
    return true;
}

static bool check_add_auth_unknown_scheme(void) {
    session_t s;
    if (!session_open(&s, "")) return false;
    completion_t c = {.done = false, .rc = -999};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    int rc = zoo_add_auth(s.zh, "nosuchscheme", "x", 1, auth_done, &c);
    struct timespec dl = deadline_in(EVENT_WAIT_MS);
    pthread_mutex_lock(&c.mu);
    while (rc == ZOK && !c.done)
        if (pthread_cond_timedwait(&c.cv, &c.mu, &dl) == ETIMEDOUT) break;
    bool done = c.done;
    int crc = c.rc;
    pthread_mutex_unlock(&c.mu);
    bool failed_state = wait_session_state(&s, ZOO_AUTH_FAILED_STATE, EVENT_WAIT_MS);
    int state = s.rec.session_state;
    session_close(&s);
    EXPECT(rc == ZOK, "zoo_add_auth returned %s", rc_name(rc));
    EXPECT(done, "zoo_add_auth completion did not run");
    EXPECT(crc == ZAUTHFAILED, "zoo_add_auth completion rc %s, want ZAUTHFAILED", rc_name(crc));
    EXPECT(failed_state, "session state %d, want ZOO_AUTH_FAILED_STATE (%d)", state, ZOO_AUTH_FAILED_STATE);
    return true;
}

static bool check_multi_watch_order(void) {
    /* A multi's watch events arrive per sub-op, in op order. */
    static recorder_t rec;
    recorder_init(&rec);
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    struct String_vector kids = {0};
    EXPECT_RC(zoo_wexists(A.zh, "/m/mw", record_watcher, &rec, &st), ZNONODE);
    EXPECT_RC(zoo_wget_children2(A.zh, "/m", record_watcher, &rec, &kids, &st), ZOK);
    deallocate_String_vector(&kids);
    EXPECT_RC(zoo_wget(A.zh, "/m/s-0000000002", record_watcher, &rec, buf, &len, &st), ZOK);
    zoo_op_t ops[3];
    zoo_op_result_t res[3];
    zoo_set_op_init(&ops[0], "/m/s-0000000002", "s", 1, 0, NULL);
    zoo_create_op_init(&ops[1], "/m/mw", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    zoo_delete_op_init(&ops[2], "/m/mw", 0);
    EXPECT_RC(zoo_multi(A.zh, 3, ops, res), ZOK);
    char fp[64];
    if (!fence(A.zh, &rec, fp, sizeof fp)) return false;
    /* set fires the data watch; create fires the exists watch and the child watch; the delete finds both
     * spent. */
    EXPECT_EVENTS(&rec, {ZOO_CHANGED_EVENT, "/m/s-0000000002"}, {ZOO_CREATED_EVENT, "/m/mw"},
                  {ZOO_CHILD_EVENT, "/m"}, {ZOO_CREATED_EVENT, fp});
    return true;
}

static bool check_remove_watches(void) {
    static recorder_t rec;
    recorder_init(&rec);
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    EXPECT_RC(zoo_wget(A.zh, "/w", record_watcher, &rec, buf, &len, &st), ZOK);
    EXPECT_RC(zoo_remove_watches(A.zh, "/w", ZWATCHTYPE_DATA, record_watcher, &rec, 0), ZOK);
    EXPECT_RC(zoo_set(A.zh, "/w", "after remove", 12, -1), ZOK);
    char fp[64];
    if (!fence(A.zh, &rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&rec, {ZOO_CREATED_EVENT, fp});
    EXPECT_RC(zoo_remove_watches(A.zh, "/w", ZWATCHTYPE_DATA, record_watcher, &rec, 0), ZNOWATCHER);
    return true;
}

static bool check_readonly_flag_gets_rw_session(void) {
    /* A client that allows read-only mode still gets a read-write session from a server in the quorum. */
    session_t s;
    if (!session_open_flags(&s, "", SESSION_TIMEOUT_MS, ZOO_READONLY)) return false;
    int state = zoo_state(s.zh);
    int rc = zoo_create(s.zh, "/rw", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
    session_close(&s);
    EXPECT(state == ZOO_CONNECTED_STATE, "state %d, want ZOO_CONNECTED_STATE (%d)", state, ZOO_CONNECTED_STATE);
    EXPECT(rc == ZOK, "create in a ZOO_READONLY-flag session: %s", rc_name(rc));
    return true;
}

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
    char value[256];
} string_done_t;

static void sync_done(int rc, const char *value, const void *data) {
    string_done_t *d = (string_done_t *)data;
    pthread_mutex_lock(&d->mu);
    d->rc = rc;
    snprintf(d->value, sizeof d->value, "%s", value ? value : "(null)");
    d->done = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static bool check_sync_and_get_children(void) {
    static string_done_t d = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    EXPECT_RC(zoo_async(A.zh, "/w", sync_done, &d), ZOK);
    struct timespec dl = deadline_in(EVENT_WAIT_MS);
    pthread_mutex_lock(&d.mu);
    while (!d.done)
        if (pthread_cond_timedwait(&d.cv, &d.mu, &dl) == ETIMEDOUT) break;
    bool done = d.done;
    pthread_mutex_unlock(&d.mu);
    EXPECT(done, "sync completion did not run");
    EXPECT(d.rc == ZOK, "sync rc %s", rc_name(d.rc));
    EXPECT_STR(d.value, "/w");
    struct String_vector kids = {0};
    EXPECT_RC(zoo_get_children(A.zh, "/w", 0, &kids), ZOK);
    int count = kids.count;
    deallocate_String_vector(&kids);
    EXPECT_I64(count, 2); /* c1, c2 */
    return true;
}

static bool check_big_multi(void) {
    /* 200 creates in one multi, 200 children in one reply, 200 deletes in one multi. */
    enum { N = 200 };
    static zoo_op_t ops[N];
    static zoo_op_result_t res[N];
    static char paths[N][32], created[N][32];
    TRY(create_plain(A.zh, "/many", NULL));
    for (int i = 0; i < N; i++) {
        snprintf(paths[i], sizeof paths[i], "/many/k-");
        zoo_create_op_init(&ops[i], paths[i], "v", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, created[i],
                           sizeof created[i]);
    }
    EXPECT_RC(zoo_multi(A.zh, N, ops, res), ZOK);
    for (int i = 0; i < N; i++) {
        char want[32];
        snprintf(want, sizeof want, "/many/k-%010d", i);
        EXPECT(res[i].err == ZOK, "create %d: %s", i, rc_name(res[i].err));
        EXPECT_STR(created[i], want);
    }
    struct String_vector kids = {0};
    struct Stat st;
    EXPECT_RC(zoo_get_children2(A.zh, "/many", 0, &kids, &st), ZOK);
    int count = kids.count;
    deallocate_String_vector(&kids);
    EXPECT_I64(count, N);
    EXPECT_I64(st.numChildren, N);
    EXPECT_I64(st.cversion, N);
    for (int i = 0; i < N; i++) zoo_delete_op_init(&ops[i], created[i], 0);
    EXPECT_RC(zoo_multi(A.zh, N, ops, res), ZOK);
    EXPECT_RC(zoo_exists(A.zh, "/many", 0, &st), ZOK);
    EXPECT_I64(st.numChildren, 0);
    EXPECT_I64(st.cversion, 2 * N);
    EXPECT_RC(zoo_delete(A.zh, "/many", 0), ZOK);
    return true;
}

static bool check_idle_session_kept_alive(void) {
    /* A 4 s session left idle for 6 s stays alive: the client's pings keep it. Waiting is the point here,
     * done as a deadline wait for a session event that must not come. */
    session_t s;
    if (!session_open_with(&s, "", 4000)) return false;
    int64_t id = zoo_client_id(s.zh)->client_id;
    int rc = zoo_create(s.zh, "/idle", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0);
    pthread_mutex_lock(&s.rec.mu);
    int before = s.rec.session_events;
    struct timespec dl = deadline_in(6000);
    while (s.rec.session_events == before)
        if (pthread_cond_timedwait(&s.rec.cv, &s.rec.mu, &dl) == ETIMEDOUT) break;
    int events = s.rec.session_events - before, state = s.rec.session_state;
    pthread_mutex_unlock(&s.rec.mu);
    struct Stat st;
    int rc2 = zoo_exists(A.zh, "/idle", 0, &st);
    session_close(&s);
    EXPECT(rc == ZOK, "create /idle: %s", rc_name(rc));
    EXPECT(events == 0, "%d session events while idle (state now %d)", events, state);
    EXPECT(rc2 == ZOK, "ephemeral of the idle session: %s", rc_name(rc2));
    EXPECT_I64(st.ephemeralOwner, id);
    return true;
}

static bool restart_hook; /* run.sh restarts the server when asked (--restart-hook) */

/*
 * The session, its ephemeral and its watches survive a server restart: the client reconnects with its
 * session id and password and re-registers its watches (setWatches), which then fire for writes made
 * after the restart.
 */
static bool check_session_survives_restart(void) {
    static session_t S;
    static recorder_t rec;
    recorder_init(&rec);
    if (!session_open_with(&S, "", 30000)) return false;
    int64_t id = zoo_client_id(S.zh)->client_id;
    char buf[32];
    int len = sizeof buf;
    struct Stat st;
    EXPECT_RC(zoo_create(S.zh, "/r-eph", "e", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0), ZOK);
    TRY(create_plain(S.zh, "/r-data", "before"));
    EXPECT_RC(zoo_wget(S.zh, "/r-data", record_watcher, &rec, buf, &len, &st), ZOK);
    EXPECT_RC(zoo_wexists(S.zh, "/r-new", record_watcher, &rec, &st), ZNONODE);
    pthread_mutex_lock(&S.rec.mu);
    int events_before = S.rec.session_events;
    pthread_mutex_unlock(&S.rec.mu);

    printf("# restart-server\n");
    fflush(stdout);
    char answer[64];
    EXPECT(fgets(answer, sizeof answer, stdin) != NULL, "no answer from run.sh to the restart request");
    EXPECT(strncmp(answer, "go", 2) == 0, "run.sh could not restart the server: %s", answer);

    /* Disconnected (CONNECTING), then CONNECTED again. */
    struct timespec dl = deadline_in(30000);
    pthread_mutex_lock(&S.rec.mu);
    while (!(S.rec.session_events >= events_before + 2 && S.rec.session_state == ZOO_CONNECTED_STATE))
        if (pthread_cond_timedwait(&S.rec.cv, &S.rec.mu, &dl) == ETIMEDOUT) break;
    int events = S.rec.session_events - events_before, state = S.rec.session_state;
    pthread_mutex_unlock(&S.rec.mu);
    EXPECT(events >= 2 && state == ZOO_CONNECTED_STATE,
           "after the restart: %d session events, state %d; want a reconnect to ZOO_CONNECTED_STATE", events, state);
    EXPECT_I64(zoo_client_id(S.zh)->client_id, id);
    EXPECT_RC(zoo_exists(S.zh, "/r-eph", 0, &st), ZOK);
    EXPECT_I64(st.ephemeralOwner, id);
    EXPECT_DATA(S.zh, "/r-data", "before", &st);

    /* Writes from another session after the restart fire the re-registered watches. */
    session_t W;
    if (!session_open(&W, "")) return false;
    int r1 = zoo_set(W.zh, "/r-data", "after", 5, -1);
    int r2 = zoo_create(W.zh, "/r-new", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
    session_close(&W);
    EXPECT(r1 == ZOK && r2 == ZOK, "writes after restart: %s, %s", rc_name(r1), rc_name(r2));
    char fp[64];
    if (!fence(S.zh, &rec, fp, sizeof fp)) return false;
    EXPECT_EVENTS(&rec, {ZOO_CHANGED_EVENT, "/r-data"}, {ZOO_CREATED_EVENT, "/r-new"}, {ZOO_CREATED_EVENT, fp});
    /* The main session reconnected too. */
    EXPECT_RC(zoo_exists(A.zh, "/r-eph", 0, &st), ZOK);
    EXPECT_RC(session_close(&S), ZOK);
    EXPECT_RC(zoo_exists(A.zh, "/r-eph", 0, &st), ZNONODE);
    return true;
}

static bool check_close(void) {
    EXPECT_RC(session_close(&A), ZOK);
    return true;
}

/* ---------- driver ---------- */

typedef struct {
    const char *name;
    bool (*fn)(void);
    bool needs_a;       /* fail at once when the main session never connected */
    bool needs_restart; /* skipped without --restart-hook */
} check_t;

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--restart-hook") != 0)) {
        fprintf(stderr, "usage: %s HOST:PORT [--restart-hook]\n", argv[0]);
        return 2;
    }
    restart_hook = argc == 3;
    server = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    /* The library logs expected refusals (expired sessions, failed auth) as errors; run.sh keeps them in a
     * file and shows them when a check fails. */
    const char *log_path = getenv("CCLIENT_ZOO_LOG");
    FILE *log = log_path ? fopen(log_path, "a") : NULL;
    zoo_set_log_stream(log ? log : stderr);

    const check_t checks[] = {
        {"session_connect", check_connect, false, false},
        {"create2_stat", check_create_stat, true, false},
        {"get_exists_stat", check_get_data, true, false},
        {"set_stat_versions", check_set_stat, true, false},
        {"children_stat_cversion", check_children_stat, true, false},
        {"error_nonode", check_err_nonode, true, false},
        {"error_nodeexists", check_err_nodeexists, true, false},
        {"error_badversion", check_err_badversion, true, false},
        {"error_notempty", check_err_notempty, true, false},
        {"delete", check_delete, true, false},
        {"sequential_ephemeral_names_owner", check_sequential_ephemeral, true, false},
        {"error_nochildrenforephemerals", check_no_children_for_ephemerals, true, false},
        {"ephemerals_vanish_on_close", check_ephemerals_vanish_on_close, true, false},
        {"watch_data_changed_once", check_watch_data_once, true, false},
        {"watch_child_event", check_watch_child, true, false},
        {"watch_exists_created", check_watch_exists_created, true, false},
        {"watch_deleted", check_watch_deleted, true, false},
        {"watch_fires_for_other_session", check_watch_from_other_session, true, false},
        {"multi_commit", check_multi_commit, true, false},
        {"multi_fail_nothing_applied", check_multi_fail, true, false},
        {"acl_default_open", check_acl_default, true, false},
        {"acl_digest_noauth", check_acl_digest_noauth, true, false},
        {"acl_creator_all_owner", check_acl_owner_access, true, false},
        {"acl_getacl_masks_digest", check_acl_getacl_masks_digest, true, false},
        {"chroot_session", check_chroot, true, false},
        {"session_timeout_negotiation", check_session_timeout_negotiation, true, false},
        {"session_bad_password_expired", check_session_bad_password_expired, true, false},
        {"special_nodes", check_special_nodes, true, false},
        {"large_binary_data", check_large_binary_data, true, false},
        {"ttl_and_container_nodes", check_ttl_container_modes, true, false},
        {"add_auth_unknown_scheme_fails", check_add_auth_unknown_scheme, true, false},
        {"multi_watch_events_in_op_order", check_multi_watch_order, true, false},
        {"remove_watches", check_remove_watches, true, false},
        {"readonly_flag_gets_rw_session", check_readonly_flag_gets_rw_session, true, false},
        {"sync_and_get_children", check_sync_and_get_children, true, false},
        {"multi_200_creates_and_deletes", check_big_multi, true, false},
        {"idle_session_kept_alive_by_pings", check_idle_session_kept_alive, true, false},
        {"session_survives_server_restart", check_session_survives_restart, true, true},
        {"close_session", check_close, true, false},
    };
    int n = (int)(sizeof checks / sizeof checks[0]);
    int passed = 0, failed = 0, skipped = 0;
    bool have_a = false;
    for (int i = 0; i < n; i++) {
        why[0] = 0;
        bool ok;
        if (checks[i].needs_restart && !restart_hook) {
            skipped++;
            printf("skip %s: needs --restart-hook (run.sh restarts the server)\n", checks[i].name);
            continue;
        }
        if (checks[i].needs_a && !have_a) {
            ok = false;
            snprintf(why, sizeof why, "main session not connected");
        } else {
            ok = checks[i].fn();
        }
        if (i == 0) have_a = ok;
        if (ok) {
            passed++;
            printf("ok %s\n", checks[i].name);
        } else {
            failed++;
            printf("FAIL %s: %s\n", checks[i].name, why);
        }
    }
    printf("RESULT passed=%d failed=%d skipped=%d\n", passed, failed, skipped);
    return failed == 0 ? 0 : 1;
}
