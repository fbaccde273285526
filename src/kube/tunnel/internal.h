/*
 * The port-forward tunnel's protocol layers (private to kube/tunnel/; the public side is
 * gcluster/portforward.h). None of the layers touches a socket: the transport feeds them the
 * bytes it received, sends the bytes they queue, and acts on the events they report, so each
 * layer is tested on bytes alone.
 *
 *   portforward_upgrade.c  the HTTP/1.1 upgrade: request head, answer head, answer checks
 *   websocket.c            RFC 6455 client frames: masked frames out, server frames in
 *   spdy.c                 SPDY/3.1 frames in and out, with zlib-compressed header blocks
 *   portforward.c          the session: forwarded TCP connections as SPDY stream pairs
 *   portforward_tunnel.c   the transport: the layers on a libcurl socket (kube_tunnel_*),
 *                          the only file here that uses the kube client (kube/internal.h)
 *   forward.c              the forwarder: a local listener whose connections a tunnel
 *                          carries, for the caller's poll loop (gc_kube_forwarder_*)
 *
 * How the API server forwards a port (kube-apiserver >= 1.31, kubectl >= 1.31): the client asks
 * for GET .../pods/POD/portforward?ports=P upgraded to a WebSocket with the subprotocol
 * "SPDY/3.1+portforward.k8s.io" and then speaks SPDY/3.1 inside the WebSocket's binary messages;
 * the API server unwraps them and proxies the SPDY bytes to the kubelet unchanged. The binary
 * messages are a byte stream: SPDY frames are not aligned to them. Older API servers (and the
 * kubelet itself) take SPDY directly after an HTTP upgrade to "SPDY/3.1" instead, which is what
 * kubectl falls back to when the WebSocket upgrade is refused; both are supported here.
 */
#ifndef GCLUSTER_KUBE_TUNNEL_INTERNAL_H
#define GCLUSTER_KUBE_TUNNEL_INTERNAL_H

#include "gcluster/buf.h"
#include "gcluster/error.h"
#include "gcluster/portforward.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* --- the upgrade (portforward_upgrade.c) ---------------------------------------------------- */

typedef enum kube_tunnel_kind {
    KUBE_TUNNEL_WEBSOCKET, /* SPDY inside WebSocket binary messages */
    KUBE_TUNNEL_SPDY,      /* SPDY directly on the upgraded connection */
} kube_tunnel_kind;

#define KUBE_PF_PROTOCOL    "portforward.k8s.io"
#define KUBE_PF_WS_PROTOCOL "SPDY/3.1+portforward.k8s.io"
#define KUBE_HTTP_HEAD_MAX  (64 * 1024)
#define KUBE_WS_KEY_LEN     24 /* base64 of 16 random bytes */
#define KUBE_WS_ACCEPT_LEN  28 /* base64 of a SHA-1 digest */

/* Appends the request head asking `host` to upgrade `path` (".../portforward?ports=29000") to a
 * tunnel of `kind`. `header_lines` are complete "Name: value" lines sent as given (credentials,
 * User-Agent), NULL-terminated or NULL; `ws_key` is the WebSocket key (kube_ws_key), unused for
 * KUBE_TUNNEL_SPDY. */
void kube_pf_upgrade_request(gc_buf *out, kube_tunnel_kind kind, const char *host, const char *path,
                             const char *const *header_lines, const char *ws_key);

/* An HTTP/1.1 response head: status and header fields, names lower-cased, values trimmed. */
typedef struct kube_http_head {
    int status;
    size_t count;
    char **names;
    char **values;
} kube_http_head;

/* The length of the head at the start of `data`, its blank line included; 0 while it is still
 * incomplete; -1 when no head ends within KUBE_HTTP_HEAD_MAX bytes. */
long kube_http_head_length(const void *data, size_t len);
/* Parses the `len` bytes of a complete head. */
int kube_http_head_parse(kube_http_head *h, const void *data, size_t len, gc_error *err);
/* The value of the first field called `name` (any case), or NULL. */
const char *kube_http_head_get(const kube_http_head *h, const char *name);
void kube_http_head_free(kube_http_head *h);

/* Checks the answer to kube_pf_upgrade_request. Anything but an accepted upgrade of `kind` is
 * an error; for an answer other than 101, err->http_status is the status, so the caller can
 * read the body (a Status) and fall back from a refused WebSocket to KUBE_TUNNEL_SPDY. */
int kube_pf_upgrade_check(const kube_http_head *h, kube_tunnel_kind kind, const char *ws_key,
                          gc_error *err);

/* --- WebSocket frames (websocket.c) ------------------------------------------------------- */

enum kube_ws_opcode {
    KUBE_WS_CONTINUATION = 0x0,
    KUBE_WS_TEXT = 0x1,
    KUBE_WS_BINARY = 0x2,
    KUBE_WS_CLOSE = 0x8,
    KUBE_WS_PING = 0x9,
    KUBE_WS_PONG = 0xA,
};

#define KUBE_WS_CLOSE_NORMAL    1000
#define KUBE_WS_CLOSE_NO_STATUS 1005 /* reported when a close frame carries no code */
#define KUBE_WS_CONTROL_MAX     125  /* the largest control frame payload */

/* A fresh random Sec-WebSocket-Key. */
void kube_ws_key(char key[KUBE_WS_KEY_LEN + 1]);
/* The Sec-WebSocket-Accept a server must answer to `key`: base64(SHA-1(key + RFC 6455 GUID)). */
void kube_ws_accept(const char *key, char out[KUBE_WS_ACCEPT_LEN + 1]);

/* Appends one client frame, its payload masked with `mask` (clients must mask every frame). */
void kube_ws_frame(gc_buf *out, int opcode, bool fin, const void *payload, size_t len,
                   const uint8_t mask[4]);

typedef enum kube_ws_event_type {
    KUBE_WS_NEED_MORE, /* all input consumed; feed more */
    KUBE_WS_DATA,      /* a piece of a text or binary message */
    KUBE_WS_PING_RECEIVED,
    KUBE_WS_PONG_RECEIVED,
    KUBE_WS_CLOSE_RECEIVED,
} kube_ws_event_type;

typedef struct kube_ws_event {
    kube_ws_event_type type;
    int opcode;          /* DATA: KUBE_WS_TEXT or KUBE_WS_BINARY, also for continuation frames */
    const uint8_t *data; /* DATA: message bytes; PING, PONG: payload; CLOSE: the reason text */
    size_t len;
    bool message_end; /* DATA: the last piece of the message */
    int close_code;   /* CLOSE: the status code, or KUBE_WS_CLOSE_NO_STATUS */
} kube_ws_event;

/* Reads server frames from a byte stream. Message payload is handed out as it arrives, in
 * pieces pointing into the input, so a message of any size needs no buffer; control frames
 * (at most 125 bytes) are collected whole. */
typedef struct kube_ws_decoder {
    uint8_t head[14]; /* the frame header being collected */
    size_t head_len;
    bool in_payload;
    int frame_opcode;
    bool frame_fin;
    uint64_t remaining; /* payload bytes of the current frame still to come */
    int message_opcode; /* opcode of the fragmented message in progress, or 0 */
    uint8_t control[KUBE_WS_CONTROL_MAX];
    size_t control_len;
    bool closed; /* a close frame was read; nothing after it counts */
} kube_ws_decoder;

void kube_ws_decoder_init(kube_ws_decoder *d);
/* Consumes input from *in (advancing *in and *len) up to the next event. Returns 0 with *ev set
 * (KUBE_WS_NEED_MORE once the input is used up), or GC_EXIT_RUNTIME when the bytes break RFC
 * 6455 (a masked or reserved-bit frame, a bad opcode, a fragmented or oversized control frame,
 * a continuation out of place); the stream is unusable after an error. */
int kube_ws_decode(kube_ws_decoder *d, const uint8_t **in, size_t *len, kube_ws_event *ev,
                   gc_error *err);

/* --- SPDY/3.1 frames (spdy.c) -------------------------------------------------------------- */

enum kube_spdy_type {
    KUBE_SPDY_NONE = -1, /* decoding: all input consumed; feed more */
    KUBE_SPDY_DATA = 0,
    KUBE_SPDY_SYN_STREAM = 1,
    KUBE_SPDY_SYN_REPLY = 2,
    KUBE_SPDY_RST_STREAM = 3,
    KUBE_SPDY_SETTINGS = 4,
    KUBE_SPDY_PING = 6,
    KUBE_SPDY_GOAWAY = 7,
    KUBE_SPDY_HEADERS = 8,
    KUBE_SPDY_WINDOW_UPDATE = 9,
};

#define KUBE_SPDY_FLAG_FIN      0x01
#define KUBE_SPDY_MAX_LENGTH    0xffffff  /* a frame's 24-bit length field */
#define KUBE_SPDY_MAX_CONTROL   (1 << 20) /* larger control frames are refused */
#define KUBE_SPDY_MAX_STREAM_ID 0x7fffffffu
#define KUBE_SPDY_RST_PROTOCOL  1
#define KUBE_SPDY_RST_REFUSED   3
#define KUBE_SPDY_RST_CANCEL    5
#define KUBE_SPDY_GOAWAY_OK     0

typedef struct kube_spdy_pair {
    const char *name;
    const char *value;
} kube_spdy_pair;

typedef struct kube_spdy_setting {
    uint8_t flags;
    uint32_t id;
    uint32_t value;
} kube_spdy_setting;

/* One frame, to encode or as decoded. Decoded pointers stay valid until the next decode. */
typedef struct kube_spdy_frame {
    int type;
    uint8_t flags;
    /* The stream: DATA, SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE; for GOAWAY
     * the last stream the sender accepted. */
    uint32_t stream_id;
    /* RST_STREAM and GOAWAY: the status; PING: the id; WINDOW_UPDATE: the delta;
     * SYN_STREAM: the associated stream. */
    uint32_t value;
    uint8_t priority;    /* SYN_STREAM: 0 (highest) to 7 */
    const uint8_t *data; /* DATA: the payload (decoded: one piece of it) */
    size_t len;
    bool data_end; /* decoded DATA: this piece ends the frame (FIN is set only then) */
    const kube_spdy_pair *headers; /* SYN_STREAM, SYN_REPLY, HEADERS */
    size_t header_count;
    const kube_spdy_setting *settings; /* SETTINGS */
    size_t settings_count;
} kube_spdy_frame;

/* The state one end of a SPDY session keeps: a zlib stream for the header blocks it sends and
 * one for those it receives (each shared by every frame of the session, primed with the SPDY/3
 * dictionary), and the frame being decoded. */
typedef struct kube_spdy_codec {
    z_stream deflater;
    z_stream inflater;
    gc_buf scratch;       /* a header block before compression, or after decompression */
    gc_buf pending;       /* a frame header or control frame split across inputs */
    gc_buf strings;       /* the decoded header names and values, NUL-terminated */
    uint32_t data_stream; /* the DATA frame being handed out, and how much of it is left */
    uint8_t data_flags;
    uint32_t data_remaining;
    uint32_t skip_remaining; /* bytes of an unknown control frame still to skip */
    kube_spdy_pair *pairs;
    size_t pairs_cap;
    kube_spdy_setting *settings;
    size_t settings_cap;
} kube_spdy_codec;

void kube_spdy_codec_init(kube_spdy_codec *c);
void kube_spdy_codec_free(kube_spdy_codec *c);
/* The SPDY/3 header compression dictionary (a protocol constant). */
const uint8_t *kube_spdy_dictionary(size_t *len);
/* Appends `f` as one frame (its header block compressed on the codec's sending stream). A DATA
 * payload must fit the 24-bit length; callers split larger writes. */
void kube_spdy_encode(kube_spdy_codec *c, gc_buf *out, const kube_spdy_frame *f);
/* Consumes input from *in (advancing *in and *len) up to the next frame or DATA piece. Returns
 * 0 with *f set (type KUBE_SPDY_NONE once the input is used up), or GC_EXIT_RUNTIME when the
 * bytes are not SPDY/3.1 (bad lengths, a bad header block, a broken compression stream); the
 * session is unusable after an error, because both ends share the compression state. Control
 * frames of unknown types are skipped, as SPDY requires. */
int kube_spdy_decode(kube_spdy_codec *c, const uint8_t **in, size_t *len, kube_spdy_frame *f,
                     gc_error *err);

/* --- the port-forward session (portforward.c) ----------------------------------------------- */

typedef struct kube_pf kube_pf;

typedef enum kube_pf_event_type {
    KUBE_PF_OPENED,   /* the pod side took the connection */
    KUBE_PF_DATA,     /* bytes from the pod side */
    KUBE_PF_PEER_FIN, /* the pod side sends nothing more (half-close) */
    KUBE_PF_CLOSED,   /* the connection is over and its id is gone */
    KUBE_PF_PONG,     /* the answer to kube_pf_ping */
    KUBE_PF_GOAWAY,   /* the server takes no new connections: open a new session */
} kube_pf_event_type;

typedef struct kube_pf_event {
    kube_pf_event_type type;
    uint32_t conn;       /* the connection (OPENED, DATA, PEER_FIN, CLOSED) */
    void *user;          /* what the caller gave kube_pf_open */
    const uint8_t *data; /* DATA; valid during the callback only */
    size_t len;
    /* CLOSED: why it failed (the pod side's error text, a reset, the session ending), or NULL
     * after a clean end in both directions. */
    const char *text;
} kube_pf_event;

/* Receives events while kube_pf_feed or kube_pf_eof run, and CLOSED from kube_pf_shutdown when
 * the half-close completes a connection. It may call kube_pf_open, _send, _shutdown, _reset and
 * _ping, but not _feed, _eof or _free. */
typedef void (*kube_pf_event_fn)(void *ctx, const kube_pf_event *ev);

/* A session forwarding connections to `port` of the pod, framed as `kind`. */
kube_pf *kube_pf_new(kube_tunnel_kind kind, uint16_t port, kube_pf_event_fn on_event, void *ctx);
/* Frees the session; connections still open are not reported. */
void kube_pf_free(kube_pf *pf);

/* Opens a forwarded connection: its error and data streams are queued at once; KUBE_PF_OPENED
 * follows when the pod side accepts. Fails once the session is ending or out of stream ids. */
int kube_pf_open(kube_pf *pf, void *user, uint32_t *conn, gc_error *err);
/* Queues bytes for the pod side. Bytes sent before KUBE_PF_OPENED wait for it, because the
 * kubelet drops data on a stream it has not answered yet; a transport bounds them by reading
 * the local client only once the connection is OPENED. */
int kube_pf_send(kube_pf *pf, uint32_t conn, const void *data, size_t len, gc_error *err);
/* Half-closes: the pod side reads EOF after the bytes sent so far. Reports CLOSED at once when
 * the pod side had finished too. */
int kube_pf_shutdown(kube_pf *pf, uint32_t conn, gc_error *err);
/* Abandons the connection (the pod side sees a reset); no event follows. */
void kube_pf_reset(kube_pf *pf, uint32_t conn);
/* Queues a PING; KUBE_PF_PONG reports the answer. The kubelet closes a session after a long
 * time without frames, and a ping is the way to tell a quiet session from a dead one. */
void kube_pf_ping(kube_pf *pf);
/* Ends the session politely: resets the open connections, says GOAWAY and, in a WebSocket,
 * sends a close frame. Send the output, then close the transport. */
void kube_pf_close(kube_pf *pf);

/* Hands the session bytes received from the transport; events follow through the callback.
 * Returns GC_EXIT_RUNTIME once the session has ended (the server closed it, or broke the
 * protocol) with the reason in err, after reporting every open connection CLOSED. */
int kube_pf_feed(kube_pf *pf, const void *data, size_t len, gc_error *err);
/* The transport ended: every open connection is reported CLOSED with `why`. */
void kube_pf_eof(kube_pf *pf, const char *why);

/* The bytes waiting to be sent, and how many of them the transport has sent. */
const uint8_t *kube_pf_output(const kube_pf *pf, size_t *len);
void kube_pf_output_done(kube_pf *pf, size_t n);
/* How many connections are open (opened and not yet CLOSED or reset). */
size_t kube_pf_count(const kube_pf *pf);

/* --- the tunnel (portforward_tunnel.c): the layers on a socket, for the forwarder ----------- */

/* The server side has no flow control, so the caller bounds both directions: it reads its
 * local sockets only while kube_tunnel_queued() is small, and holds the tunnel
 * (kube_tunnel_hold) while one of its local sockets does not take the bytes the pod sends. */

/* Connects, upgrades and checks the answer (blocking, until o->deadline_ms at most). A refused
 * WebSocket is retried as SPDY; a 401 once with a fresh credential. Failures say what the API
 * server answered (a missing pod is err->http_status 404; no permission is 403 with the RBAC
 * rule to ask for). */
int kube_tunnel_open(gc_kube *kube, const gc_tunnel_options *o, gc_kube_tunnel **out,
                     gc_error *err);
/* Ends the tunnel politely (its open connections are reset, the server is told GOAWAY and, in a
 * WebSocket, gets a close frame, sent within a moment if the socket takes it) and frees it. */
void kube_tunnel_close(gc_kube_tunnel *t);

/* For the caller's poll(2): the socket, the events to wait for (POLLIN unless held, POLLOUT
 * while bytes wait to be sent), and the longest wait before kube_tunnel_pump must run again
 * (for keep-alive pings, 0 while received bytes wait inside TLS, -1 while held: nothing is
 * due). */
int kube_tunnel_fd(const gc_kube_tunnel *t);
short kube_tunnel_poll_events(const gc_kube_tunnel *t);
int kube_tunnel_timeout_ms(const gc_kube_tunnel *t);

/* After poll (revents for its socket, 0 when it was not polled): reads what arrived, reporting
 * events, and sends what is queued; pings the server every 10 s. Returns GC_EXIT_RUNTIME once the
 * tunnel is over (the server closed it, the connection broke, 30 s without an answer to a ping),
 * with the reason in err, after reporting every open connection CLOSED. */
int kube_tunnel_pump(gc_kube_tunnel *t, short revents, gc_error *err);

/* Stops reading from the API server while `hold` is true (a local reader is behind). */
void kube_tunnel_hold(gc_kube_tunnel *t, bool hold);
/* Bytes queued for the API server and not yet sent. */
size_t kube_tunnel_queued(const gc_kube_tunnel *t);
/* False once the server said GOAWAY: open connections go on, new ones need a new tunnel. */
bool kube_tunnel_accepting(const gc_kube_tunnel *t);
/* How the tunnel is framed: "WebSocket" or "SPDY". */
const char *kube_tunnel_kind_name(const gc_kube_tunnel *t);

/* A new forwarded connection to the pod's port; GC_TUNNEL_OPENED follows when the pod side
 * takes it. Read the local socket only after that: bytes are held until then. */
int kube_tunnel_connect(gc_kube_tunnel *t, void *user, uint32_t *conn, gc_error *err);
int kube_tunnel_send(gc_kube_tunnel *t, uint32_t conn, const void *data, size_t len, gc_error *err);
/* Half-closes: the pod side reads end of file after the bytes sent so far. */
int kube_tunnel_shutdown(gc_kube_tunnel *t, uint32_t conn, gc_error *err);
/* Abandons the connection (the pod side sees a reset); no event follows. */
void kube_tunnel_reset(gc_kube_tunnel *t, uint32_t conn);
/* Connections open (taken and not yet CLOSED or reset). */
size_t kube_tunnel_count(const gc_kube_tunnel *t);

#endif
