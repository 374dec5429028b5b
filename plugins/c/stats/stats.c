/*
 * stats: example toolhost plugin in C. Summary statistics and least-squares
 * line fitting, so that a model does not do arithmetic over a list of
 * numbers in its head.
 *
 * Tools:
 *   describe_numbers   count, sum, mean, median, min, max, spread and percentiles
 *   linear_regression  slope, intercept and r² of the best straight line through points
 *
 * Built with wit-bindgen's C generator, clang and wasi-libc, and made into a
 * component by wasm-component-ld: see plugins/c/build.sh. The JSON reader and
 * result helpers are the C SDK in sdk/c/toolhost.h.
 */
#include "toolhost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUMBERS 1000000

static const char DESCRIBE_SCHEMA[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"numbers\"],"
    "\"properties\":{"
    "\"numbers\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":1,\"maxItems\":1000000,"
    "\"description\":\"The numbers to summarise, e.g. [3, 1.5, 4, 1, 5].\"},"
    "\"percentiles\":{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0,\"maximum\":100},"
    "\"maxItems\":100,"
    "\"description\":\"Percentiles to compute, each from 0 to 100, e.g. [25, 75, 90]. Optional.\"}}}";

static const char REGRESSION_SCHEMA[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"x\",\"y\"],"
    "\"properties\":{"
    "\"x\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":2,\"maxItems\":1000000,"
    "\"description\":\"The x value of each point.\"},"
    "\"y\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"minItems\":2,\"maxItems\":1000000,"
    "\"description\":\"The y value of each point, as many as x.\"},"
    "\"predict\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":1000,"
    "\"description\":\"x values at which to evaluate the fitted line. Optional.\"}}}";

void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret) {
    th_tools_init(ret, 2);
    th_tools_set(ret, 0, "describe_numbers",
                 "Summary statistics of a list of numbers, computed exactly in 64-bit floating point. "
                 "Returns JSON {\"count\", \"sum\", \"mean\", \"median\", \"min\", \"max\", \"range\", "
                 "\"variance\" and \"std_dev\" (population), \"sample_variance\" and \"sample_std_dev\" "
                 "(n-1; null for one number), \"percentiles\": {\"25\": ...}}. Percentiles interpolate "
                 "linearly between the closest ranks (the spreadsheet PERCENTILE.INC method). "
                 "Example: {\"numbers\": [2, 4, 4, 4, 5, 5, 7, 9], \"percentiles\": [50]} gives mean 5 "
                 "and std_dev 2.",
                 DESCRIBE_SCHEMA);
    th_tools_set(ret, 1, "linear_regression",
                 "Fits the least-squares straight line y = slope * x + intercept through points given "
                 "as two equally long lists. Returns JSON {\"n\", \"slope\", \"intercept\", \"r_squared\", "
                 "\"equation\", \"predictions\": [{\"x\", \"y\"}]}. Example: {\"x\": [1, 2, 3], "
                 "\"y\": [3, 5, 7], \"predict\": [10]} gives slope 2, intercept 1 and y 21 at x 10.",
                 REGRESSION_SCHEMA);
}

/* Reads `name` from the arguments as an array of finite numbers into a new array. */
static bool numbers_of(const th_json *args, const char *name, bool required, double **out, size_t *len,
                       exports_toolhost_plugin_tools_call_error_t *err) {
    const th_json *list = th_json_get(args, name);
    *out = NULL;
    *len = 0;
    if (!list) {
        return required ? th_invalid_arguments(err, "`%s` is missing: give a list of numbers", name) : true;
    }
    if (list->kind != TH_JSON_ARRAY) {
        return th_invalid_arguments(err, "`%s` must be a list of numbers", name);
    }
    if (list->len > MAX_NUMBERS) {
        return th_invalid_arguments(err, "`%s` has %zu numbers; at most %d are accepted", name, list->len,
                                    MAX_NUMBERS);
    }
    double *numbers = malloc((list->len ? list->len : 1) * sizeof *numbers);
    if (!numbers) {
        return th_failed(err, "not enough memory for %zu numbers", list->len);
    }
    for (size_t i = 0; i < list->len; i++) {
        if (list->items[i].kind != TH_JSON_NUMBER || !isfinite(list->items[i].number)) {
            free(numbers);
            return th_invalid_arguments(err, "`%s[%zu]` is not a finite number", name, i);
        }
        numbers[i] = list->items[i].number;
    }
    *out = numbers;
    *len = list->len;
    return true;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile (0..100) of sorted numbers, interpolating between closest ranks. */
static double percentile(const double *sorted, size_t n, double p) {
    double rank = p / 100.0 * (double)(n - 1);
    size_t below = (size_t)floor(rank);
    size_t above = below + 1 < n ? below + 1 : below;
    double fraction = rank - (double)below;
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

static bool describe_numbers(const th_json *args, exports_toolhost_plugin_tools_tool_output_t *ret,
                             exports_toolhost_plugin_tools_call_error_t *err) {
    double *numbers, *percentiles;
    size_t n, wanted;
    if (!numbers_of(args, "numbers", true, &numbers, &n, err)) return false;
    if (n == 0) {
        free(numbers);
        return th_invalid_arguments(err, "`numbers` is empty: give at least one number");
    }
    if (!numbers_of(args, "percentiles", false, &percentiles, &wanted, err)) {
        free(numbers);
        return false;
    }
    for (size_t i = 0; i < wanted; i++) {
        if (percentiles[i] < 0 || percentiles[i] > 100) {
            bool result = th_invalid_arguments(err, "`percentiles[%zu]` is %g; percentiles go from 0 to 100", i,
                                               percentiles[i]);
            free(numbers);
            free(percentiles);
            return result;
        }
    }

    double sum = 0, mean = 0, m2 = 0;
    for (size_t i = 0; i < n; i++) {
        sum += numbers[i];
        /* Welford's update: stable, and the mean never overflows on its own. */
        double delta = numbers[i] - mean;
        mean += delta / (double)(i + 1);
        m2 += delta * (numbers[i] - mean);
    }
    if (!isfinite(sum) || !isfinite(m2)) {
        free(numbers);
        free(percentiles);
        return th_failed(err, "the numbers are too large: their %s overflows 64-bit floating point "
                              "(about 1.8e308); scale them down, e.g. divide by 1e6, and scale the results back",
                         isfinite(sum) ? "spread" : "sum");
    }
    qsort(numbers, n, sizeof *numbers, compare_doubles);

    th_buf out = {0};
    th_buf_puts(&out, "{\"count\":");
    th_buf_json_number(&out, (double)n);
    th_buf_puts(&out, ",\"sum\":");
    th_buf_json_number(&out, sum);
    th_buf_puts(&out, ",\"mean\":");
    th_buf_json_number(&out, mean);
    th_buf_puts(&out, ",\"median\":");
    th_buf_json_number(&out, percentile(numbers, n, 50));
    th_buf_puts(&out, ",\"min\":");
    th_buf_json_number(&out, numbers[0]);
    th_buf_puts(&out, ",\"max\":");
    th_buf_json_number(&out, numbers[n - 1]);
    th_buf_puts(&out, ",\"range\":");
    th_buf_json_number(&out, numbers[n - 1] - numbers[0]);
    th_buf_puts(&out, ",\"variance\":");
    th_buf_json_number(&out, m2 / (double)n);
    th_buf_puts(&out, ",\"std_dev\":");
    th_buf_json_number(&out, sqrt(m2 / (double)n));
    th_buf_puts(&out, ",\"sample_variance\":");
    th_buf_json_number(&out, n > 1 ? m2 / (double)(n - 1) : NAN);
    th_buf_puts(&out, ",\"sample_std_dev\":");
    th_buf_json_number(&out, n > 1 ? sqrt(m2 / (double)(n - 1)) : NAN);
    th_buf_puts(&out, ",\"percentiles\":{");
    for (size_t i = 0; i < wanted; i++) {
        char key[32];
        snprintf(key, sizeof key, "%g", percentiles[i]);
        th_buf_printf(&out, "%s\"%s\":", i ? "," : "", key);
        th_buf_json_number(&out, percentile(numbers, n, percentiles[i]));
    }
    th_buf_puts(&out, "}}");

    char count[24];
    snprintf(count, sizeof count, "%zu", n);
    th_log(TH_DEBUG, "described numbers", "count", count, NULL);
    free(numbers);
    free(percentiles);
    return th_ok_json_buf(ret, &out);
}

static bool linear_regression(const th_json *args, exports_toolhost_plugin_tools_tool_output_t *ret,
                              exports_toolhost_plugin_tools_call_error_t *err) {
    double *x = NULL, *y = NULL, *predict = NULL;
    size_t nx, ny, np;
    bool ok = false;
    if (!numbers_of(args, "x", true, &x, &nx, err) || !numbers_of(args, "y", true, &y, &ny, err) ||
        !numbers_of(args, "predict", false, &predict, &np, err)) {
        goto done;
    }
    if (nx != ny) {
        th_invalid_arguments(err, "`x` has %zu values but `y` has %zu: give one y for each x", nx, ny);
        goto done;
    }
    if (nx < 2) {
        th_invalid_arguments(err, "a line needs at least 2 points; got %zu", nx);
        goto done;
    }
    double mean_x = 0, mean_y = 0;
    for (size_t i = 0; i < nx; i++) {
        mean_x += (x[i] - mean_x) / (double)(i + 1);
        mean_y += (y[i] - mean_y) / (double)(i + 1);
    }
    double sxx = 0, sxy = 0, syy = 0;
    for (size_t i = 0; i < nx; i++) {
        double dx = x[i] - mean_x, dy = y[i] - mean_y;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (!isfinite(sxx) || !isfinite(sxy) || !isfinite(syy)) {
        th_failed(err, "the values are too large: their squares overflow 64-bit floating point; scale them down");
        goto done;
    }
    if (sxx == 0) {
        th_failed(err, "every x is %g, so the points lie on a vertical line whose slope is undefined; "
                       "give points with at least two different x values", x[0]);
        goto done;
    }
    double slope = sxy / sxx;
    double intercept = mean_y - slope * mean_x;
    /* All y equal: the horizontal line fits exactly. */
    double r_squared = syy == 0 ? 1.0 : (sxy * sxy) / (sxx * syy);

    th_buf out = {0};
    th_buf_puts(&out, "{\"n\":");
    th_buf_json_number(&out, (double)nx);
    th_buf_puts(&out, ",\"slope\":");
    th_buf_json_number(&out, slope);
    th_buf_puts(&out, ",\"intercept\":");
    th_buf_json_number(&out, intercept);
    th_buf_puts(&out, ",\"r_squared\":");
    th_buf_json_number(&out, r_squared);
    char equation[96];
    snprintf(equation, sizeof equation, "y = %.6g * x %s %.6g", slope, intercept < 0 ? "-" : "+", fabs(intercept));
    th_buf_puts(&out, ",\"equation\":");
    th_buf_json_string(&out, equation);
    th_buf_puts(&out, ",\"predictions\":[");
    for (size_t i = 0; i < np; i++) {
        th_buf_puts(&out, i ? ",{\"x\":" : "{\"x\":");
        th_buf_json_number(&out, predict[i]);
        th_buf_puts(&out, ",\"y\":");
        th_buf_json_number(&out, slope * predict[i] + intercept);
        th_buf_puts(&out, "}");
    }
    th_buf_puts(&out, "]}");
    th_log(TH_DEBUG, "fitted a line", "equation", equation, NULL);
    ok = th_ok_json_buf(ret, &out);
done:
    free(x);
    free(y);
    free(predict);
    return ok;
}

bool exports_toolhost_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments,
                                             exports_toolhost_plugin_tools_tool_output_t *ret,
                                             exports_toolhost_plugin_tools_call_error_t *err) {
    char error[128];
    bool ok;
    th_json *args = th_json_parse((const char *)arguments->ptr, arguments->len, error, sizeof error);
    if (!args) {
        ok = th_invalid_arguments(err, "the arguments are not valid JSON: %s", error);
    } else if (args->kind != TH_JSON_OBJECT) {
        ok = th_invalid_arguments(err, "the arguments must be a JSON object");
    } else if (name->len == strlen("describe_numbers") && memcmp(name->ptr, "describe_numbers", name->len) == 0) {
        ok = describe_numbers(args, ret, err);
    } else if (name->len == strlen("linear_regression") && memcmp(name->ptr, "linear_regression", name->len) == 0) {
        ok = linear_regression(args, ret, err);
    } else {
        ok = th_failed(err, "this plugin has no tool named `%.*s`", (int)name->len, (const char *)name->ptr);
    }
    th_json_free(args);
    plugin_string_free(name);
    plugin_string_free(arguments);
    return ok;
}
