/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may
 * not use this file except in compliance with the License. You may obtain
 * a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */
/*
 * hdd-model: a FUSE file system exposing ONE file (a disk image kept in a
 * backing file) whose reads, writes and fsyncs share a single I/O budget,
 * as they do on a disk with one head.
 *
 * Every request gets, in arrival order (FIFO), the next free slot of a
 * single server: it costs  1/iops  seconds  (+ size/bps if bps is given),
 * fsync/fdatasync and fallocate cost one I/O, and the request is answered
 * when its slot ends AND its real I/O on the backing file is done.  A read
 * that arrives behind queued writes waits for them.  Attach a loop device
 * (losetup --direct-io=on) to MOUNTPOINT/NAME and mkfs/mount it: every
 * submitter of the loop device, kernel writeback included, shares the
 * budget.
 *
 * Durability: a write is answered only once all its bytes are in the
 * backing file (O_DIRECT when aligned, else through the page cache); a
 * short write is retried and never acknowledged short; fsync/fdatasync
 * fdatasync the backing file, and once that failed every later fsync fails
 * too (the kernel reports a lost write-back only once).
 *
 * MOUNTPOINT/.hdd-model is the control file: reading it gives the model's
 * figures and counters ("key value" lines: model, pid, iops, bps, reads,
 * read_bytes, writes, write_bytes, syncs, fallocs, errors, sync_error,
 * wait_s); writing "iops N" and/or "bps N" to it changes the budget at
 * once (requests booked from then on pay the new cost).  Reading it is
 * not an I/O of the model, and fails once the daemon is gone.
 *
 * Build:  gcc -O2 -Wall -o hdd-model hdd-model.c $(pkg-config --cflags --libs fuse3)
 *         (Debian: apt-get install libfuse3-dev fuse3)
 * Use:    hdd-model [--iops N] [--bps N] [--name NAME] [--threads N]
 *                   [--nosync] [--buffered] [-f] BACKING MOUNTPOINT
 *         losetup --find --show --direct-io=on MOUNTPOINT/NAME
 *         stop: umount MOUNTPOINT (after losetup -d); the daemon then exits.
 * SIGUSR1 prints the counters to stderr (with -f: a daemon's stderr is
 * /dev/null; read the control file instead).
 *
 * Known limits (the kernel's FUSE, not this model): requests the kernel
 * sends synchronously (fsync, the control file) skip the background
 * requests that wait for a free slot in the kernel beyond --threads; an
 * fsync holds the file's inode lock, so writes are submitted again only
 * once it is answered; the loop device sends each flush from a worker that
 * waits for it.
 */
#define FUSE_USE_VERSION 312
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

#define FILE_INO 2
#define CTL_INO 3
#define CTL_NAME ".hdd-model"
#define MAXIO (1 << 20)
#define DIO_ALIGN 512

static double opt_iops = 150, opt_bps = 0;   /* under lock once serving */
static int opt_nosync, opt_buffered, opt_threads = 40;
static const char *opt_name;
static int fd_direct = -1, fd_buf = -1;   /* backing file, O_DIRECT and not */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t next_free;                 /* ns, CLOCK_MONOTONIC */
static int64_t wait_ns;                   /* booked to slot end, summed */
static int sync_failed;                   /* errno of a failed fdatasync */
static uint64_t n_read, n_write, n_sync, n_falloc, n_err, b_read, b_write;
static pthread_key_t buf_key;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Take the next slot of the one server; returns when the slot ends. */
static int64_t book(size_t bytes)
{
    int64_t cost, now, start;
    pthread_mutex_lock(&lock);
    cost = (int64_t)(1e9 / opt_iops);
    if (opt_bps > 0)
        cost += (int64_t)((double)bytes * 1e9 / opt_bps);
    now = now_ns();
    start = next_free > now ? next_free : now;
    next_free = start + cost;
    wait_ns += next_free - now;
    pthread_mutex_unlock(&lock);
    return start + cost;
}

static void wait_until(int64_t t)
{
    struct timespec ts = { t / 1000000000, t % 1000000000 };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void count(uint64_t *ops, ssize_t n, uint64_t *bytes)
{
    __atomic_add_fetch(ops, 1, __ATOMIC_RELAXED);
    if (n < 0)
        __atomic_add_fetch(&n_err, 1, __ATOMIC_RELAXED);
    else if (bytes)
        __atomic_add_fetch(bytes, n, __ATOMIC_RELAXED);
}

static char *iobuf(void)  /* per-thread buffer aligned for O_DIRECT */
{
    char *b = pthread_getspecific(buf_key);
    if (!b) {
        if (posix_memalign((void **)&b, 4096, MAXIO))
            return NULL;
        if (pthread_setspecific(buf_key, b)) {   /* freed when the thread ends */
            free(b);
            return NULL;
        }
    }
    return b;
}

/* All of [off, off + size) or an error (-errno): a short transfer is
 * continued; a write that makes no progress is an error, never a short
 * count (the loop device would take a short write for a whole one). */
static ssize_t full_io(int wr, int fd, char *b, size_t size, off_t off)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = wr ? pwrite(fd, b + done, size - done, off + done)
                       : pread(fd, b + done, size - done, off + done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0) {
            if (wr)
                return -EIO;
            break;               /* end of file */
        }
        done += n;
    }
    return done;
}

static ssize_t do_io(int wr, char *b, size_t size, off_t off)
{
    ssize_t n = -EINVAL;
    if (fd_direct >= 0 && !((uintptr_t)b & (DIO_ALIGN - 1)) &&
        !(off & (DIO_ALIGN - 1)) && !(size & (DIO_ALIGN - 1)))
        n = full_io(wr, fd_direct, b, size, off);
    /* unaligned, or the host's device wants a larger alignment than 512:
     * through the page cache (the kernel keeps both views coherent) */
    if (n == -EINVAL)
        n = full_io(wr, fd_buf, b, size, off);
    return n;
}

static int file_stat(struct stat *st)
{
    if (fstat(fd_buf, st) < 0)
        return -errno;
    st->st_ino = FILE_INO;
    st->st_mode = S_IFREG | 0600;
    st->st_nlink = 1;
    return 0;
}

static int do_stat(fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    if (ino == FUSE_ROOT_ID) {
        st->st_ino = ino;
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (ino == CTL_INO) {        /* size 0: read with direct I/O */
        st->st_ino = ino;
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        return 0;
    }
    if (ino == FILE_INO)
        return file_stat(st);
    return -ENOENT;
}

/* ---------------------------------------------------------- control file */

static int ctl_text(char *m, size_t len)
{
    double iops, bps;
    int64_t waited;
    int serr;
    pthread_mutex_lock(&lock);
    iops = opt_iops;
    bps = opt_bps;
    waited = wait_ns;
    serr = sync_failed;
    pthread_mutex_unlock(&lock);
    return snprintf(m, len,
        "model fuse-fifo\npid %d\niops %.10g\nbps %.0f\n"
        "reads %llu\nread_bytes %llu\nwrites %llu\nwrite_bytes %llu\n"
        "syncs %llu\nfallocs %llu\nerrors %llu\nsync_error %d\nwait_s %.3f\n",
        (int)getpid(), iops, bps,
        (unsigned long long)__atomic_load_n(&n_read, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&b_read, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&n_write, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&b_write, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&n_sync, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&n_falloc, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&n_err, __ATOMIC_RELAXED),
        serr, waited / 1e9);
}

static void ctl_read(fuse_req_t req, size_t size, off_t off)
{
    char m[1024];
    int l = ctl_text(m, sizeof(m));
    if (l < 0 || off >= l) { fuse_reply_buf(req, NULL, 0); return; }
    if ((size_t)(l - off) < size) size = l - off;
    fuse_reply_buf(req, m + off, size);
}

static int parse_num(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !errno && end != s && !*end && isfinite(*v) && *v >= 0;
}

/* "iops N" and/or "bps N": all applied, or nothing (EINVAL) */
static void ctl_write(fuse_req_t req, const char *buf, size_t size)
{
    char text[256], *save = NULL, *key, *val;
    double iops = -1, bps = -1, v;
    if (size >= sizeof(text)) { fuse_reply_err(req, EINVAL); return; }
    memcpy(text, buf, size);
    text[size] = 0;
    for (key = strtok_r(text, " \t\r\n", &save); key;
         key = strtok_r(NULL, " \t\r\n", &save)) {
        val = strtok_r(NULL, " \t\r\n", &save);
        if (!val || !parse_num(val, &v)) { fuse_reply_err(req, EINVAL); return; }
        if (!strcmp(key, "iops") && v > 0 && v <= 1e9) iops = v;
        else if (!strcmp(key, "bps")) bps = v;
        else { fuse_reply_err(req, EINVAL); return; }
    }
    pthread_mutex_lock(&lock);
    if (iops > 0) opt_iops = iops;
    if (bps >= 0) opt_bps = bps;
    pthread_mutex_unlock(&lock);
    fuse_reply_write(req, size);
}

/* ---------------------------------------------------------- operations */

static void hm_init(void *ud, struct fuse_conn_info *conn)
{
    (void)ud;
    conn->max_write = MAXIO;
    conn->max_read = MAXIO;
    conn->max_readahead = 0;
    conn->max_background = opt_threads;
    conn->congestion_threshold = opt_threads;
    if (conn->capable & FUSE_CAP_ASYNC_DIO)
        conn->want |= FUSE_CAP_ASYNC_DIO;
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void hm_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e;
    fuse_ino_t ino;
    memset(&e, 0, sizeof(e));
    if (parent != FUSE_ROOT_ID) { fuse_reply_err(req, ENOENT); return; }
    if (!strcmp(name, opt_name)) ino = FILE_INO;
    else if (!strcmp(name, CTL_NAME)) ino = CTL_INO;
    else { fuse_reply_err(req, ENOENT); return; }
    int r = do_stat(ino, &e.attr);
    if (r) { fuse_reply_err(req, -r); return; }
    e.ino = ino;
    e.attr_timeout = e.entry_timeout = 1.0;
    fuse_reply_entry(req, &e);
}

static void hm_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct stat st;
    (void)fi;
    int r = do_stat(ino, &st);
    if (r) fuse_reply_err(req, -r);
    else fuse_reply_attr(req, &st, 1.0);
}

static void hm_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int to_set, struct fuse_file_info *fi)
{
    struct stat st;
    (void)fi;
    if (ino != FILE_INO && ino != CTL_INO) { fuse_reply_err(req, EPERM); return; }
    int r = do_stat(ino, &st);   /* mode, owner, times: ignored */
    if (r) { fuse_reply_err(req, -r); return; }
    /* the disk's size is the image's: an O_TRUNC open must not wipe it
     * (the control file's O_TRUNC, `echo iops 100 > .hdd-model`, is fine) */
    if (ino == FILE_INO && (to_set & FUSE_SET_ATTR_SIZE) &&
        attr->st_size != st.st_size) {
        fuse_reply_err(req, EPERM);
        return;
    }
    fuse_reply_attr(req, &st, 1.0);
}

static void hm_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino != FILE_INO && ino != CTL_INO) { fuse_reply_err(req, EISDIR); return; }
    fi->direct_io = 1;           /* no page cache in FUSE for any opener */
    fi->keep_cache = 0;
    fuse_reply_open(req, fi);
}

static void hm_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == CTL_INO) { ctl_read(req, size, off); return; }
    if (size > MAXIO) size = MAXIO;
    int64_t done = book(size);
    char *b = iobuf();
    ssize_t n = b ? do_io(0, b, size, off) : -ENOMEM;
    wait_until(done);
    count(&n_read, n, &b_read);
    if (n < 0) fuse_reply_err(req, -n);
    else fuse_reply_buf(req, b, n);
}

static void hm_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
                     off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == CTL_INO) { ctl_write(req, buf, size); return; }
    int64_t done = book(size);
    char *b = size <= MAXIO ? iobuf() : NULL;
    ssize_t n;
    if (b) {
        memcpy(b, buf, size);    /* FUSE's buffer is not aligned for O_DIRECT */
        n = do_io(1, b, size, off);
    } else {
        n = full_io(1, fd_buf, (char *)buf, size, off);
    }
    wait_until(done);
    count(&n_write, n, &b_write);
    if (n < 0) fuse_reply_err(req, -n);
    else fuse_reply_write(req, n);   /* n == size: full_io or an error */
}

static void hm_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                     struct fuse_file_info *fi)
{
    (void)datasync; (void)fi;
    if (ino != FILE_INO) { fuse_reply_err(req, 0); return; }
    int64_t done = book(0);      /* a cache flush costs one I/O */
    int err = 0;
    if (!opt_nosync && fdatasync(fd_buf) < 0)
        err = errno;
    pthread_mutex_lock(&lock);   /* a lost write-back stays lost */
    if (err && !sync_failed)
        sync_failed = err;
    else if (!err && sync_failed)
        err = sync_failed;
    pthread_mutex_unlock(&lock);
    wait_until(done);
    count(&n_sync, err ? -1 : 0, NULL);
    fuse_reply_err(req, err);
}

static void hm_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
                         off_t len, struct fuse_file_info *fi)
{
    (void)fi;
    /* the loop device's discard and write-zeroes: size kept */
    if (ino != FILE_INO || !(mode & FALLOC_FL_KEEP_SIZE) ||
        (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
                  FALLOC_FL_ZERO_RANGE))) {
        fuse_reply_err(req, EOPNOTSUPP);
        return;
    }
    int64_t done = book(0);
    int err = fallocate(fd_buf, mode, off, len) < 0 ? errno : 0;
    wait_until(done);
    count(&n_falloc, err ? -1 : 0, NULL);
    fuse_reply_err(req, err);
}

static void hm_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino; (void)fi;
    fuse_reply_err(req, 0);
}

static void hm_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    char buf[1024];
    size_t len = 0;
    struct stat st = { 0 };
    const char *names[4] = { ".", "..", opt_name, CTL_NAME };
    const fuse_ino_t inos[4] = { FUSE_ROOT_ID, FUSE_ROOT_ID, FILE_INO, CTL_INO };
    (void)fi;
    if (ino != FUSE_ROOT_ID) { fuse_reply_err(req, ENOTDIR); return; }
    for (off_t i = off; i < 4; i++) {
        st.st_ino = inos[i];
        st.st_mode = i >= 2 ? S_IFREG : S_IFDIR;
        size_t l = fuse_add_direntry(req, buf + len, sizeof(buf) - len,
                                     names[i], &st, i + 1);
        if (len + l > sizeof(buf) || len + l > size) break;
        len += l;
    }
    fuse_reply_buf(req, buf, len);
}

static const struct fuse_lowlevel_ops ops = {
    .init = hm_init, .lookup = hm_lookup, .getattr = hm_getattr,
    .setattr = hm_setattr, .open = hm_open, .read = hm_read,
    .write = hm_write, .fsync = hm_fsync, .flush = hm_flush,
    .readdir = hm_readdir, .fallocate = hm_fallocate,
};

static void report(int sig)      /* no locks: a signal handler */
{
    (void)sig;
    char m[256];
    int l = snprintf(m, sizeof(m),
        "hdd-model: reads %llu (%llu B) writes %llu (%llu B) syncs %llu errors %llu\n",
        (unsigned long long)n_read, (unsigned long long)b_read,
        (unsigned long long)n_write, (unsigned long long)b_write,
        (unsigned long long)n_sync, (unsigned long long)n_err);
    if (l > 0 && write(2, m, l) < 0) { /* nothing */ }
}

static void usage(void)
{
    fprintf(stderr, "usage: hdd-model [--iops N] [--bps N] [--name NAME] [--threads N]"
            " [--nosync] [--buffered] [-f] BACKING MOUNTPOINT\n");
    exit(2);
}

static double arg_num(const char *opt, const char *s)
{
    double v;
    if (!parse_num(s, &v)) {
        fprintf(stderr, "hdd-model: %s %s: not a number >= 0\n", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    int foreground = 0, i;
    const char *backing = NULL, *mnt = NULL;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--iops") && i + 1 < argc) opt_iops = arg_num(a, argv[++i]);
        else if (!strcmp(a, "--bps") && i + 1 < argc) opt_bps = arg_num(a, argv[++i]);
        else if (!strcmp(a, "--name") && i + 1 < argc) opt_name = argv[++i];
        else if (!strcmp(a, "--threads") && i + 1 < argc) opt_threads = (int)arg_num(a, argv[++i]);
        else if (!strcmp(a, "--nosync")) opt_nosync = 1;
        else if (!strcmp(a, "--buffered")) opt_buffered = 1;
        else if (!strcmp(a, "-f")) foreground = 1;
        else if (a[0] == '-') usage();
        else if (!backing) backing = a;
        else if (!mnt) mnt = a;
        else usage();
    }
    if (!backing || !mnt || opt_iops <= 0 || opt_iops > 1e9 || opt_threads < 1)
        usage();
    if (!opt_name) opt_name = basename(strdup(backing));
    if (!*opt_name || strchr(opt_name, '/') || !strcmp(opt_name, CTL_NAME) ||
        !strcmp(opt_name, ".") || !strcmp(opt_name, "..")) {
        fprintf(stderr, "hdd-model: bad --name %s\n", opt_name);
        return 2;
    }
    char *amnt = realpath(mnt, NULL);
    if (!amnt) { perror(mnt); return 1; }
    mnt = amnt;
    if (pthread_key_create(&buf_key, free)) { perror("pthread_key_create"); return 1; }

    fd_buf = open(backing, O_RDWR | O_CLOEXEC);
    if (fd_buf < 0) { perror(backing); return 1; }
    if (!opt_buffered) {
        fd_direct = open(backing, O_RDWR | O_DIRECT | O_CLOEXEC);
        if (fd_direct < 0) fprintf(stderr, "hdd-model: no O_DIRECT on %s, buffered\n", backing);
    }
    /* the daemon serves a block device: no reclaim I/O recursion into it,
     * and the OOM killer must not take the disk away.  Both need
     * CAP_SYS_RESOURCE, which a container may not grant: best effort. */
    if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) < 0 && errno != EPERM)
        fprintf(stderr, "hdd-model: PR_SET_IO_FLUSHER: %s\n", strerror(errno));
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        if (write(oom, "-1000", 5) < 0) { /* no CAP_SYS_RESOURCE */ }
        close(oom);
    }

    char *fargv[] = { argv[0], "-o", "fsname=hdd-model,subtype=hdd-model,allow_other,"
                      "default_permissions,max_read=1048576", NULL };
    struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
    struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
    if (!se) return 1;
    if (fuse_set_signal_handlers(se)) return 1;
    if (fuse_session_mount(se, mnt)) {
        fuse_remove_signal_handlers(se);
        fuse_session_destroy(se);
        return 1;
    }
    signal(SIGUSR1, report);
    if (fuse_daemonize(foreground)) {
        fuse_session_unmount(se);
        return 1;
    }

    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(cfg, opt_threads);
    fuse_loop_cfg_set_idle_threads(cfg, opt_threads);
    int r = fuse_session_loop_mt(se, cfg);
    fuse_loop_cfg_destroy(cfg);
    report(0);
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return r ? 1 : 0;
}
