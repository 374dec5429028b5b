//! `calc`: example plugin that evaluates arithmetic expressions, so that a
//! model does not have to do arithmetic in its head.
//!
//! One tool, `calculate`. The parser and evaluator live in [`expr`]; this file
//! only declares the arguments and shapes the result.

mod expr;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::serde_json;
use toolhost_sdk::{Json, Tool, ToolError, register_tools};

register_tools![
    Tool::new(
        "calculate",
        "Evaluates an arithmetic expression exactly as written and returns JSON \
     {\"expression\": ..., \"result\": number}. Supports + - * / % (remainder) and ^ or ** \
     (power, right-associative; -2^2 is -4), unary minus, parentheses, numbers like 1.5, \
     1e-3 and 1_000, the constants pi, e and tau, and the functions sqrt, cbrt, abs, sign, \
     exp, ln, log10, log2, log(x, base), sin, cos, tan, asin, acos, atan, atan2(y, x), sinh, \
     cosh, tanh (angles in radians; use radians(deg) and degrees(rad) to convert), floor, \
     ceil, round(x) or round(x, digits), trunc, min(...), max(...), pow(x, y), hypot(x, y) \
     and factorial(n). Multiplication must be written out: 2*pi, not 2pi. Other values are \
     passed in `variables`. Uses 64-bit floating point, so 0.1 + 0.2 gives \
     0.30000000000000004. Example: {\"expression\": \"2 * (3 + x) ^ 2\", \"variables\": \
     {\"x\": 1}} returns {\"expression\": \"2 * (3 + x) ^ 2\", \"result\": 32}. Errors name \
     the column of the problem, e.g. \"unexpected `)` at column 8\".",
        calculate,
    )
    .title("Calculator")
    .read_only()
    .idempotent()
];

/// Arguments of `calculate`.
#[derive(Deserialize, JsonSchema)]
struct CalculateArgs {
    /// The expression to evaluate, e.g. "sqrt(3^2 + 4^2) * 10 % 7" or
    /// "round(price * (1 + tax), 2)". Multiplication needs an explicit `*`.
    expression: String,
    /// Values for names used in the expression, e.g. {"price": 19.99, "tax": 0.2}. A
    /// name starts with a letter or `_` followed by letters, digits or `_`; a variable
    /// named pi, e or tau takes the place of that constant. Optional.
    #[serde(default)]
    variables: BTreeMap<String, f64>,
}

/// What `calculate` returns.
#[derive(Serialize)]
struct Calculation {
    expression: String,
    result: serde_json::Value,
}

fn calculate(args: CalculateArgs) -> Result<Json<Calculation>, ToolError> {
    for name in args.variables.keys() {
        expr::check_variable_name(name).map_err(ToolError::invalid_arguments)?;
    }
    let result = expr::evaluate(&args.expression, &args.variables).map_err(|err| {
        toolhost_sdk::log::debug_with(
            "expression rejected",
            &[("expression", &args.expression), ("error", &err.message)],
        );
        ToolError::invalid_arguments(err.message)
    })?;
    Ok(Json(Calculation { expression: args.expression, result: number(result) }))
}

/// `value` as a JSON number: whole numbers that an `f64` holds exactly are
/// written without a fraction (`32`, not `32.0`).
fn number(value: f64) -> serde_json::Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if value.fract() == 0.0 && value.abs() <= EXACT {
        serde_json::Value::from(value as i64)
    } else {
        serde_json::Value::from(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_described_example() {
        let args = CalculateArgs {
            expression: "2 * (3 + x) ^ 2".to_owned(),
            variables: BTreeMap::from([("x".to_owned(), 1.0)]),
        };
        let output: toolhost_sdk::Output = calculate(args).unwrap().into();
        assert_eq!(
            output,
            toolhost_sdk::Output::json_text(r#"{"expression":"2 * (3 + x) ^ 2","result":32}"#.to_owned())
        );
    }

    #[test]
    fn rejects_bad_variable_names_as_invalid_arguments() {
        let args =
            CalculateArgs { expression: "1".to_owned(), variables: BTreeMap::from([("two words".to_owned(), 1.0)]) };
        assert!(calculate(args).is_err_and(|err| err.is_invalid_arguments()));
    }

    #[test]
    fn accepts_whole_results_as_integers() {
        assert_eq!(number(32.0).to_string(), "32");
        assert_eq!(number(-0.0).to_string(), "0");
        assert_eq!(number(0.5).to_string(), "0.5");
        assert_eq!(number(1e300).to_string(), "1e+300");
    }
}
