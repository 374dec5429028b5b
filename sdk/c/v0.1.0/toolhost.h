/*
 * toolhost.h — helpers for toolhost plugins written in C, on contract 0.1.0.
 *
 * Frozen with that contract: plugins/c/build.sh builds the bundled C plugins
 * that stay on 0.1.0 with it, to prove they still build and load. New plugins
 * use the SDK for contract 0.2.0 in sdk/c/ (what `toolhost new --lang c` writes).
 *
 * A C plugin implements the two exports that `wit-bindgen c` declares in the
 * generated `plugin.h` (world `toolhost:plugin/plugin@0.1.0`):
 *
 *   void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret);
 *   bool exports_toolhost_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments,
 *       exports_toolhost_plugin_tools_tool_output_t *ret, exports_toolhost_plugin_tools_call_error_t *err);
 *
 * This file adds what every plugin needs on top of the raw bindings: a small
 * JSON reader for the arguments (th_json_*), a growable text buffer for the
 * output (th_buf_*), one-line constructors for the tool list and the call's
 * result or error (th_tools_*, th_ok_*, th_invalid_arguments, th_failed), and
 * logging through the host's `log` import (th_log).
 *
 * Memory: strings handed to the host (tool list, output, error text) are
 * allocated with malloc and freed by the generated bindings after the call.
 * Everything else is freed with the matching *_free function. An instance
 * lives for one call only, so a leak cannot accumulate, but the helpers do
 * not leak.
 */
#ifndef TOOLHOST_H
#define TOOLHOST_H

#include "plugin.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "../toolhost_json.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The tool list ----------------------------------------------------- */

/* Makes room for `count` tools in the list the host asked for. */
void th_tools_init(exports_toolhost_plugin_tools_list_tool_t *ret, size_t count);
/* Fills entry `index`: its name, a description for the model, and the JSON
 * Schema of its arguments object (as JSON text). */
void th_tools_set(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index,
                  const char *name, const char *description, const char *input_schema);

/* ---- A call's result ---------------------------------------------------- */

/* Each returns the value call-tool must return: true for output, false for an error. */
bool th_ok_text(exports_toolhost_plugin_tools_tool_output_t *ret, const char *text);
/* Takes the buffer's text as JSON output and resets the buffer. */
bool th_ok_json_buf(exports_toolhost_plugin_tools_tool_output_t *ret, th_buf *json);
/* The arguments were malformed or out of range: say which and why, so the model can fix them. */
bool th_invalid_arguments(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The arguments were fine but the tool could not do its job: say why. */
bool th_failed(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether `len` bytes of `text` are valid UTF-8. Every string handed to the
 * host (output, error messages, tool descriptions) must be: the canonical ABI
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

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_H */
