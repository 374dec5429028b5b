/*
 * __NAME__: a toolhost plugin in C. Build it with ./build.sh, which writes
 * __NAME__.wasm; copy that file into toolhost's plugins folder.
 *
 * wit-bindgen generates gen/plugin.h and gen/plugin.c from wit/ (toolhost's
 * contract 0.2.0, and wasi:http for toolhost_http.h); this file implements
 * the two exports they declare: list_tools says which tools there are (name,
 * title, description, JSON Schemas of the arguments and of the result, hints)
 * and call_tool runs one. toolhost.h (the C SDK) reads the JSON arguments,
 * builds the result's content blocks (th_text, th_json_buf, th_image, ...) or
 * the error, logs, and makes the requests a call may make: th_progress,
 * th_elicit (ask the user), th_sample (ask the model), th_roots, each where
 * the operator grants it under [plugins.__NAME__] in toolhost.toml.
 * toolhost_http.h GETs a URL (th_http_get), reaching only the hosts granted
 * under [plugins.__NAME__] http. Strings handed to the host must be UTF-8
 * (th_utf8_valid checks), or the call traps.
 */
#include "toolhost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret) {
    th_tools_init(ret, 1);
    th_tools_set(ret, 0, "__NAME__",
                 "Counts the words and characters of a text. Returns JSON {\"words\", \"characters\"}.",
                 "{\"type\":\"object\",\"required\":[\"text\"],"
                 "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to count.\"}}}");
    th_tools_title(ret, 0, "Count words");
    th_tools_output_schema(ret, 0,
                           "{\"type\":\"object\",\"properties\":{\"words\":{\"type\":\"integer\"},"
                           "\"characters\":{\"type\":\"integer\"}},\"required\":[\"words\",\"characters\"]}");
    th_tools_hint(ret, 0, TH_HINT_READ_ONLY, true);
    th_tools_hint(ret, 0, TH_HINT_IDEMPOTENT, true);
}

static bool count(const th_json *args, th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    const th_json *text = th_json_get(args, "text");
    if (!text || text->kind != TH_JSON_STRING) {
        return th_invalid_arguments(err, "`text` must be a string");
    }
    if (text->string_len == 0) {
        /* The model can fix its arguments and call again. Use th_failed(err, ...)
         * when the arguments were fine but the tool could not do its job. */
        return th_invalid_arguments(err, "`text` is empty: give the text to count");
    }
    size_t words = 0, characters = 0;
    bool in_word = false;
    for (size_t i = 0; i < text->string_len; i++) {
        unsigned char c = (unsigned char)text->string[i];
        if ((c & 0xC0) != 0x80) characters++; /* count UTF-8 lead bytes */
        bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (!space && !in_word) words++;
        in_word = !space;
    }
    th_progress(1, 1, "counted");
    char shown[24];
    snprintf(shown, sizeof shown, "%zu", words);
    th_log(TH_DEBUG, "counted", "words", shown, NULL);
    /* A text block for people and models, and the JSON block (the result's
     * structured content, checked against the output schema). */
    th_buf line = {0};
    th_buf_printf(&line, "%zu words, %zu characters", words, characters);
    th_text(ret, line.data);
    th_buf_free(&line);
    th_buf json = {0};
    th_buf_printf(&json, "{\"words\":%zu,\"characters\":%zu}", words, characters);
    th_json_buf(ret, &json);
    return true;
}

bool exports_toolhost_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments, th_blocks *ret,
                                             exports_toolhost_plugin_tools_call_error_t *err) {
    char error[128];
    bool ok;
    th_blocks_init(ret);
    /* The host has already checked the arguments against the tool's schema. */
    th_json *args = th_json_parse((const char *)arguments->ptr, arguments->len, error, sizeof error);
    char *tool = th_string(name);
    if (!args) {
        ok = th_invalid_arguments(err, "the arguments are not valid JSON: %s", error);
    } else if (strcmp(tool, "__NAME__") == 0) {
        ok = count(args, ret, err);
    } else {
        ok = th_failed(err, "this plugin has no tool named `%s`", tool);
    }
    free(tool);
    th_json_free(args);
    plugin_string_free(name);
    plugin_string_free(arguments);
    return ok;
}
