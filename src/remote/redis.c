/* redis.c: the Redis backend (backend.h): its own non-blocking socket,
 * commands formatted by hiredis (redisFormatCommandArgv), replies read by
 * the bounded RESP reader below.
 *
 * Design choice: hiredis's own I/O cannot keep one deadline (its timeout
 * is per recv, so a server that sends a byte every half second holds the
 * caller for ever), and its reader buffers a whole reply and allocates an
 * array from the count announced, before the bytes come. So this file owns
 * the socket (connect, send and every recv wait in poll() for the time
 * left before the operation's deadline) and reads replies itself: a bulk
 * string's announced length is checked against the cap before any of its
 * body is read, and then the body goes straight into one buffer of exactly
 * that size; arrays are bounded in count and depth, lines in length.
 *
 * Invariants: every byte read or written is within the operation's
 * deadline (cbc_rb_redis: resolving a name too, through getaddrinfo_a);
 * a reply that breaks the protocol or a value refused for its size closes
 * the connection (the stream is no longer in step); no signal is raised
 * by a closed peer (MSG_NOSIGNAL).
 */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef CBC_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

/* ---- the RESP reply, parsed from (pointer, length) -------------------------- */

/* backend.h says what it returns; every offset below is checked against
 * len before it is read. */
long cbc_resp_head(const uint8_t *p, size_t len, struct cbc_resp_head *h, const char **why)
{
    memset(h, 0, sizeof *h);
    size_t lim = len < CBC_RESP_LINE_MAX ? len : CBC_RESP_LINE_MAX;
    const uint8_t *cr = lim >= 2 ? memchr(p, '\r', lim - 1) : NULL;
    if (!cr) {
        if (len >= CBC_RESP_LINE_MAX) {
            *why = "a reply line longer than any Redis sends";
            return -1;
        }
        return 0;
    }
    if (cr[1] != '\n') {
        *why = "a reply line without its CRLF";
        return -1;
    }
    size_t ll = (size_t)(cr - p);
    if (ll == 0) {
        *why = "an empty reply line";
        return -1;
    }
    h->type = (char)p[0];
    h->text = (const char *)p + 1;
    h->text_len = ll - 1;
    switch (h->type) {
    case '+':
    case '-':
        for (size_t i = 1; i < ll; i++)
            if (p[i] == '\n' || p[i] == '\0') {
                *why = "a reply line with a control character in it";
                return -1;
            }
        break;
    case ':':
    case '$':
    case '*': {
        size_t i = 1;
        bool neg = i < ll && p[i] == '-';
        if (neg)
            i++;
        if (i == ll || ll - i > 18) {
            *why = "a length or number that is not one";
            return -1;
        }
        int64_t v = 0;
        for (; i < ll; i++) {
            if (p[i] < '0' || p[i] > '9') {
                *why = "a length or number that is not one";
                return -1;
            }
            v = v * 10 + (p[i] - '0');
        }
        h->n = neg ? -v : v;
        if (h->type != ':' && h->n < -1) {
            *why = "a negative length";
            return -1;
        }
        break;
    }
    default:
        *why = "a reply of an unknown type (not a Redis server?)";
        return -1;
    }
    return (long)(ll + 2);
}

#ifdef CBC_HAVE_HIREDIS

/* ---- the connection ----------------------------------------------------------- */

#define IBUF 16384
#define ARRAY_MAX 100000   /* elements in one array reply (SCAN COUNT 1000 gives ~1000) */
#define DEPTH_MAX 3
#define SMALL_REPLY_MAX (1u << 20) /* bytes of a reply that is not a value */

struct redis {
    struct cbc_remote_backend base;
    int fd; /* -1: not connected */
    uint8_t ib[IBUF];
    size_t ib_pos, ib_len;
    uint64_t op_bytes; /* read in this operation, for the timeout's message */
};

struct reply {
    char type;           /* '+' '-' ':' '$' '*'; 0 for nil */
    int64_t n;           /* ':' the integer */
    char *str;           /* '+' '-' '$': malloc'd, NUL-terminated */
    size_t len;
    struct reply *elem;  /* '*' */
    size_t nelem;
};

static void reply_release(struct reply *r)
{
    free(r->str);
    for (size_t i = 0; i < r->nelem; i++)
        reply_release(&r->elem[i]);
    free(r->elem);
    memset(r, 0, sizeof *r);
}

static void drop(struct redis *rb)
{
    if (rb->fd >= 0)
        close(rb->fd);
    rb->fd = -1;
    rb->ib_pos = rb->ib_len = 0;
}

static enum rb_result timed_out(struct redis *rb, char *detail, size_t dn)
{
    if (rb->op_bytes == 0)
        snprintf(detail, dn, "no answer within the operation timeout (%u ms)",
                 rb->base.cfg->op_ms);
    else
        snprintf(detail, dn, "the reply was not complete within the operation timeout (%u ms; "
                             "%llu bytes came)",
                 rb->base.cfg->op_ms, (unsigned long long)rb->op_bytes);
    drop(rb);
    return RB_TIMEOUT;
}

static enum rb_result broken(struct redis *rb, char *detail, size_t dn, const char *what)
{
    snprintf(detail, dn, "%s", what);
    drop(rb);
    return RB_ERROR;
}

/* Waits for `events` on the socket until the deadline. */
static enum rb_result wait_fd(struct redis *rb, short events, uint64_t deadline, char *detail,
                              size_t dn)
{
    for (;;) {
        int left = rb_left_ms(deadline);
        if (left == 0)
            return timed_out(rb, detail, dn);
        struct pollfd pf = {rb->fd, events, 0};
        int n = poll(&pf, 1, left);
        if (n > 0)
            return RB_OK;
        if (n < 0 && errno != EINTR) {
            char w[128];
            snprintf(w, sizeof w, "poll: %s", strerror(errno));
            return broken(rb, detail, dn, w);
        }
    }
}

/* Some bytes (at most n, at least one) into dst, waiting for them until
 * the deadline; *got says how many. */
static enum rb_result recv_some(struct redis *rb, uint8_t *dst, size_t n, size_t *got,
                                uint64_t deadline, char *detail, size_t dn)
{
    for (;;) {
        ssize_t k = recv(rb->fd, dst, n, 0);
        if (k > 0) {
            *got = (size_t)k;
            rb->op_bytes += (uint64_t)k;
            return RB_OK;
        }
        if (k == 0)
            return broken(rb, detail, dn, "the server closed the connection");
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            char w[128];
            snprintf(w, sizeof w, "reading the reply: %s", strerror(errno));
            return broken(rb, detail, dn, w);
        }
        enum rb_result r = wait_fd(rb, POLLIN, deadline, detail, dn);
        if (r != RB_OK)
            return r;
    }
}

/* More bytes into the input buffer (compacting it first). */
static enum rb_result fill(struct redis *rb, uint64_t deadline, char *detail, size_t dn)
{
    if (rb->ib_pos > 0) {
        memmove(rb->ib, rb->ib + rb->ib_pos, rb->ib_len - rb->ib_pos);
        rb->ib_len -= rb->ib_pos;
        rb->ib_pos = 0;
    }
    if (rb->ib_len == IBUF)
        return broken(rb, detail, dn, "a reply line longer than any Redis sends");
    size_t got = 0;
    enum rb_result r = recv_some(rb, rb->ib + rb->ib_len, IBUF - rb->ib_len, &got, deadline,
                                 detail, dn);
    rb->ib_len += got;
    return r;
}

/* Exactly n bytes into dst: what the buffer holds, then straight from the
 * socket (a value's body is never copied twice). */
static enum rb_result read_exact(struct redis *rb, uint8_t *dst, size_t n, uint64_t deadline,
                                 char *detail, size_t dn)
{
    size_t have = rb->ib_len - rb->ib_pos;
    size_t take = have < n ? have : n;
    memcpy(dst, rb->ib + rb->ib_pos, take);
    rb->ib_pos += take;
    for (size_t got = take, k = 0; got < n; got += k) {
        enum rb_result r = recv_some(rb, dst + got, n - got, &k, deadline, detail, dn);
        if (r != RB_OK)
            return r;
    }
    return RB_OK;
}

/* One reply, its bulk strings at most `cap` bytes each and the whole at
 * most *budget bytes (decremented). A bulk string over the cap is RB_BAD
 * with its size in detail, its body unread and the connection closed. */
static enum rb_result read_reply(struct redis *rb, uint64_t deadline, uint64_t cap,
                                 uint64_t *budget, int depth, struct reply *out, char *detail,
                                 size_t dn)
{
    memset(out, 0, sizeof *out);
    struct cbc_resp_head h;
    long used;
    for (;;) {
        const char *why = NULL;
        used = cbc_resp_head(rb->ib + rb->ib_pos, rb->ib_len - rb->ib_pos, &h, &why);
        if (used < 0) {
            char w[200];
            snprintf(w, sizeof w, "a protocol error: %s", why);
            return broken(rb, detail, dn, w);
        }
        if (used > 0)
            break;
        enum rb_result r = fill(rb, deadline, detail, dn);
        if (r != RB_OK)
            return r;
    }
    if ((uint64_t)used > *budget)
        return broken(rb, detail, dn, "a reply larger than any this client asks for");
    *budget -= (uint64_t)used;
    out->type = h.type;
    switch (h.type) {
    case '+':
    case '-':
        if (!(out->str = cbc_strndup(h.text, h.text_len)))
            return broken(rb, detail, dn, "out of memory");
        out->len = h.text_len;
        rb->ib_pos += (size_t)used;
        return RB_OK;
    case ':':
        out->n = h.n;
        rb->ib_pos += (size_t)used;
        return RB_OK;
    case '$': {
        rb->ib_pos += (size_t)used;
        if (h.n < 0) {
            out->type = 0;
            return RB_OK;
        }
        if ((uint64_t)h.n > cap) {
            snprintf(detail, dn, "a value of %lld bytes, over max-value (%llu bytes); not read",
                     (long long)h.n, (unsigned long long)(cap - CBC_REMOTE_VALUE_HEADER));
            drop(rb);
            return RB_BAD;
        }
        if ((uint64_t)h.n + 2 > *budget)
            return broken(rb, detail, dn, "a reply larger than any this client asks for");
        *budget -= (uint64_t)h.n + 2;
        uint8_t *s = malloc((size_t)h.n + 2);
        if (!s)
            return broken(rb, detail, dn, "out of memory");
        enum rb_result r = read_exact(rb, s, (size_t)h.n + 2, deadline, detail, dn);
        if (r == RB_OK && (s[h.n] != '\r' || s[h.n + 1] != '\n')) {
            free(s);
            return broken(rb, detail, dn, "a protocol error: a bulk string longer than it "
                                          "said");
        }
        if (r != RB_OK) {
            free(s);
            return r;
        }
        s[h.n] = '\0';
        out->str = (char *)s;
        out->len = (size_t)h.n;
        return RB_OK;
    }
    case '*':
        rb->ib_pos += (size_t)used;
        if (h.n < 0) {
            out->type = 0;
            return RB_OK;
        }
        if (h.n > ARRAY_MAX || depth >= DEPTH_MAX ||
            (uint64_t)h.n * sizeof(struct reply) > *budget)
            return broken(rb, detail, dn, "a protocol error: an array larger or deeper than "
                                          "any this client asks for");
        *budget -= (uint64_t)h.n * sizeof(struct reply);
        if (h.n > 0 && !(out->elem = calloc((size_t)h.n, sizeof *out->elem)))
            return broken(rb, detail, dn, "out of memory");
        for (int64_t i = 0; i < h.n; i++) {
            out->nelem = (size_t)i + 1;
            enum rb_result r = read_reply(rb, deadline, cap, budget, depth + 1, &out->elem[i],
                                          detail, dn);
            if (r != RB_OK) {
                reply_release(out);
                return r == RB_BAD ? broken(rb, detail, dn, "a protocol error: a value in an "
                                                            "array")
                                   : r;
            }
        }
        return RB_OK;
    }
    return broken(rb, detail, dn, "a protocol error");
}

/* A reply that is not a value: small, every string in it bounded. */
static enum rb_result read_small(struct redis *rb, uint64_t deadline, struct reply *out,
                                 char *detail, size_t dn)
{
    uint64_t budget = SMALL_REPLY_MAX;
    return read_reply(rb, deadline, SMALL_REPLY_MAX, &budget, 0, out, detail, dn);
}

static enum rb_result send_all(struct redis *rb, const char *p, size_t n, uint64_t deadline,
                               char *detail, size_t dn)
{
    while (n > 0) {
        ssize_t k = send(rb->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            char w[128];
            snprintf(w, sizeof w, "sending: %s", strerror(errno));
            return broken(rb, detail, dn, w);
        }
        enum rb_result r = wait_fd(rb, POLLOUT, deadline, detail, dn);
        if (r != RB_OK)
            return r;
    }
    return RB_OK;
}

/* Formats argv and appends it to *out (a pipeline being built). */
static bool append_cmd(struct cbc_buf *out, int argc, const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (n < 0 || !cmd)
        return false;
    cbc_buf_append(out, cmd, (size_t)n);
    redisFreeCommand(cmd);
    return !out->oom;
}

/* ---- connecting ---------------------------------------------------------------- */

/* What getaddrinfo_a needs to outlive a lookup given up on. */
struct gai_req {
    struct gaicb cb;
    struct addrinfo hints;
    char host[256], port[8];
};

/* A host name resolved within the deadline: literals at once, names by
 * getaddrinfo_a, so a silent DNS server cannot hold the caller. */
static enum rb_result resolve(const char *host, int port, uint64_t deadline,
                              struct addrinfo **out, char *detail, size_t dn)
{
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(host, ps, &hints, out) == 0)
        return RB_OK;
    if (strlen(host) >= sizeof ((struct gai_req *)0)->host) {
        snprintf(detail, dn, "cannot connect: the host name is too long");
        return RB_ERROR;
    }
    struct gai_req *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(detail, dn, "cannot connect: out of memory");
        return RB_ERROR;
    }
    snprintf(q->host, sizeof q->host, "%s", host);
    snprintf(q->port, sizeof q->port, "%s", ps);
    q->hints.ai_family = AF_UNSPEC;
    q->hints.ai_socktype = SOCK_STREAM;
    q->hints.ai_flags = AI_NUMERICSERV;
    q->cb.ar_name = q->host;
    q->cb.ar_service = q->port;
    q->cb.ar_request = &q->hints;
    struct gaicb *list[1] = {&q->cb};
    if (getaddrinfo_a(GAI_NOWAIT, list, 1, NULL) != 0) {
        free(q);
        snprintf(detail, dn, "cannot connect: cannot start resolving '%s'", host);
        return RB_ERROR;
    }
    int rc;
    while ((rc = gai_error(&q->cb)) == EAI_INPROGRESS) {
        int left = rb_left_ms(deadline);
        if (left == 0)
            break;
        struct timespec ts = {left / 1000, (long)(left % 1000) * 1000000};
        gai_suspend((const struct gaicb *const *)list, 1, &ts);
    }
    if (rc == EAI_INPROGRESS) {
        /* the resolver's thread may still write into q: it stays (one
         * small leak per remote that cannot be resolved in time) */
        if (gai_cancel(&q->cb) == EAI_CANCELED)
            free(q);
        snprintf(detail, dn, "cannot connect: '%s' was not resolved in time", host);
        return RB_TIMEOUT;
    }
    if (rc != 0) {
        snprintf(detail, dn, "cannot connect: cannot resolve '%s': %s", host, gai_strerror(rc));
        free(q);
        return RB_ERROR;
    }
    *out = q->cb.ar_result;
    free(q);
    return RB_OK;
}

/* connect() of a non-blocking socket, waited for until the deadline. */
static enum rb_result connect_fd(int fd, const struct sockaddr *a, socklen_t al,
                                 uint64_t deadline, int *err)
{
    if (connect(fd, a, al) == 0)
        return RB_OK;
    if (errno != EINPROGRESS && errno != EAGAIN && errno != EINTR) {
        *err = errno;
        return RB_ERROR;
    }
    for (;;) {
        int left = rb_left_ms(deadline);
        if (left == 0)
            return RB_TIMEOUT;
        struct pollfd pf = {fd, POLLOUT, 0};
        int n = poll(&pf, 1, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *err = errno;
            return RB_ERROR;
        }
        if (n == 0)
            continue;
        int e = 0;
        socklen_t el = sizeof e;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
            e = errno;
        if (e == 0)
            return RB_OK;
        *err = e;
        return RB_ERROR;
    }
}

static enum rb_result connect_failed(enum rb_result r, int e, const struct cbc_remote_cfg *c,
                                     char *detail, size_t dn)
{
    if (r == RB_TIMEOUT) {
        snprintf(detail, dn, "cannot connect: no connection within the connect timeout (%u ms)",
                 c->connect_ms);
        return RB_TIMEOUT;
    }
    snprintf(detail, dn, "cannot connect: %s", strerror(e));
    return e == ECONNREFUSED || e == ENOENT || e == EACCES ? RB_REFUSED : RB_ERROR;
}

/* Sends one command on the connection as it is and reads its reply (not
 * a value). */
static enum rb_result ask_here(struct redis *rb, int argc, const char **argv, const size_t *lens,
                               uint64_t deadline, struct reply *rep, char *detail, size_t dn)
{
    struct cbc_buf b = {0};
    if (!append_cmd(&b, argc, argv, lens)) {
        cbc_buf_release(&b);
        return broken(rb, detail, dn, "out of memory");
    }
    enum rb_result r = send_all(rb, b.p, b.len, deadline, detail, dn);
    cbc_buf_release(&b);
    return r == RB_OK ? read_small(rb, deadline, rep, detail, dn) : r;
}

/* A command at connect time whose reply must be +OK. */
static enum rb_result command_ok(struct redis *rb, int argc, const char **argv, uint64_t deadline,
                                 const char *what, char *detail, size_t dn)
{
    struct reply rep;
    enum rb_result r = ask_here(rb, argc, argv, NULL, deadline, &rep, detail, dn);
    if (r != RB_OK)
        return r;
    if (rep.type != '+') {
        bool err = rep.type == '-';
        snprintf(detail, dn, "%s: %.200s", what, err ? rep.str : "an unexpected reply");
        reply_release(&rep);
        drop(rb);
        return err ? RB_REFUSED : RB_ERROR;
    }
    reply_release(&rep);
    return RB_OK;
}

/* Connected (and authenticated, the database selected) within the
 * deadline, the connect part also within the connect timeout. */
static enum rb_result ensure(struct redis *rb, uint64_t deadline, char *detail, size_t dn)
{
    rb->op_bytes = 0;
    if (rb->fd >= 0) {
        if (rb->ib_len != rb->ib_pos) /* bytes nobody asked for: out of step */
            drop(rb);
        else
            return RB_OK;
    }
    const struct cbc_remote_cfg *c = rb->base.cfg;
    uint64_t cdl = cbc_remote_now_us() + (uint64_t)c->connect_ms * 1000;
    if (cdl > deadline)
        cdl = deadline;
    int e = 0;
    enum rb_result r;
    if (c->socket) {
        struct sockaddr_un a = {0};
        a.sun_family = AF_UNIX;
        if (strlen(c->socket) >= sizeof a.sun_path) {
            snprintf(detail, dn, "cannot connect: the socket path is too long");
            return RB_ERROR;
        }
        memcpy(a.sun_path, c->socket, strlen(c->socket) + 1);
        rb->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (rb->fd < 0)
            return connect_failed(RB_ERROR, errno, c, detail, dn);
        r = connect_fd(rb->fd, (const struct sockaddr *)&a, sizeof a, cdl, &e);
    } else {
        struct addrinfo *ai = NULL;
        r = resolve(c->host, c->port, cdl, &ai, detail, dn);
        if (r == RB_TIMEOUT)
            snprintf(detail, dn, "cannot connect: '%s' was not resolved within the connect "
                                 "timeout (%u ms)",
                     c->host, c->connect_ms);
        if (r != RB_OK)
            return r;
        r = RB_ERROR;
        e = EHOSTUNREACH;
        for (struct addrinfo *p = ai; p && r != RB_OK && r != RB_TIMEOUT; p = p->ai_next) {
            rb->fd = socket(p->ai_family, p->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                            p->ai_protocol);
            if (rb->fd < 0) {
                e = errno;
                continue;
            }
            r = connect_fd(rb->fd, p->ai_addr, p->ai_addrlen, cdl, &e);
            if (r != RB_OK) {
                close(rb->fd);
                rb->fd = -1;
            }
        }
        freeaddrinfo(ai);
        if (r == RB_OK) {
            int one = 1;
            setsockopt(rb->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
    }
    if (r != RB_OK) {
        if (rb->fd >= 0)
            close(rb->fd);
        rb->fd = -1;
        return connect_failed(r, e, c, detail, dn);
    }
    if (c->password) {
        const char *argv[3] = {"AUTH", c->user ? c->user : c->password, c->password};
        r = command_ok(rb, c->user ? 3 : 2, argv, deadline, "authentication failed", detail, dn);
        if (r != RB_OK)
            return r;
    }
    if (c->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", c->db);
        const char *argv[2] = {"SELECT", db};
        r = command_ok(rb, 2, argv, deadline, "cannot select the database", detail, dn);
        if (r != RB_OK)
            return r;
    }
    return RB_OK;
}

/* ---- error replies -------------------------------------------------------------- */

static bool starts(const struct reply *r, const char *p)
{
    return r->type == '-' && r->str && !strncmp(r->str, p, strlen(p));
}

/* An error reply to a read: authentication and permission are refusals. */
static enum rb_result read_error(struct redis *rb, const struct reply *rep, const char *op,
                                 char *detail, size_t dn)
{
    snprintf(detail, dn, "%s refused: %.200s", op, rep->str);
    if (starts(rep, "NOAUTH") || starts(rep, "WRONGPASS") || starts(rep, "NOPERM"))
        return RB_REFUSED;
    drop(rb);
    return RB_ERROR;
}

/* An error reply to a write: full, a replica or no permission stop writes. */
static enum rb_result write_error(struct redis *rb, const struct reply *rep, const char *op,
                                  char *detail, size_t dn)
{
    if (starts(rep, "OOM") || starts(rep, "READONLY") || starts(rep, "NOPERM")) {
        snprintf(detail, dn, "%.200s", rep->str);
        return RB_NO_WRITES;
    }
    return read_error(rb, rep, op, detail, dn);
}

/* ---- the operations ----------------------------------------------------------------- */

static enum rb_result run(struct redis *rb, struct cbc_buf *cmds, uint64_t deadline,
                          char *detail, size_t dn)
{
    if (cmds->oom)
        return broken(rb, detail, dn, "out of memory");
    enum rb_result r = ensure(rb, deadline, detail, dn);
    if (r == RB_OK)
        r = send_all(rb, cmds->p, cmds->len, deadline, detail, dn);
    return r;
}

/* One command and its reply (not a value), connecting first if need be. */
static enum rb_result ask(struct redis *rb, int argc, const char **argv, const size_t *lens,
                          uint64_t deadline, struct reply *rep, char *detail, size_t dn)
{
    enum rb_result r = ensure(rb, deadline, detail, dn);
    return r == RB_OK ? ask_here(rb, argc, argv, lens, deadline, rep, detail, dn) : r;
}

/* The reply to SET [NX]: +OK stored, nil not (NX: the key is there). */
static enum rb_result set_reply(struct redis *rb, struct reply *rep, const char *op, char *detail,
                                size_t dn)
{
    enum rb_result r = RB_OK;
    if (rep->type == '-')
        r = write_error(rb, rep, op, detail, dn);
    else if (rep->type == 0)
        r = RB_EXISTS;
    else if (rep->type != '+')
        r = broken(rb, detail, dn, "a protocol error: an unexpected reply to SET");
    reply_release(rep);
    return r;
}

static enum rb_result r_get(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            uint64_t cap, uint64_t expire_s, uint64_t deadline, uint8_t **data,
                            size_t *len, bool *touch_refused, char *detail, size_t dn)
{
    struct redis *rb = (struct redis *)b;
    char k[200], ex[24];
    cbc_rb_redis_key(b->cfg, kind, hex, k, sizeof k);
    snprintf(ex, sizeof ex, "%llu", (unsigned long long)expire_s);
    struct cbc_buf cmds = {0};
    const char *get[2] = {"GET", k};
    const char *exp[3] = {"EXPIRE", k, ex};
    append_cmd(&cmds, 2, get, NULL);
    if (expire_s)
        append_cmd(&cmds, 3, exp, NULL);
    enum rb_result r = run(rb, &cmds, deadline, detail, dn);
    cbc_buf_release(&cmds);
    if (r != RB_OK)
        return r;
    struct reply rep;
    uint64_t budget = cap + 64;
    r = read_reply(rb, deadline, cap, &budget, 0, &rep, detail, dn);
    if (r != RB_OK)
        return r; /* RB_BAD: over the cap, the connection closed (the EXPIRE reply with it) */
    if (expire_s) {
        struct reply er;
        enum rb_result r2 = read_small(rb, deadline, &er, detail, dn);
        if (r2 != RB_OK) {
            reply_release(&rep);
            return r2;
        }
        if (er.type == '-')
            *touch_refused = true;
        reply_release(&er);
    }
    switch (rep.type) {
    case 0:
        return RB_ABSENT;
    case '$':
        *data = (uint8_t *)rep.str;
        *len = rep.len;
        return RB_OK;
    case '-':
        if (starts(&rep, "NOAUTH") || starts(&rep, "WRONGPASS") || starts(&rep, "NOPERM") ||
            starts(&rep, "LOADING")) {
            r = read_error(rb, &rep, "GET", detail, dn);
        } else {
            /* WRONGTYPE and other errors about this key: a bad value */
            snprintf(detail, dn, "%.200s", rep.str);
            r = RB_BAD;
        }
        reply_release(&rep);
        return r;
    default:
        reply_release(&rep);
        snprintf(detail, dn, "not a string value");
        return RB_BAD;
    }
}

static enum rb_result r_put(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            const void *data, size_t len, uint64_t expire_s, bool if_absent,
                            uint64_t deadline, char *detail, size_t dn)
{
    struct redis *rb = (struct redis *)b;
    char k[200], ex[24];
    cbc_rb_redis_key(b->cfg, kind, hex, k, sizeof k);
    snprintf(ex, sizeof ex, "%llu", (unsigned long long)expire_s);
    const char *argv[6] = {"SET", k, data, "", "", ""};
    size_t lens[6] = {3, strlen(k), len, 0, 0, 0};
    int argc = 3;
    if (expire_s) {
        argv[argc] = "EX", lens[argc++] = 2;
        argv[argc] = ex, lens[argc++] = strlen(ex);
    }
    if (if_absent)
        argv[argc] = "NX", lens[argc++] = 2;
    struct reply rep;
    enum rb_result r = ask(rb, argc, argv, lens, deadline, &rep, detail, dn);
    return r == RB_OK ? set_reply(rb, &rep, "SET", detail, dn) : r;
}

/* A command about one key whose reply is an integer. */
static enum rb_result int_cmd(struct redis *rb, int argc, const char **argv, const size_t *lens,
                              bool write, uint64_t deadline, int64_t *out, char *detail,
                              size_t dn)
{
    struct reply rep;
    enum rb_result r = ask(rb, argc, argv, lens, deadline, &rep, detail, dn);
    if (r != RB_OK)
        return r;
    if (rep.type == '-')
        r = write ? write_error(rb, &rep, argv[0], detail, dn)
                  : read_error(rb, &rep, argv[0], detail, dn);
    else if (rep.type != ':')
        r = broken(rb, detail, dn, "a protocol error: an unexpected reply");
    else
        *out = rep.n;
    reply_release(&rep);
    return r;
}

static enum rb_result r_touch(struct cbc_remote_backend *b, const char *kind, const char *hex,
                              uint64_t expire_s, uint64_t deadline, char *detail, size_t dn)
{
    char k[200], ex[24];
    cbc_rb_redis_key(b->cfg, kind, hex, k, sizeof k);
    snprintf(ex, sizeof ex, "%llu", (unsigned long long)expire_s);
    const char *argv[3] = {expire_s ? "EXPIRE" : "EXISTS", k, ex};
    int64_t n = 0;
    enum rb_result r = int_cmd((struct redis *)b, expire_s ? 3 : 2, argv, NULL, expire_s != 0,
                               deadline, &n, detail, dn);
    return r != RB_OK ? r : n > 0 ? RB_OK : RB_ABSENT;
}

static enum rb_result r_del(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            uint64_t deadline, char *detail, size_t dn)
{
    char k[200];
    cbc_rb_redis_key(b->cfg, kind, hex, k, sizeof k);
    const char *argv[2] = {"DEL", k};
    int64_t n = 0;
    enum rb_result r = int_cmd((struct redis *)b, 2, argv, NULL, true, deadline, &n, detail, dn);
    return r != RB_OK ? r : n > 0 ? RB_OK : RB_ABSENT;
}

static enum rb_result r_acquire(struct cbc_remote_backend *b, const char *hex, const char *token,
                                unsigned ttl_ms, uint64_t deadline, char *detail, size_t dn)
{
    struct redis *rb = (struct redis *)b;
    char k[200], px[16];
    cbc_rb_redis_key(b->cfg, "lease", hex, k, sizeof k);
    snprintf(px, sizeof px, "%u", ttl_ms);
    const char *argv[6] = {"SET", k, token, "NX", "PX", px};
    struct reply rep;
    enum rb_result r = ask(rb, 6, argv, NULL, deadline, &rep, detail, dn);
    return r == RB_OK ? set_reply(rb, &rep, "SET NX", detail, dn) : r;
}

/* Deletes the lease only while it holds our token: one step on the server. */
static const char release_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
    "else return 0 end";

static enum rb_result r_release(struct cbc_remote_backend *b, const char *hex, const char *token,
                                uint64_t deadline, char *detail, size_t dn)
{
    char k[200];
    cbc_rb_redis_key(b->cfg, "lease", hex, k, sizeof k);
    const char *argv[5] = {"EVAL", release_script, "1", k, token};
    int64_t n = 0;
    enum rb_result r = int_cmd((struct redis *)b, 5, argv, NULL, true, deadline, &n, detail, dn);
    if (r == RB_NO_WRITES)
        return RB_UNSUPPORTED; /* no EVAL for this user: the lease expires by itself */
    return r != RB_OK ? r : n > 0 ? RB_OK : RB_ABSENT;
}

static enum rb_result r_list(struct cbc_remote_backend *b, char cursor[32], const char *pattern,
                             unsigned count, bool sizes, rb_key_fn fn, void *ctx,
                             uint64_t deadline, char *detail, size_t dn)
{
    struct redis *rb = (struct redis *)b;
    char cnt[16];
    snprintf(cnt, sizeof cnt, "%u", count);
    const char *argv[6] = {"SCAN", cursor, "MATCH", pattern, "COUNT", cnt};
    struct reply rep;
    enum rb_result r = ask(rb, 6, argv, NULL, deadline, &rep, detail, dn);
    if (r != RB_OK)
        return r;
    if (rep.type == '-') {
        r = read_error(rb, &rep, "SCAN", detail, dn);
        reply_release(&rep);
        return r;
    }
    if (rep.type != '*' || rep.nelem != 2 || rep.elem[0].type != '$' ||
        rep.elem[0].len == 0 || rep.elem[0].len >= 32 || rep.elem[1].type != '*') {
        reply_release(&rep);
        return broken(rb, detail, dn, "a protocol error: an unexpected reply to SCAN");
    }
    const struct reply *keys = &rep.elem[1];
    for (size_t i = 0; i < keys->nelem; i++)
        if (keys->elem[i].type != '$') {
            reply_release(&rep);
            return broken(rb, detail, dn, "a protocol error: a SCAN key that is not a string");
        }
    uint64_t *sz = NULL;
    if (sizes && keys->nelem > 0) {
        /* the sizes of the batch in one more round trip: STRLEN, pipelined */
        sz = calloc(keys->nelem, sizeof *sz);
        struct cbc_buf q = {0};
        for (size_t i = 0; sz && i < keys->nelem; i++) {
            const char *sa[2] = {"STRLEN", keys->elem[i].str};
            size_t sl[2] = {6, keys->elem[i].len};
            append_cmd(&q, 2, sa, sl);
        }
        r = sz ? run(rb, &q, deadline, detail, dn) : broken(rb, detail, dn, "out of memory");
        cbc_buf_release(&q);
        for (size_t i = 0; r == RB_OK && i < keys->nelem; i++) {
            struct reply s;
            r = read_small(rb, deadline, &s, detail, dn);
            if (r == RB_OK && s.type == ':' && s.n >= 0)
                sz[i] = (uint64_t)s.n;
            /* WRONGTYPE (a key of another type): size 0, verify says why */
            if (r == RB_OK)
                reply_release(&s);
        }
    }
    if (r == RB_OK) {
        memcpy(cursor, rep.elem[0].str, rep.elem[0].len + 1);
        for (size_t i = 0; i < keys->nelem; i++)
            if (!fn(ctx, keys->elem[i].str, keys->elem[i].len, sz ? sz[i] : 0))
                break;
    }
    free(sz);
    reply_release(&rep);
    return r;
}

static enum rb_result r_version(struct cbc_remote_backend *b, char *out, size_t len,
                                uint64_t deadline, char *detail, size_t dn)
{
    struct redis *rb = (struct redis *)b;
    const char *argv[2] = {"INFO", "server"};
    struct reply rep;
    enum rb_result r = ask(rb, 2, argv, NULL, deadline, &rep, detail, dn);
    if (r != RB_OK)
        return r;
    if (rep.type == '-') {
        r = read_error(rb, &rep, "INFO", detail, dn);
    } else if (rep.type != '$') {
        r = broken(rb, detail, dn, "a protocol error: an unexpected reply to INFO");
    } else {
        const char *v = strstr(rep.str, "redis_version:");
        size_t vl = v ? strcspn(v + 14, "\r\n") : 0;
        if (v && vl > 0 && vl < 32)
            snprintf(out, len, "redis %.*s", (int)vl, v + 14);
        else
            snprintf(out, len, "a Redis that does not say its version");
    }
    reply_release(&rep);
    return r;
}

static void r_disconnect(struct cbc_remote_backend *b)
{
    drop((struct redis *)b);
}

static void r_free(struct cbc_remote_backend *b)
{
    drop((struct redis *)b);
    free(b);
}

static const struct rb_ops redis_ops = {
    .get = r_get,
    .put = r_put,
    .touch = r_touch,
    .del = r_del,
    .acquire = r_acquire,
    .release = r_release,
    .list = r_list,
    .version = r_version,
    .disconnect = r_disconnect,
    .free = r_free,
};

struct cbc_remote_backend *cbc_rb_redis_new(const struct cbc_remote_cfg *cfg)
{
    struct redis *rb = calloc(1, sizeof *rb);
    if (!rb)
        return NULL;
    rb->base.ops = &redis_ops;
    rb->base.cfg = cfg;
    rb->fd = -1;
    return &rb->base;
}

#else /* no hiredis */

struct cbc_remote_backend *cbc_rb_redis_new(const struct cbc_remote_cfg *cfg)
{
    (void)cfg;
    return NULL;
}

#endif
