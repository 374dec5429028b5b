/*
 * toolhost.h — helpers for toolhost plugins written in C, on contract 0.2.0.
 *
 * A C plugin implements the two exports that `wit-bindgen c` declares in the
 * generated `plugin.h` (world `toolhost:plugin-with-http/plugin@0.2.0`, which
 * is `toolhost:plugin/plugin@0.2.0` plus wasi:http):
 *
 *   void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret);
 *   bool exports_toolhost_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments,
 *       exports_toolhost_plugin_tools_list_block_t *ret, exports_toolhost_plugin_tools_call_error_t *err);
 *
 * This file adds what every plugin needs on top of the raw bindings: a small
 * JSON reader for the arguments (th_json_*), a growable text buffer (th_buf_*),
 * the tool list with titles, output schemas and hints (th_tools_*), a call's
 * result as content blocks (th_text, th_json_buf, th_image, th_audio, th_link,
 * th_embedded_*, th_annotate) or its error (th_invalid_arguments, th_failed),
 * logging through the host's `log` import (th_log), and what a running call
 * may ask through the `call` import: progress (th_progress), the user
 * (th_elicit, th_elicit_url), the model (th_sample) and the client's roots
 * (th_roots), or several of those at once (th_ask). Those requests are
 * refused (TH_REQUEST_DENIED) unless the operator grants them under
 * [plugins.NAME] in toolhost.toml
 * (`elicitation = true`, `sampling = true`, `roots = true`).
 *
 * Memory: strings handed to the host (tool list, blocks, error text) are
 * allocated with malloc and freed by the generated bindings after the call.
 * Everything else is freed with the matching *_free function. An instance
 * lives for one call only, so a leak cannot accumulate, but the helpers do
 * not leak.
 *
 * Plugins built against contract 0.1.0 use the SDK of that version
 * (sdk/c/v0.1.0 in the toolhost repository); both load.
 */
#ifndef TOOLHOST_H
#define TOOLHOST_H

#include "plugin.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "toolhost_json.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The tool list ----------------------------------------------------- */

/* Makes room for `count` tools in the list the host asked for. */
void th_tools_init(exports_toolhost_plugin_tools_list_tool_t *ret, size_t count);
/* Fills entry `index`: its name (`^[a-zA-Z0-9_-]{1,64}$`), a description for
 * the model, and the JSON Schema of its arguments object (as JSON text). */
void th_tools_set(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index,
                  const char *name, const char *description, const char *input_schema);
/* Its name for people (a client may show it instead of the name). */
void th_tools_title(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index, const char *title);
/* The JSON Schema (JSON text, `"type":"object"`) of its result's JSON block:
 * the host checks every result against it, and clients get the JSON block as
 * structured content. */
void th_tools_output_schema(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index, const char *schema);

/* What a tool may do, as hints for clients and approval policies. The host
 * never lets a hint claim less than the plugin's grants allow. */
typedef enum th_hint {
    TH_HINT_READ_ONLY,   /* it changes nothing outside itself */
    TH_HINT_DESTRUCTIVE, /* it may destroy or overwrite something */
    TH_HINT_IDEMPOTENT,  /* calling it twice with the same arguments does nothing more */
    TH_HINT_OPEN_WORLD,  /* it reaches outside (the network, the world) */
} th_hint;
/* Sets one hint of entry `index` (an unset hint says nothing). */
void th_tools_hint(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index, th_hint hint, bool value);

/* ---- A call's result: content blocks ------------------------------------ */

typedef exports_toolhost_plugin_tools_list_block_t th_blocks;
typedef exports_toolhost_plugin_tools_block_t th_block;

/* Empties the result list: call it first in call_tool (the bindings hand it
 * over uninitialised; the adders below also start a list they have not seen). */
void th_blocks_init(th_blocks *ret);

/* Each adds one block to the result and returns it, for th_annotate (before
 * the next block is added: adding moves the list). call_tool then returns true. */
th_block *th_text(th_blocks *ret, const char *text);
/* The result's JSON block (at most one per result: its structured content,
 * checked against the output schema), from JSON text. */
th_block *th_json_text(th_blocks *ret, const char *json);
/* The JSON block from the buffer's text; takes the buffer's text and resets it. */
th_block *th_json_buf(th_blocks *ret, th_buf *json);
/* An image (`image/png`, ...) or audio (`audio/wav`, ...): its bytes are copied. */
th_block *th_image(th_blocks *ret, const void *data, size_t len, const char *mime_type);
th_block *th_audio(th_blocks *ret, const void *data, size_t len, const char *mime_type);
/* A link to a resource; title, description and mime_type may be NULL, size
 * negative when unknown. */
th_block *th_link(th_blocks *ret, const char *uri, const char *name, const char *title,
                  const char *description, const char *mime_type, long long size);
/* An embedded resource holding text, or bytes; mime_type may be NULL. */
th_block *th_embedded_text(th_blocks *ret, const char *uri, const char *mime_type, const char *text);
th_block *th_embedded_blob(th_blocks *ret, const char *uri, const char *mime_type, const void *data, size_t len);

/* Who a block is for (TH_FOR_USER | TH_FOR_ASSISTANT; 0: both). */
#define TH_FOR_USER 1u
#define TH_FOR_ASSISTANT 2u
/* Hints for the client about a block: its audience, its priority from 0 to
 * 1 (negative: none) and when it last changed (ISO 8601, or NULL). */
void th_annotate(th_block *block, unsigned audience, double priority, const char *last_modified);

/* One text block, or one JSON block: return these from call_tool directly. */
bool th_ok_text(th_blocks *ret, const char *text);
bool th_ok_json_buf(th_blocks *ret, th_buf *json);

/* ---- A call's error ------------------------------------------------------ */

/* Each returns false, the value call-tool must return for an error. */
/* The arguments were malformed or out of range: say which and why, so the model can fix them. */
bool th_invalid_arguments(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The arguments were fine but the tool could not do its job: say why. */
bool th_failed(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether `len` bytes of `text` are valid UTF-8. Every string handed to the
 * host (blocks, error messages, tool descriptions) must be: the canonical ABI
 * traps the call on a string that is not. Check text from outside (an HTTP
 * body, a file) before passing it on. */
bool th_utf8_valid(const char *text, size_t len);

/* A plugin_string_t (not NUL-terminated) as a new NUL-terminated string; free() it. */
char *th_string(const plugin_string_t *string);

/* ---- Logging ------------------------------------------------------------- */

typedef enum th_level {
    TH_TRACE = TOOLHOST_PLUGIN_LOG_LEVEL_TRACE,
    TH_DEBUG = TOOLHOST_PLUGIN_LOG_LEVEL_DEBUG,
    TH_INFO = TOOLHOST_PLUGIN_LOG_LEVEL_INFO,
    TH_WARN = TOOLHOST_PLUGIN_LOG_LEVEL_WARN,
    TH_ERROR = TOOLHOST_PLUGIN_LOG_LEVEL_ERROR,
} th_level;

/* Logs `message` into the host's log, attributed to this plugin, with
 * key/value pairs given as alternating strings and ended by NULL:
 *   th_log(TH_DEBUG, "summarised", "count", "12", NULL); */
void th_log(th_level level, const char *message, ...);

/* ---- What a running call may ask ---------------------------------------- */

/* Reports progress: `done` out of `total` (negative: unknown), with a short
 * message (NULL: none). Always allowed; the host passes a few reports per
 * second on to the client, keeping the latest. */
void th_progress(double done, double total, const char *message);

/* How a request to the host went. Each function below writes the host's
 * reason into `error` (of `error_size` bytes) when it is not TH_REQUEST_OK. */
typedef enum th_request {
    TH_REQUEST_OK = 0,
    /* Not granted to this plugin: the reason says what to grant. */
    TH_REQUEST_DENIED,
    /* The client or front end cannot do it (no terminal, no model, ...). */
    TH_REQUEST_UNSUPPORTED,
    /* A per-call budget is used up (sampling tokens, requests). */
    TH_REQUEST_LIMIT,
    /* It was tried and failed. */
    TH_REQUEST_FAILED,
} th_request;

/* "denied", "unsupported", "limit", "failed" (or "ok"). */
const char *th_request_kind(th_request result);

/* The user's answer to an elicitation. */
typedef enum th_elicited {
    TH_ACCEPTED,
    TH_DECLINED,
    TH_CANCELLED,
} th_elicited;

/* Asks the user to fill in a form: `schema` is the JSON Schema (JSON text) of
 * a flat object of strings, numbers, booleans and enums. On TH_REQUEST_OK,
 * `*answer` says what the user did, and `*answers` (when not NULL) is the
 * accepted object (th_json_free it), else NULL. Needs `elicitation = true`. */
th_request th_elicit(const char *message, const char *schema, th_elicited *answer, th_json **answers,
                     char *error, size_t error_size);
/* Asks the user to open `url` (a login, a payment: what must not pass through
 * the client); TH_ACCEPTED says only that they went ahead. */
th_request th_elicit_url(const char *message, const char *url, th_elicited *answer, char *error,
                         size_t error_size);

/* Who says a message of a sampling request. */
typedef enum th_role {
    TH_USER = TOOLHOST_PLUGIN_TYPES_ROLE_USER,
    TH_ASSISTANT = TOOLHOST_PLUGIN_TYPES_ROLE_ASSISTANT,
} th_role;

/* One text message of a sampling request. */
typedef struct th_message {
    th_role role;
    const char *text;
} th_message;

/* Options of a sampling request: zero-initialise, then set what matters. */
typedef struct th_sampling {
    const char *system_prompt;       /* NULL: none */
    uint32_t max_tokens;             /* 0: 1000; counted against the plugin's sampling budget */
    bool has_temperature;
    double temperature;
    const char *const *stop;         /* stop sequences */
    size_t stop_len;
    const char *const *model_hints;  /* model names (or parts), best first */
    size_t model_hints_len;
} th_sampling;

/* The model's reply: `text` (NULL when it is not text), the `model` that
 * wrote it and why it stopped (`stop_reason`, or NULL). */
typedef struct th_sampled {
    char *text;
    char *model;
    char *stop_reason;
} th_sampled;

/* Asks the client's model for a reply to `prompt` (one user message), with
 * `options` (NULL: defaults). Needs `sampling = true` (or
 * `sampling = { max_tokens = N }`). Free the reply with th_sampled_free. */
th_request th_sample(const char *prompt, const th_sampling *options, th_sampled *reply, char *error,
                     size_t error_size);
/* The same with a conversation of `count` messages. */
th_request th_sample_messages(const th_message *messages, size_t count, const th_sampling *options,
                              th_sampled *reply, char *error, size_t error_size);
void th_sampled_free(th_sampled *reply);

/* One of the client's roots: its URI (`file:///...`) and name (or NULL). */
typedef struct th_root {
    char *uri;
    char *name;
} th_root;

/* The client's roots: where the user works. Information only: they never
 * widen the plugin's folder grants. Needs `roots = true`. Free them with
 * th_roots_free. */
th_request th_roots(th_root **roots, size_t *count, char *error, size_t error_size);
void th_roots_free(th_root *roots, size_t count);

/* ---- Several questions at once ------------------------------------------ */

/* What a question of a batch asks, as the function of the same name does. */
typedef enum th_question_kind {
    TH_ASK_FORM,   /* th_elicit: `message`, `schema` */
    TH_ASK_URL,    /* th_elicit_url: `message`, `url` */
    TH_ASK_SAMPLE, /* th_sample_messages: `messages`, `messages_len`, `options` */
    TH_ASK_ROOTS,  /* th_roots */
} th_question_kind;

/* One question of a batch: zero-initialise, then set a `key` unique in the
 * batch (a client that answers by calling again answers by it), the `kind`
 * and that kind's fields. */
typedef struct th_question {
    const char *key;
    th_question_kind kind;
    const char *message;
    const char *schema;
    const char *url;
    const th_message *messages;
    size_t messages_len;
    const th_sampling *options; /* NULL: defaults */
} th_question;

/* The answer to one question: `result` is TH_REQUEST_OK or why not (then
 * `error` holds the host's reason); on TH_REQUEST_OK, the fields of the
 * question's kind: `elicited` (and for an accepted form `answers`, the
 * object), `sampled`, or `roots` and `roots_len`. */
typedef struct th_answer {
    th_request result;
    char *error;
    th_elicited elicited;
    th_json *answers;
    th_sampled sampled;
    th_root *roots;
    size_t roots_len;
} th_answer;

/* Asks `count` questions at once, so that a client that answers by calling
 * again gets them all in one round: `answers` (room for `count`) gets the
 * answer to each, in order. Each is granted, refused and answered as its own
 * function's would be. Free them with th_answers_free. */
void th_ask(const th_question *questions, size_t count, th_answer *answers);
void th_answers_free(th_answer *answers, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_H */
