/*
 * urlcheck: example toolhost plugin in C that uses the network.
 *
 *   check_url   GETs a URL and says what came back: status, type, size, the start of the body
 *
 * It calls th_http_get from the C SDK's toolhost_http.h (over
 * wasi:http/outgoing-handler), so it reaches only the hosts its operator
 * grants in toolhost.toml ([plugins.urlcheck] http = [...]); urlcheck.toml
 * beside it says what it asks for. plugins/c/build.sh builds it against the
 * world toolhost:plugin-with-http/plugin@0.2.0 (sdk/wit-http: contract 0.2.0
 * plus wasi:http) with the 0.2.0 C SDK because of that manifest; it answers
 * with one JSON block.
 */
#include "toolhost.h"
#include "toolhost_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret) {
    th_tools_init(ret, 1);
    th_tools_set(ret, 0, "check_url",
                 "GETs a URL and says what came back: the HTTP status, content type, body size in bytes and "
                 "the first characters of the body. Returns JSON {\"url\", \"status\", \"content_type\", "
                 "\"bytes\", \"truncated\", \"starts_with\"}. Example: {\"url\": \"https://example.com/\"}.",
                 "{\"type\":\"object\",\"required\":[\"url\"],\"additionalProperties\":false,\"properties\":{"
                 "\"url\":{\"type\":\"string\",\"description\":\"An http:// or https:// URL.\"},"
                 "\"preview\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000,\"default\":80,"
                 "\"description\":\"How many characters of the body to show.\"}}}");
    th_tools_title(ret, 0, "Check a URL");
    th_tools_hint(ret, 0, TH_HINT_READ_ONLY, true);
    th_tools_hint(ret, 0, TH_HINT_OPEN_WORLD, true);
}

/* The first `count` characters (not bytes) of UTF-8 `text`, as a byte length. */
static size_t utf8_prefix(const char *text, size_t len, size_t count) {
    size_t at = 0;
    while (at < len && count > 0) {
        at++;
        while (at < len && ((unsigned char)text[at] & 0xC0) == 0x80) at++;
        count--;
    }
    return at;
}

static bool check_url(const th_json *args, th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    const char *url = th_json_get(args, "url")->string;
    const th_json *preview = th_json_get(args, "preview");
    size_t shown = preview ? (size_t)preview->number : 80;
    th_http_response response;
    char error[512];
    th_http_result result = th_http_get(url, 1 << 20, &response, error, sizeof error);
    if (result == TH_HTTP_INVALID) return th_invalid_arguments(err, "%s", error);
    if (result == TH_HTTP_DENIED) {
        return th_failed(err, "could not fetch %s: %s (grant it under [plugins.urlcheck] http)", url, error);
    }
    if (result != TH_HTTP_OK) return th_failed(err, "could not fetch %s: %s", url, error);

    char status[8];
    snprintf(status, sizeof status, "%u", (unsigned)response.status);
    th_log(TH_DEBUG, "checked a URL", "status", status, NULL);
    const char *type = th_http_header(&response, "content-type");
    th_buf out = {0};
    th_buf_puts(&out, "{\"url\":");
    th_buf_json_string(&out, url);
    th_buf_printf(&out, ",\"status\":%u,\"content_type\":", (unsigned)response.status);
    if (type) {
        th_buf_json_string(&out, type);
    } else {
        th_buf_puts(&out, "null");
    }
    th_buf_printf(&out, ",\"bytes\":%zu,\"truncated\":%s,\"starts_with\":", response.body.len,
                  response.truncated ? "true" : "false");
    /* The output must be UTF-8: a body that is not is shown by its size only. */
    size_t cut = utf8_prefix(response.body.data, response.body.len, shown);
    char saved = response.body.data[cut];
    response.body.data[cut] = '\0';
    if (th_utf8_valid(response.body.data, cut)) {
        th_buf_json_string(&out, response.body.data);
    } else {
        th_buf_puts(&out, "null");
    }
    response.body.data[cut] = saved;
    th_buf_puts(&out, "}");
    th_http_response_free(&response);
    return th_ok_json_buf(ret, &out);
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
    } else if (strcmp(tool, "check_url") == 0) {
        ok = check_url(args, ret, err);
    } else {
        ok = th_failed(err, "this plugin has no tool named `%s`", tool);
    }
    free(tool);
    th_json_free(args);
    plugin_string_free(name);
    plugin_string_free(arguments);
    return ok;
}
