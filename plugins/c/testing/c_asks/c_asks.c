/*
 * c_asks: what a running call may do through the C SDK (sdk/c/toolhost.h),
 * for the tests: a form, a sampling request, the client's roots, a keyed batch
 * of them (th_ask), and a result of every kind of block. Its tools answer
 * exactly as sdk_asks (the Rust SDK's) do, so one test checks both
 * (tests/all/contract_v0_2.rs).
 */
#include "toolhost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTHING "{\"type\":\"object\",\"properties\":{}}"
#define PERSON                                                                                   \
    "{\"type\":\"object\",\"properties\":{"                                                      \
    "\"username\":{\"type\":\"string\",\"description\":\"Your user name.\"},"                    \
    "\"color\":{\"type\":\"string\",\"enum\":[\"blue\",\"red\"],\"description\":\"Your favourite colour.\"}," \
    "\"ok\":{\"type\":\"boolean\",\"description\":\"Is all this fine?\"},"                        \
    "\"nickname\":{\"type\":\"string\",\"description\":\"A nickname, if you have one.\"}},"       \
    "\"required\":[\"username\",\"color\",\"ok\"]}"

/* The smallest PNG: one transparent pixel. */
static const unsigned char PIXEL[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
    0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d,
    0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};

void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret) {
    th_tools_init(ret, 5);
    th_tools_set(ret, 0, "c_elicit", "Asks the user who they are, with a form.", NOTHING);
    th_tools_set(ret, 1, "c_sample", "Asks the client's model to answer a prompt.",
                 "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
                 "\"description\":\"What to ask the model.\"}},\"required\":[\"prompt\"]}");
    th_tools_set(ret, 2, "c_roots", "Lists the client's roots.", NOTHING);
    th_tools_set(ret, 3, "c_batch", "Asks the user and reads the roots in one batch.", NOTHING);
    th_tools_set(ret, 4, "c_media", "Returns one block of every kind.", NOTHING);
    th_tools_title(ret, 4, "Every kind of block");
    th_tools_hint(ret, 4, TH_HINT_READ_ONLY, true);
}

/* "ada likes Blue (ok: true, nickname: none)" */
static void said(th_buf *out, const th_json *person) {
    const th_json *color = th_json_get(person, "color");
    const th_json *nickname = th_json_get(person, "nickname");
    const th_json *ok = th_json_get(person, "ok");
    const char *shade = color && color->kind == TH_JSON_STRING ? color->string : "?";
    th_buf_printf(out, "%s likes %c%s (ok: %s, nickname: %s)", th_json_get(person, "username")->string,
                  shade[0] >= 'a' && shade[0] <= 'z' ? shade[0] - 'a' + 'A' : shade[0], shade[0] ? shade + 1 : "",
                  ok && ok->boolean ? "true" : "false",
                  nickname && nickname->kind == TH_JSON_STRING ? nickname->string : "none");
}

static bool done(th_blocks *ret, th_buf *out) {
    th_text(ret, out->data ? out->data : "");
    th_buf_free(out);
    return true;
}

static bool refused(exports_toolhost_plugin_tools_call_error_t *err, th_request result, const char *why) {
    return th_failed(err, "%s: %s", th_request_kind(result), why);
}

static bool elicit(th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    char error[1024];
    th_elicited answer;
    th_json *answers = NULL;
    th_progress(0, 1, "asking");
    th_request result = th_elicit("Who are you?", PERSON, &answer, &answers, error, sizeof error);
    if (result != TH_REQUEST_OK) return refused(err, result, error);
    th_buf out = {0};
    if (answer == TH_ACCEPTED) {
        th_buf_puts(&out, "accepted: ");
        said(&out, answers);
    } else {
        th_buf_puts(&out, answer == TH_DECLINED ? "declined" : "cancelled");
    }
    th_json_free(answers);
    return done(ret, &out);
}

static bool sample(const th_json *args, th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    char error[1024];
    th_sampling options = {0};
    options.system_prompt = "Be brief.";
    options.max_tokens = 100;
    th_sampled reply;
    th_request result = th_sample(th_json_get(args, "prompt")->string, &options, &reply, error, sizeof error);
    if (result != TH_REQUEST_OK) return refused(err, result, error);
    th_buf out = {0};
    th_buf_printf(&out, "%s said: %s (%s)", reply.model, reply.text ? reply.text : "",
                  reply.stop_reason ? reply.stop_reason : "?");
    th_sampled_free(&reply);
    return done(ret, &out);
}

static bool roots(th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    char error[1024];
    th_root *found;
    size_t count;
    th_request result = th_roots(&found, &count, error, sizeof error);
    if (result != TH_REQUEST_OK) return refused(err, result, error);
    th_buf out = {0};
    th_buf_puts(&out, "roots: ");
    for (size_t i = 0; i < count; i++) {
        th_buf_printf(&out, "%s%s (%s)", i ? ", " : "", found[i].uri, found[i].name ? found[i].name : "-");
    }
    th_roots_free(found, count);
    return done(ret, &out);
}

static bool batch(th_blocks *ret, exports_toolhost_plugin_tools_call_error_t *err) {
    th_question questions[2] = {
        {.key = "who", .kind = TH_ASK_FORM, .message = "Who are you, again?", .schema = PERSON},
        {.key = "where", .kind = TH_ASK_ROOTS},
    };
    th_answer answers[2];
    th_ask(questions, 2, answers);

    bool ok = true;
    th_buf out = {0};
    for (size_t i = 0; i < 2 && ok; i++) {
        const th_answer *answer = &answers[i];
        if (i) th_buf_puts(&out, "\n");
        if (answer->result == TH_REQUEST_UNSUPPORTED) {
            th_buf_printf(&out, "unsupported: %s", answer->error);
        } else if (answer->result != TH_REQUEST_OK) {
            ok = refused(err, answer->result, answer->error);
        } else if (questions[i].kind == TH_ASK_FORM) {
            if (answer->elicited == TH_ACCEPTED) {
                th_buf_puts(&out, "who: ");
                said(&out, answer->answers);
            } else {
                th_buf_puts(&out, answer->elicited == TH_DECLINED ? "who: declined" : "who: cancelled");
            }
        } else {
            th_buf_printf(&out, "where: %zu roots", answer->roots_len);
        }
    }
    th_answers_free(answers, 2);
    if (!ok) {
        th_buf_free(&out);
        return false;
    }
    return done(ret, &out);
}

static bool media(th_blocks *ret) {
    static const unsigned char three[] = {0, 1, 2};
    th_text(ret, "every kind");
    th_annotate(th_image(ret, PIXEL, sizeof PIXEL, "image/png"), TH_FOR_USER, -1, NULL);
    th_link(ret, "test://notes/1", "note-1", NULL, NULL, NULL, -1);
    th_embedded_text(ret, "test://notes/2", "text/plain", "the second note");
    th_embedded_blob(ret, "test://notes/3", "application/octet-stream", three, sizeof three);
    th_json_text(ret, "{\"blocks\":7}");
    th_annotate(th_text(ret, "important"), 0, 0.9, NULL);
    return true;
}

bool exports_toolhost_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments, th_blocks *ret,
                                             exports_toolhost_plugin_tools_call_error_t *err) {
    char error[128];
    bool ok;
    th_blocks_init(ret);
    th_json *args = th_json_parse((const char *)arguments->ptr, arguments->len, error, sizeof error);
    char *tool = th_string(name);
    if (!args) {
        ok = th_invalid_arguments(err, "the arguments are not valid JSON: %s", error);
    } else if (strcmp(tool, "c_elicit") == 0) {
        ok = elicit(ret, err);
    } else if (strcmp(tool, "c_sample") == 0) {
        ok = sample(args, ret, err);
    } else if (strcmp(tool, "c_roots") == 0) {
        ok = roots(ret, err);
    } else if (strcmp(tool, "c_batch") == 0) {
        ok = batch(ret, err);
    } else if (strcmp(tool, "c_media") == 0) {
        ok = media(ret);
    } else {
        ok = th_failed(err, "this plugin has no tool named `%s`", tool);
    }
    free(tool);
    th_json_free(args);
    plugin_string_free(name);
    plugin_string_free(arguments);
    return ok;
}
