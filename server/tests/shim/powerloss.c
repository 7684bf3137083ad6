/*
 * An LD_PRELOAD shim for paddock's power-loss and I/O-error tests (server/tests/power_loss.rs,
 * which builds it with cc). It keeps, beside the real files, a copy of what a power loss would
 * leave: the "shadow". The workspace forbids `unsafe` Rust, so this lives in C in the test tree.
 *
 * Environment:
 *   SHIM_ROOT    a directory: only files under it are followed.
 *   SHIM_SHADOW  where the shadow is kept: inodes/<ino> (a file's durable bytes and size),
 *                dirs/<ino> (a directory's durable entries: "name ino d|f" lines), root (the
 *                root's inode number). The test rebuilds the power-loss image from it.
 *   SHIM_CUT_AT  N: at the Nth durability event the process loses power: an O_DSYNC/O_SYNC write
 *                is applied to the shadow for a random half of its 512-byte sectors (a torn
 *                write), an fsync/fdatasync is not applied; then _exit(99), so the call never
 *                returns (nothing after it is acknowledged).
 *   SHIM_SEED    seeds the sector choice.
 *   SHIM_TRACE   set: every fsync, fdatasync and directory fsync is logged to SHIM_SHADOW/trace.
 *   SHIM_NO_DIRECT  set: opening with O_DIRECT fails with EINVAL, as on a file system that
 *                refuses it (paddock then writes its log through the page cache and fdatasyncs).
 *   SHIM_EIO     KIND:N: the Nth call of KIND fails with EIO without doing anything, KIND one of
 *                segwrite (a write to a log segment, *.seg), fsync (fsync/fdatasync of a file),
 *                dirsync (fsync of a directory). Every later write or sync of that file is logged
 *                to SHIM_SHADOW/after-eio (a retried fsync would show there). A log file is
 *                paddock's *.seg or ZooKeeper's log.* (the fault suite runs both under the shim).
 *   SHIM_CONTROL a file checked at most every 20 ms while the process writes (the fault suite's
 *                nemeses, compat-tests/faults/hosts.sh `arm`): its one word arms one fault, and it
 *                is renamed to SHIM_CONTROL.taken when read; SHIM_CONTROL.fired says what it hit.
 *                `cut`: at the next durability event the power goes, nothing of it applied.
 *                `torn-write`: at the next O_DSYNC/O_SYNC write the power goes, a random half of
 *                its sectors applied. `torn-sync`: at the next fsync/fdatasync of a file written
 *                since its last sync, the power goes with a random half of those written sectors
 *                applied. `eio:KIND`: the next call of KIND (as SHIM_EIO) fails with EIO.
 *
 * Durability model: a write through an O_DSYNC or O_SYNC descriptor is durable when it returns
 * (and extends the durable size); fsync/fdatasync make a file's current bytes and size durable;
 * fsync of a directory makes its current entries durable (a file named there but never synced
 * comes back empty). Nothing else is: data written without a sync, names made without a
 * directory sync, sync_file_range. The ranges written through other descriptors are kept per
 * inode, so an fsync copies only those (a ZooKeeper log is a 64 MB file synced at every commit);
 * a file synced with no range kept is copied whole. Whatever the directory held when the process
 * started is its caller's to put in the shadow first (the fault suite copies the data directory:
 * a restarted member's files survived, only the power can take them).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_FD 65536
#define SECTOR 512

struct fdinfo {
    int used;
    int is_dir;
    int sync; /* O_DSYNC or O_SYNC */
    int seg;  /* a log segment */
    ino_t ino;
    char path[PATH_MAX];
};

static struct fdinfo fds[MAX_FD];
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static char root[PATH_MAX];
static size_t root_len;
static char shadow[PATH_MAX];
static long cut_at = -1;
static long events;
static unsigned long long rng = 88172645463325252ULL;
static char eio_kind[32];
static long eio_at = -1;
static long eio_seen;
static ino_t eio_ino;
static int active;
static int no_direct;
static int trace;
static char control[PATH_MAX];
static long long control_checked_ns;
/* An armed fault from SHIM_CONTROL: 0 none, 1 cut, 2 torn-write, 3 torn-sync. */
static int armed_cut;

/* Bytes written through descriptors without O_DSYNC since the file's last sync, per inode. */
#define MAX_DIRTY 256
struct dirty {
    ino_t ino;
    off_t lo, hi;
};
static struct dirty dirty[MAX_DIRTY];

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void init(void) __attribute__((constructor));
static void init(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_write = dlsym(RTLD_NEXT, "write");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    const char *r = getenv("SHIM_ROOT"), *s = getenv("SHIM_SHADOW");
    if (!r || !s) return;
    snprintf(root, sizeof root, "%s", r);
    root_len = strlen(root);
    snprintf(shadow, sizeof shadow, "%s", s);
    const char *c = getenv("SHIM_CUT_AT");
    if (c) cut_at = atol(c);
    const char *seed = getenv("SHIM_SEED");
    if (seed) rng ^= strtoull(seed, NULL, 10) * 0x9E3779B97F4A7C15ULL;
    no_direct = getenv("SHIM_NO_DIRECT") != NULL;
    trace = getenv("SHIM_TRACE") != NULL;
    const char *ctl = getenv("SHIM_CONTROL");
    if (ctl) snprintf(control, sizeof control, "%s", ctl);
    const char *e = getenv("SHIM_EIO");
    if (e) {
        const char *colon = strchr(e, ':');
        if (colon && (size_t)(colon - e) < sizeof eio_kind) {
            memcpy(eio_kind, e, colon - e);
            eio_at = atol(colon + 1);
        }
    }
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/inodes", shadow);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/dirs", shadow);
    mkdir(p, 0700);
    struct stat st;
    if (stat(root, &st) == 0) {
        snprintf(p, sizeof p, "%s/root", shadow);
        FILE *f = fopen(p, "w");
        if (f) {
            fprintf(f, "%lu\n", (unsigned long)st.st_ino);
            fclose(f);
        }
    }
    active = 1;
}

static unsigned long long next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void mark_dirty(ino_t ino, off_t off, size_t n) {
    if (n == 0) return;
    int free_slot = -1;
    for (int i = 0; i < MAX_DIRTY; i++) {
        if (dirty[i].ino == ino) {
            if (off < dirty[i].lo) dirty[i].lo = off;
            if (off + (off_t)n > dirty[i].hi) dirty[i].hi = off + (off_t)n;
            return;
        }
        if (free_slot < 0 && dirty[i].ino == 0) free_slot = i;
    }
    /* No slot: the file is copied whole at its sync, as if nothing were kept. */
    if (free_slot >= 0) dirty[free_slot] = (struct dirty){ino, off, off + (off_t)n};
}

/* The range written since the last sync, taken (0 when none is kept). */
static int take_dirty(ino_t ino, off_t *lo, off_t *hi) {
    for (int i = 0; i < MAX_DIRTY; i++) {
        if (dirty[i].ino == ino) {
            *lo = dirty[i].lo;
            *hi = dirty[i].hi;
            dirty[i].ino = 0;
            return 1;
        }
    }
    return 0;
}

static int under_root(const char *path) {
    return active && path && strncmp(path, root, root_len) == 0 &&
           (path[root_len] == '/' || path[root_len] == 0);
}

static void log_line(const char *file, const char *fmt, ...) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", shadow, file);
    int fd = real_open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) return;
    char line[PATH_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) real_write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    real_close(fd);
}

static void inode_path(char *out, ino_t ino) {
    snprintf(out, PATH_MAX, "%s/inodes/%lu", shadow, (unsigned long)ino);
}

/* A durability event: at the cut, the power goes. */
static int cut_now(void) {
    if (cut_at < 0) return 0;
    events++;
    return events == cut_at;
}

static void power_loss(void) {
    log_line("cut", "%ld\n", events);
    _exit(99);
}

static void note_fired(const char *fmt, const char *what, const char *path) {
    if (!control[0]) return;
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s.fired", control);
    int fd = real_open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) return;
    char line[PATH_MAX + 64];
    int n = snprintf(line, sizeof line, fmt, what, path);
    if (n > 0) real_write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    real_close(fd);
}

/* Reads SHIM_CONTROL (at most every 20 ms) and arms what it says. */
static void poll_control(void) {
    if (!control[0]) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (now - control_checked_ns < 20000000LL) return;
    control_checked_ns = now;
    int fd = real_open(control, O_RDONLY);
    if (fd < 0) return;
    char word[64] = {0};
    ssize_t n = read(fd, word, sizeof word - 1);
    real_close(fd);
    char taken[PATH_MAX + 8];
    snprintf(taken, sizeof taken, "%s.taken", control);
    rename(control, taken);
    if (n <= 0) return;
    word[strcspn(word, " \t\r\n")] = 0;
    if (strcmp(word, "cut") == 0) {
        armed_cut = 1;
    } else if (strcmp(word, "torn-write") == 0) {
        armed_cut = 2;
    } else if (strcmp(word, "torn-sync") == 0) {
        armed_cut = 3;
    } else if (strncmp(word, "eio:", 4) == 0 && strlen(word + 4) < sizeof eio_kind) {
        snprintf(eio_kind, sizeof eio_kind, "%s", word + 4);
        eio_seen = 0;
        eio_at = 1;
    }
}

/* Whether this call of `kind` on `fi` fails with EIO. */
static int inject_eio(const char *kind, struct fdinfo *fi) {
    if (eio_at < 0 || strcmp(kind, eio_kind) != 0) return 0;
    if (++eio_seen != eio_at) return 0;
    eio_ino = fi->ino;
    log_line("eio", "%s %s\n", kind, fi->path);
    note_fired("eio %s %s\n", kind, fi->path);
    return 1;
}

static void note_after_eio(const char *op, struct fdinfo *fi) {
    if (eio_ino && fi->ino == eio_ino) log_line("after-eio", "%s %s\n", op, fi->path);
}

/* Applies bytes written through an O_DSYNC descriptor to the shadow (only some sectors, at the
 * cut). */
static void shadow_write(struct fdinfo *fi, const void *buf, size_t n, off_t off, int torn) {
    char p[PATH_MAX];
    inode_path(p, fi->ino);
    int fd = real_open(p, O_WRONLY | O_CREAT, 0600);
    if (fd < 0) return;
    if (!torn) {
        real_pwrite(fd, buf, n, off);
    } else {
        for (size_t at = 0; at < n; at += SECTOR) {
            size_t len = n - at < SECTOR ? n - at : SECTOR;
            if (next_rand() & 1) real_pwrite(fd, (const char *)buf + at, len, off + (off_t)at);
        }
    }
    real_close(fd);
}

/* Copies bytes [lo, hi) of the file behind `fd` to the shadow exactly (zeros too); with `torn`,
 * only a random half of its sectors. Returns the end of the last sector copied (0: none). */
static off_t shadow_copy_range(int fd, struct fdinfo *fi, off_t lo, off_t hi, int torn) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int src = real_open(self, O_RDONLY);
    if (src < 0) return 0;
    char p[PATH_MAX];
    inode_path(p, fi->ino);
    int dst = real_open(p, O_WRONLY | O_CREAT, 0600);
    if (dst < 0) {
        real_close(src);
        return 0;
    }
    static char buf[SECTOR];
    off_t end = 0;
    for (off_t at = lo - lo % SECTOR; at < hi; at += SECTOR) {
        if (torn && !(next_rand() & 1)) continue;
        ssize_t r = pread(src, buf, SECTOR, at);
        if (r <= 0) break;
        real_pwrite(dst, buf, (size_t)r, at);
        end = at + r;
    }
    real_close(src);
    real_close(dst);
    return end;
}

/* Copies a file's current bytes and size to the shadow (fsync/fdatasync returned). */
static void shadow_sync_file(int fd, struct fdinfo *fi) {
    /* Through /proc, the file the descriptor holds, renamed or not. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int src = real_open(self, O_RDONLY);
    if (src < 0) return;
    struct stat st;
    if (fstat(src, &st) != 0) {
        real_close(src);
        return;
    }
    char p[PATH_MAX];
    inode_path(p, fi->ino);
    int dst = real_open(p, O_WRONLY | O_CREAT, 0600);
    if (dst < 0) {
        real_close(src);
        return;
    }
    off_t lo, hi;
    if (take_dirty(fi->ino, &lo, &hi)) {
        real_close(src);
        if (ftruncate(dst, st.st_size) != 0) {
            /* the range below is still copied */
        }
        real_close(dst);
        if (hi > st.st_size) hi = st.st_size;
        if (lo < hi) shadow_copy_range(fd, fi, lo, hi, 0);
        return;
    }
    if (ftruncate(dst, st.st_size) != 0) {
        /* keep going: the copy below still writes the bytes */
    }
    static char buf[1 << 16];
    static const char zeros[1 << 16];
    off_t off = 0;
    for (;;) {
        ssize_t r = pread(src, buf, sizeof buf, off);
        if (r <= 0) break;
        /* Zeros are left as holes: a 16 MB segment is mostly zeros. */
        if (memcmp(buf, zeros, (size_t)r) != 0) real_pwrite(dst, buf, (size_t)r, off);
        off += r;
    }
    real_close(src);
    real_close(dst);
}

/* Records a directory's current entries as durable (its fsync returned). */
static void shadow_sync_dir(int fd, struct fdinfo *fi) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    DIR *d = opendir(self);
    if (!d) return;
    char p[PATH_MAX], tmp[PATH_MAX];
    snprintf(p, sizeof p, "%s/dirs/%lu", shadow, (unsigned long)fi->ino);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *out = fopen(tmp, "w");
    if (!out) {
        closedir(d);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        int dir = S_ISDIR(st.st_mode);
        if (!dir && !S_ISREG(st.st_mode)) continue;
        fprintf(out, "%s\t%lu\t%c\n", e->d_name, (unsigned long)st.st_ino, dir ? 'd' : 'f');
    }
    closedir(d);
    fclose(out);
    rename(tmp, p);
}

static void track(int fd, const char *path, int flags) {
    if (fd < 0 || fd >= MAX_FD || !under_root(path)) return;
    pthread_mutex_lock(&mu);
    struct fdinfo *fi = &fds[fd];
    struct stat st;
    if (fstat(fd, &st) == 0) {
        fi->used = 1;
        fi->is_dir = S_ISDIR(st.st_mode);
        fi->sync = (flags & (O_DSYNC | O_SYNC)) != 0;
        fi->ino = st.st_ino;
        snprintf(fi->path, sizeof fi->path, "%s", path);
        size_t len = strlen(path);
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        fi->seg = (len > 4 && strcmp(path + len - 4, ".seg") == 0) || strncmp(base, "log.", 4) == 0;
    }
    pthread_mutex_unlock(&mu);
}

/* A new file or directory may get the inode number of one deleted before: nothing of that one
 * is its durable state. */
static void forget_inode(ino_t ino) {
    char p[PATH_MAX];
    inode_path(p, ino);
    unlink(p);
    snprintf(p, sizeof p, "%s/dirs/%lu", shadow, (unsigned long)ino);
    unlink(p);
}

static int is_new(const char *path, int flags) {
    struct stat st;
    return (flags & O_CREAT) && under_root(path) && lstat(path, &st) != 0;
}

static void track_new(int fd, const char *path, int flags, int fresh) {
    track(fd, path, flags);
    if (fresh && fd >= 0 && fd < MAX_FD && fds[fd].used) {
        pthread_mutex_lock(&mu);
        forget_inode(fds[fd].ino);
        pthread_mutex_unlock(&mu);
    }
}

int mkdir(const char *path, mode_t mode) {
    static int (*real_mkdir)(const char *, mode_t);
    if (!real_mkdir) real_mkdir = dlsym(RTLD_NEXT, "mkdir");
    int r = real_mkdir(path, mode);
    struct stat st;
    if (r == 0 && under_root(path) && lstat(path, &st) == 0) {
        pthread_mutex_lock(&mu);
        forget_inode(st.st_ino);
        pthread_mutex_unlock(&mu);
    }
    return r;
}

static struct fdinfo *lookup(int fd) {
    if (fd < 0 || fd >= MAX_FD || !fds[fd].used) return NULL;
    return &fds[fd];
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (no_direct && (flags & O_DIRECT) && under_root(path)) {
        errno = EINVAL;
        return -1;
    }
    int fresh = is_new(path, flags);
    int fd = real_open(path, flags, mode);
    track_new(fd, path, flags, fresh);
    return fd;
}

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (no_direct && (flags & O_DIRECT) && under_root(path)) {
        errno = EINVAL;
        return -1;
    }
    int fresh = is_new(path, flags);
    int fd = real_open64(path, flags, mode);
    track_new(fd, path, flags, fresh);
    return fd;
}

int close(int fd) {
    if (fd >= 0 && fd < MAX_FD) {
        pthread_mutex_lock(&mu);
        fds[fd].used = 0;
        pthread_mutex_unlock(&mu);
    }
    return real_close(fd);
}

static ssize_t do_pwrite(ssize_t (*real)(int, const void *, size_t, off_t), int fd,
                         const void *buf, size_t n, off_t off) {
    struct fdinfo *fi = lookup(fd);
    if (!fi) return real(fd, buf, n, off);
    pthread_mutex_lock(&mu);
    poll_control();
    note_after_eio("write", fi);
    if ((fi->seg && inject_eio("segwrite", fi)) || inject_eio("write", fi)) {
        pthread_mutex_unlock(&mu);
        errno = EIO;
        return -1;
    }
    if (fi->sync && (cut_now() || armed_cut == 1 || armed_cut == 2)) {
        if (armed_cut != 1) shadow_write(fi, buf, n, off, 1);
        note_fired("power cut at %s %s\n", armed_cut == 1 ? "a write (none of it kept)" : "a write (torn)", fi->path);
        power_loss();
    }
    ssize_t r = real(fd, buf, n, off);
    if (r > 0 && fi->sync) shadow_write(fi, buf, (size_t)r, off, 0);
    if (r > 0 && !fi->sync) mark_dirty(fi->ino, off, (size_t)r);
    pthread_mutex_unlock(&mu);
    return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    return do_pwrite(real_pwrite, fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    return do_pwrite(real_pwrite64, fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n) {
    struct fdinfo *fi = lookup(fd);
    if (!fi) return real_write(fd, buf, n);
    pthread_mutex_lock(&mu);
    poll_control();
    note_after_eio("write", fi);
    if ((fi->seg && inject_eio("segwrite", fi)) || inject_eio("write", fi)) {
        pthread_mutex_unlock(&mu);
        errno = EIO;
        return -1;
    }
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (fi->sync && (cut_now() || armed_cut == 1 || armed_cut == 2)) {
        if (armed_cut != 1) shadow_write(fi, buf, n, at, 1);
        note_fired("power cut at %s %s\n", armed_cut == 1 ? "a write (none of it kept)" : "a write (torn)", fi->path);
        power_loss();
    }
    ssize_t r = real_write(fd, buf, n);
    if (r > 0 && fi->sync) shadow_write(fi, buf, (size_t)r, lseek(fd, 0, SEEK_CUR) - r, 0);
    if (r > 0 && !fi->sync) mark_dirty(fi->ino, lseek(fd, 0, SEEK_CUR) - r, (size_t)r);
    pthread_mutex_unlock(&mu);
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    struct fdinfo *fi = lookup(fd);
    if (!fi || !fi->sync) {
        if (!fi) return real_writev(fd, iov, cnt);
        pthread_mutex_lock(&mu);
        poll_control();
        note_after_eio("write", fi);
        if ((fi->seg && inject_eio("segwrite", fi)) || inject_eio("write", fi)) {
            pthread_mutex_unlock(&mu);
            errno = EIO;
            return -1;
        }
        ssize_t r = real_writev(fd, iov, cnt);
        if (r > 0) mark_dirty(fi->ino, lseek(fd, 0, SEEK_CUR) - r, (size_t)r);
        pthread_mutex_unlock(&mu);
        return r;
    }
    /* Through an O_DSYNC descriptor: one write at a time, each followed. */
    ssize_t total = 0;
    for (int i = 0; i < cnt; i++) {
        ssize_t r = write(fd, iov[i].iov_base, iov[i].iov_len);
        if (r < 0) return total ? total : r;
        total += r;
        if ((size_t)r < iov[i].iov_len) break;
    }
    return total;
}

static int do_sync(int (*real)(int), int fd) {
    struct fdinfo *fi = lookup(fd);
    if (!fi) return real(fd);
    pthread_mutex_lock(&mu);
    poll_control();
    if (trace) log_line("trace", "%s %s\n", fi->is_dir ? "dirsync" : "fsync", fi->path);
    note_after_eio("sync", fi);
    if (inject_eio(fi->is_dir ? "dirsync" : "fsync", fi)) {
        pthread_mutex_unlock(&mu);
        errno = EIO;
        return -1;
    }
    if (cut_now() || armed_cut == 1) {
        if (armed_cut == 1) note_fired("power cut at %s %s\n", fi->is_dir ? "a directory sync (not kept)" : "a sync (not kept)", fi->path);
        power_loss();
    }
    off_t lo, hi;
    if (armed_cut == 3 && !fi->is_dir && take_dirty(fi->ino, &lo, &hi)) {
        off_t end = shadow_copy_range(fd, fi, lo, hi, 1);
        char p[PATH_MAX];
        inode_path(p, fi->ino);
        struct stat st;
        if (end > 0 && stat(p, &st) == 0 && st.st_size < end && truncate(p, end) != 0) {
            /* the sectors are there; only the size is not */
        }
        note_fired("power cut at %s %s\n", "a sync (a random half of the written sectors kept)", fi->path);
        power_loss();
    }
    int r = real(fd);
    if (r == 0) {
        if (fi->is_dir)
            shadow_sync_dir(fd, fi);
        else
            shadow_sync_file(fd, fi);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

int fsync(int fd) { return do_sync(real_fsync, fd); }

int fdatasync(int fd) { return do_sync(real_fdatasync, fd); }
