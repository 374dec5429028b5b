//! The arithmetic expression evaluator behind `calculate`: a tokenizer and a
//! recursive-descent parser that evaluates as it parses, free of SDK types so
//! that it is unit-tested natively.
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! expr    = term (("+" | "-") term)*
//! term    = unary (("*" | "/" | "%") unary)*
//! unary   = ("-" | "+") unary | power
//! power   = primary ("^" unary)?          right-associative; -2^2 is -(2^2)
//! primary = number | name | name "(" expr ("," expr)* ")" | "(" expr ")"
//! ```
//!
//! Left-associative chains are folded in a loop, so only nesting (parentheses,
//! signs, powers, function arguments) recurses, and that is capped at
//! [`MAX_DEPTH`]. Syntax errors are reported before arithmetic errors: a
//! division by zero is remembered and reported only once the whole expression
//! has parsed.

use std::collections::BTreeMap;
use std::fmt;

/// How deeply parentheses, signs, powers and function calls may nest.
pub const MAX_DEPTH: usize = 100;

/// Why an expression could not be evaluated. Always the caller's fault: the
/// message says what is wrong, where, and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct CalcError {
    /// 1-based column (in characters) of the problem; 0 when it has no place.
    pub column: usize,
    /// The whole message, column included.
    pub message: String,
}

impl fmt::Display for CalcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl CalcError {
    fn at(index: usize, what: impl fmt::Display) -> Self {
        let column = index + 1;
        CalcError { column, message: format!("{what} at column {column}") }
    }

    fn at_with_hint(index: usize, what: impl fmt::Display, hint: impl fmt::Display) -> Self {
        let column = index + 1;
        CalcError { column, message: format!("{what} at column {column}; {hint}") }
    }
}

/// Checks that `name` can be used as a variable in an expression.
pub fn check_variable_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "variable name `{name}` cannot be used in an expression: a name starts with a \
             letter or `_` followed by letters, digits or `_`, e.g. `price` or `x_1`"
        ))
    }
}

/// Evaluates `source` with `variables` (which shadow the constants pi, e, tau).
pub fn evaluate(source: &str, variables: &BTreeMap<String, f64>) -> Result<f64, CalcError> {
    let chars: Vec<char> = source.chars().collect();
    let tokens = tokenize(&chars)?;
    if tokens.len() == 1 {
        return Err(CalcError {
            column: 0,
            message: "the expression is empty; write one such as `2 * (3 + 4)`".to_owned(),
        });
    }
    let mut parser = Parser { chars: &chars, tokens, pos: 0, depth: 0, variables, math_error: None };
    let value = parser.expr()?;
    let next = parser.peek();
    if next.kind != Kind::End {
        return Err(parser.after_value(next, Context::Top));
    }
    match parser.math_error {
        Some(err) => Err(err),
        None => Ok(value.v),
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number(f64),
    Name,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Open,
    Close,
    Comma,
    End,
}

/// A token and the characters `start..end` it came from.
#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
}

fn tokenize(chars: &[char]) -> Result<Vec<Token>, CalcError> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let start = i;
        let next = chars.get(i + 1).copied();
        let kind = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '0'..='9' | '.' => {
                let (value, end) = number(chars, i)?;
                i = end;
                Kind::Number(value)
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == 'π' => {
                while chars.get(i).is_some_and(|&c| c.is_ascii_alphanumeric() || c == '_' || c == 'π') {
                    i += 1;
                }
                Kind::Name
            }
            '*' if next == Some('*') => {
                i += 2;
                Kind::Caret
            }
            _ => {
                i += 1;
                match c {
                    '+' => Kind::Plus,
                    '-' | '−' => Kind::Minus,
                    '*' | '×' | '·' => Kind::Star,
                    '/' | '÷' => Kind::Slash,
                    '%' => Kind::Percent,
                    '^' => Kind::Caret,
                    '(' => Kind::Open,
                    ')' => Kind::Close,
                    ',' => Kind::Comma,
                    _ => {
                        return Err(CalcError::at_with_hint(
                            start,
                            format_args!("unexpected character `{c}`"),
                            "use numbers, names, + - * / % ^, parentheses and commas",
                        ));
                    }
                }
            }
        };
        tokens.push(Token { kind, start, end: i });
    }
    tokens.push(Token { kind: Kind::End, start: chars.len(), end: chars.len() });
    Ok(tokens)
}

/// Reads a number starting at `start`: digits with single `_` between them,
/// an optional fraction and an optional exponent. Returns it and where it ends.
fn number(chars: &[char], start: usize) -> Result<(f64, usize), CalcError> {
    let at = |i: usize| chars.get(i).copied();
    let is_digit = |i: usize| at(i).is_some_and(|c| c.is_ascii_digit());
    let mut text = String::new();
    let mut i = start;
    let digits = |i: &mut usize, text: &mut String| -> Result<usize, CalcError> {
        let mut count = 0;
        while let Some(c) = at(*i) {
            if c.is_ascii_digit() {
                text.push(c);
                count += 1;
            } else if c == '_' {
                if !(count > 0 && is_digit(*i + 1)) {
                    return Err(CalcError::at_with_hint(
                        *i,
                        "misplaced `_` in a number",
                        "`_` may only stand between two digits, as in `1_000_000`",
                    ));
                }
            } else {
                break;
            }
            *i += 1;
        }
        Ok(count)
    };
    let mut count = digits(&mut i, &mut text)?;
    if at(i) == Some('.') {
        text.push('.');
        i += 1;
        count += digits(&mut i, &mut text)?;
    }
    if count == 0 {
        return Err(CalcError::at_with_hint(start, "a lone `.` is not a number", "write a number such as `0.5`"));
    }
    if matches!(at(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(at(i + 1), Some('+' | '-')));
        // `2e` followed by no digit is not an exponent: the `e` is left to be
        // read as a name (and then reported as a missing operator).
        if is_digit(i + 1 + sign) {
            text.push('e');
            if sign == 1 {
                text.extend(at(i + 1));
            }
            i += 1 + sign;
            digits(&mut i, &mut text)?;
        }
    }
    if at(i) == Some('.') {
        return Err(CalcError::at(i, "a number has a second `.`"));
    }
    let value: f64 = text.parse().map_err(|_| CalcError::at(start, format_args!("`{text}` is not a valid number")))?;
    if !value.is_finite() {
        return Err(CalcError::at_with_hint(start, "number too large", "numbers must stay below about 1.8e308"));
    }
    Ok((value, i))
}

/// An evaluated sub-expression and the characters `start..end` it spans.
#[derive(Debug, Clone, Copy)]
struct Val {
    v: f64,
    start: usize,
    end: usize,
}

/// Where a complete value stands, for the error when something odd follows it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Context {
    Top,
    Parenthesis,
    Arguments,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

struct Parser<'a> {
    chars: &'a [char],
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    variables: &'a BTreeMap<String, f64>,
    /// The first arithmetic error, reported if the expression parses.
    math_error: Option<CalcError>,
}

const CONSTANTS: &[(&str, f64)] = &[
    ("pi", std::f64::consts::PI),
    ("π", std::f64::consts::PI),
    ("e", std::f64::consts::E),
    ("tau", std::f64::consts::TAU),
];

const FUNCTIONS: &str = "sqrt, cbrt, abs, sign, exp, ln, log10, log2, log(x, base), sin, cos, \
    tan, asin, acos, atan, atan2(y, x), sinh, cosh, tanh, floor, ceil, round(x) or \
    round(x, digits), trunc, min, max, pow(x, y), hypot(x, y), factorial(n), degrees, radians";

impl Parser<'_> {
    fn peek(&self) -> Token {
        // `tokens` always ends with `End` and `pos` never moves past it.
        self.tokens.get(self.pos).copied().unwrap_or(Token {
            kind: Kind::End,
            start: self.chars.len(),
            end: self.chars.len(),
        })
    }

    fn bump(&mut self) -> Token {
        let token = self.peek();
        if token.kind != Kind::End {
            self.pos += 1;
        }
        token
    }

    fn text(&self, start: usize, end: usize) -> String {
        self.chars.get(start..end).unwrap_or_default().iter().collect()
    }

    /// Runs `f` one nesting level deeper, failing past [`MAX_DEPTH`].
    fn nested<T>(&mut self, at: usize, f: impl FnOnce(&mut Self) -> Result<T, CalcError>) -> Result<T, CalcError> {
        if self.depth >= MAX_DEPTH {
            return Err(CalcError::at_with_hint(
                at,
                "the expression nests too deeply",
                format_args!(
                    "at most {MAX_DEPTH} levels of parentheses, signs, powers and function \
                     calls are allowed; simplify it"
                ),
            ));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// The error for `token` where a number, a name or `(` should start.
    fn unexpected(&self, token: Token, expected: &str) -> CalcError {
        if token.kind == Kind::End {
            return CalcError::at_with_hint(
                token.start,
                "the expression ends too early",
                format_args!("expected {expected} there"),
            );
        }
        let text = self.text(token.start, token.end);
        CalcError::at_with_hint(
            token.start,
            format_args!("unexpected `{text}`"),
            format_args!("expected {expected} there"),
        )
    }

    /// The error for `token` right after a complete value, where an operator
    /// or whatever `context` allows should follow.
    fn after_value(&self, token: Token, context: Context) -> CalcError {
        let text = self.text(token.start, token.end);
        match (token.kind, context) {
            (Kind::Close, Context::Top) => {
                CalcError::at_with_hint(token.start, "unexpected `)`", "there is no `(` for it to close")
            }
            (Kind::Number(_) | Kind::Name | Kind::Open, Context::Arguments) => CalcError::at_with_hint(
                token.start,
                format_args!("unexpected `{text}`"),
                "a `,` between arguments or an operator is missing before it",
            ),
            (Kind::Number(_) | Kind::Name | Kind::Open, _) => CalcError::at_with_hint(
                token.start,
                format_args!("unexpected `{text}`"),
                "an operator is missing before it; write `*` to multiply, e.g. `2*pi` or \
                 `3*(1+2)`",
            ),
            (_, Context::Top) => self.unexpected(token, "an operator or the end of the expression"),
            (_, Context::Parenthesis) => self.unexpected(token, "an operator or `)`"),
            (_, Context::Arguments) => self.unexpected(token, "an operator, `,` or `)`"),
        }
    }

    fn expr(&mut self) -> Result<Val, CalcError> {
        let mut left = self.term()?;
        loop {
            let token = self.peek();
            let op = match token.kind {
                Kind::Plus => Op::Add,
                Kind::Minus => Op::Sub,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.term()?;
            left = self.binary(op, token.start, left, right);
        }
    }

    fn term(&mut self) -> Result<Val, CalcError> {
        let mut left = self.unary()?;
        loop {
            let token = self.peek();
            let op = match token.kind {
                Kind::Star => Op::Mul,
                Kind::Slash => Op::Div,
                Kind::Percent => Op::Rem,
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            left = self.binary(op, token.start, left, right);
        }
    }

    fn unary(&mut self) -> Result<Val, CalcError> {
        let token = self.peek();
        match token.kind {
            Kind::Minus | Kind::Plus => {
                self.bump();
                let operand = self.nested(token.start, Self::unary)?;
                let v = if token.kind == Kind::Minus { -operand.v } else { operand.v };
                Ok(Val { v, start: token.start, end: operand.end })
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<Val, CalcError> {
        let base = self.primary()?;
        let token = self.peek();
        if token.kind != Kind::Caret {
            return Ok(base);
        }
        self.bump();
        let exponent = self.nested(token.start, Self::unary)?;
        Ok(self.binary(Op::Pow, token.start, base, exponent))
    }

    fn primary(&mut self) -> Result<Val, CalcError> {
        let token = self.bump();
        match token.kind {
            Kind::Number(v) => Ok(Val { v, start: token.start, end: token.end }),
            Kind::Name if self.peek().kind == Kind::Open => self.call(token),
            Kind::Name => self.name(token),
            Kind::Open => {
                let inner = self.nested(token.start, Self::expr)?;
                let close = self.peek();
                match close.kind {
                    Kind::Close => {
                        self.bump();
                        Ok(Val { v: inner.v, start: token.start, end: close.end })
                    }
                    Kind::End => Err(CalcError::at_with_hint(token.start, "this `(` is never closed", "add a `)`")),
                    _ => Err(self.after_value(close, Context::Parenthesis)),
                }
            }
            _ => Err(self.unexpected(token, "a number, a name or `(`")),
        }
    }

    fn name(&mut self, token: Token) -> Result<Val, CalcError> {
        let name = self.text(token.start, token.end);
        let value =
            self.variables.get(&name).copied().or_else(|| CONSTANTS.iter().find(|(n, _)| *n == name).map(|&(_, v)| v));
        match value {
            Some(v) => Ok(Val { v, start: token.start, end: token.end }),
            None if function_arity(&name).is_some() => Err(CalcError::at_with_hint(
                token.start,
                format_args!("`{name}` is a function"),
                format_args!("call it with parentheses, e.g. `{name}(2)`"),
            )),
            None => Err(CalcError::at_with_hint(
                token.start,
                format_args!("unknown name `{name}`"),
                "the constants are pi, e and tau; give other values in `variables`, \
                 e.g. {\"x\": 3}",
            )),
        }
    }

    fn call(&mut self, name_token: Token) -> Result<Val, CalcError> {
        let name = self.text(name_token.start, name_token.end);
        let Some((min, max)) = function_arity(&name) else {
            let hint = if self.variables.contains_key(&name) {
                format!("`{name}` is a variable; write `{name}*(...)` to multiply")
            } else {
                format!("the functions are {FUNCTIONS}")
            };
            return Err(CalcError::at_with_hint(name_token.start, format_args!("unknown function `{name}`"), hint));
        };
        let open = self.bump();
        let mut args = Vec::new();
        self.nested(open.start, |parser| {
            if parser.peek().kind == Kind::Close {
                return Ok(());
            }
            loop {
                args.push(parser.expr()?);
                let token = parser.peek();
                match token.kind {
                    Kind::Comma => {
                        parser.bump();
                    }
                    Kind::Close => return Ok(()),
                    Kind::End => {
                        return Err(CalcError::at_with_hint(
                            open.start,
                            format_args!("the `(` of `{name}(` is never closed"),
                            "add a `)`",
                        ));
                    }
                    _ => return Err(parser.after_value(token, Context::Arguments)),
                }
            }
        })?;
        let close = self.bump();
        if args.len() < min || args.len() > max {
            let expected = match (min, max) {
                (1, 1) => "exactly 1 argument".to_owned(),
                (min, max) if min == max => format!("exactly {min} arguments"),
                (1, usize::MAX) => "at least 1 argument".to_owned(),
                (min, usize::MAX) => format!("at least {min} arguments"),
                (min, max) => format!("{min} to {max} arguments"),
            };
            let hint = if name == "log" {
                "write log(x, base), or ln(x) for the natural and log10(x) for the common logarithm".to_owned()
            } else {
                format!("it takes {expected}")
            };
            return Err(CalcError::at_with_hint(
                name_token.start,
                format_args!("`{name}` called with {} argument{}", args.len(), if args.len() == 1 { "" } else { "s" }),
                hint,
            ));
        }
        let span = |v| Val { v, start: name_token.start, end: close.end };
        let values: Vec<f64> = args.iter().map(|arg| arg.v).collect();
        if values.iter().any(|v| !v.is_finite()) {
            // An earlier arithmetic error, already recorded.
            return Ok(span(f64::NAN));
        }
        match apply(&name, &values) {
            Ok(v) if v.is_finite() => Ok(span(v)),
            Ok(_) => {
                let call = self.text(name_token.start, close.end);
                self.math_failed(CalcError::at_with_hint(
                    name_token.start,
                    format_args!("`{call}` overflows"),
                    "the result is larger than about 1.8e308",
                ));
                Ok(span(f64::NAN))
            }
            Err(why) => {
                let call = self.text(name_token.start, close.end);
                self.math_failed(CalcError::at_with_hint(
                    name_token.start,
                    format_args!("`{call}` has no real result"),
                    why,
                ));
                Ok(span(f64::NAN))
            }
        }
    }

    fn math_failed(&mut self, err: CalcError) {
        self.math_error.get_or_insert(err);
    }

    fn binary(&mut self, op: Op, at: usize, left: Val, right: Val) -> Val {
        let (l, r) = (left.v, right.v);
        let v = match op {
            Op::Add => l + r,
            Op::Sub => l - r,
            Op::Mul => l * r,
            Op::Div => l / r,
            Op::Rem => l % r,
            Op::Pow => l.powf(r),
        };
        let val = Val { v, start: left.start, end: right.end };
        if v.is_finite() || !l.is_finite() || !r.is_finite() {
            return val;
        }
        let right_text = self.text(right.start, right.end);
        let err = match op {
            Op::Div if r == 0.0 => {
                CalcError::at_with_hint(at, "division by zero", format_args!("the divisor `{right_text}` is 0"))
            }
            Op::Rem if r == 0.0 => {
                CalcError::at_with_hint(at, "remainder by zero", format_args!("the divisor `{right_text}` is 0"))
            }
            Op::Pow if l == 0.0 && r < 0.0 => {
                CalcError::at_with_hint(at, "0 raised to a negative power", "that divides by zero")
            }
            Op::Pow if l < 0.0 && r.fract() != 0.0 => CalcError::at_with_hint(
                at,
                "a negative number raised to a fractional power",
                format_args!(
                    "({l})^{r} is not a real number; for an odd root of a negative number use \
                     cbrt(x) or -(abs(x)^(1/n))"
                ),
            ),
            _ => {
                let whole = self.text(left.start, right.end);
                CalcError::at_with_hint(
                    at,
                    format_args!("`{whole}` overflows"),
                    "the result is larger than about 1.8e308",
                )
            }
        };
        self.math_failed(err);
        Val { v: f64::NAN, ..val }
    }
}

/// The number of arguments `name` takes, if it is a function.
fn function_arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "sqrt" | "cbrt" | "abs" | "sign" | "exp" | "ln" | "log10" | "log2" | "sin" | "cos" | "tan" | "asin"
        | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "floor" | "ceil" | "trunc" | "factorial" | "degrees"
        | "radians" => (1, 1),
        "round" => (1, 2),
        "log" | "atan2" | "pow" | "hypot" => (2, 2),
        "min" | "max" => (1, usize::MAX),
        _ => return None,
    })
}

/// Applies function `name` to `args`, whose number [`function_arity`] checked
/// and which are all finite. `Err` says why there is no real result.
fn apply(name: &str, args: &[f64]) -> Result<f64, String> {
    let x = args.first().copied().unwrap_or(f64::NAN);
    let y = args.get(1).copied().unwrap_or(f64::NAN);
    let positive = |what: &str| {
        if x > 0.0 { Ok(()) } else { Err(format!("{what} is defined only for numbers greater than 0, got {x}")) }
    };
    Ok(match name {
        "sqrt" if x < 0.0 => {
            return Err(format!("the square root of a negative number ({x}) is not real"));
        }
        "sqrt" => x.sqrt(),
        "cbrt" => x.cbrt(),
        "abs" => x.abs(),
        "sign" => {
            if x == 0.0 {
                0.0
            } else {
                x.signum()
            }
        }
        "exp" => x.exp(),
        "ln" => {
            positive("ln")?;
            x.ln()
        }
        "log10" => {
            positive("log10")?;
            x.log10()
        }
        "log2" => {
            positive("log2")?;
            x.log2()
        }
        "log" => {
            positive("log")?;
            if y <= 0.0 || y == 1.0 {
                return Err(format!("the base of log must be greater than 0 and not 1, got {y}"));
            }
            x.ln() / y.ln()
        }
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" | "acos" if !(-1.0..=1.0).contains(&x) => {
            return Err(format!("{name} is defined only from -1 to 1, got {x}"));
        }
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "atan2" => x.atan2(y),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "trunc" => x.trunc(),
        "round" if args.len() == 1 => x.round(),
        "round" => {
            if y.fract() != 0.0 || !(-15.0..=15.0).contains(&y) {
                return Err(format!("the digits of round(x, digits) must be a whole number from -15 to 15, got {y}"));
            }
            let scale = 10f64.powi(y as i32);
            let scaled = (x * scale).round() / scale;
            // Very large x lose nothing to rounding but may overflow when scaled.
            if scaled.is_finite() { scaled } else { x }
        }
        "min" => args.iter().copied().fold(f64::INFINITY, f64::min),
        "max" => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        "pow" if x == 0.0 && y < 0.0 => {
            return Err("0 raised to a negative power divides by zero".to_owned());
        }
        "pow" if x < 0.0 && y.fract() != 0.0 => {
            return Err(format!("{x} raised to the fractional power {y} is not real"));
        }
        "pow" => x.powf(y),
        "hypot" => x.hypot(y),
        "factorial" => {
            if x.fract() != 0.0 || x < 0.0 {
                return Err(format!("factorial is defined only for whole numbers from 0, got {x}"));
            }
            if x > 170.0 {
                // 171! is past the largest f64: report it as an overflow.
                return Ok(f64::INFINITY);
            }
            (1..=x as u32).fold(1.0, |product, k| product * f64::from(k))
        }
        "degrees" => x.to_degrees(),
        "radians" => x.to_radians(),
        _ => return Err(format!("`{name}` is not a function")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(source: &str) -> Result<f64, CalcError> {
        evaluate(source, &BTreeMap::new())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn accepts_arithmetic() {
        let cases: &[(&str, f64)] = &[
            ("1 + 2", 3.0),
            ("2 * (3 + 4)", 14.0),
            ("7 - 2 - 1", 4.0),
            ("8 / 2 / 2", 2.0),
            ("7 % 3", 1.0),
            ("-7 % 3", -1.0),
            ("2 ^ 3 ^ 2", 512.0),
            ("2 ** 10", 1024.0),
            ("-2 ^ 2", -4.0),
            ("(-2) ^ 2", 4.0),
            ("2 ^ -1", 0.5),
            ("--3", 3.0),
            ("+3", 3.0),
            ("2 * -3", -6.0),
            ("1.5e3", 1500.0),
            ("1e-3", 0.001),
            ("1E+2", 100.0),
            ("1_000_000 / 1_000", 1000.0),
            (".5 + 1.", 1.5),
            ("6 × 7 ÷ 2 − 1", 20.0),
            ("  42  ", 42.0),
        ];
        for &(source, expected) in cases {
            let got = eval(source);
            assert!(matches!(got, Ok(v) if close(v, expected)), "{source} gave {got:?}, expected {expected}");
        }
    }

    #[test]
    fn accepts_functions_and_constants() {
        let cases: &[(&str, f64)] = &[
            ("sqrt(16)", 4.0),
            ("abs(-3)", 3.0),
            ("ln(e)", 1.0),
            ("log10(1000)", 3.0),
            ("log2(8)", 3.0),
            ("log(8, 2)", 3.0),
            ("exp(0)", 1.0),
            ("sin(pi / 2)", 1.0),
            ("cos(0)", 1.0),
            ("tan(0)", 0.0),
            ("asin(1)", std::f64::consts::FRAC_PI_2),
            ("acos(1)", 0.0),
            ("atan(1) * 4", std::f64::consts::PI),
            ("atan2(1, 1)", std::f64::consts::FRAC_PI_4),
            ("floor(-1.5)", -2.0),
            ("ceil(1.2)", 2.0),
            ("round(2.5)", 3.0),
            ("round(2.71828, 2)", 2.72),
            ("round(1234, -2)", 1200.0),
            ("trunc(-1.7)", -1.0),
            ("min(3, 1, 2)", 1.0),
            ("max(3, 1, 2)", 3.0),
            ("max(5)", 5.0),
            ("pow(2, 10)", 1024.0),
            ("hypot(3, 4)", 5.0),
            ("factorial(5)", 120.0),
            ("factorial(0)", 1.0),
            ("cbrt(-27)", -3.0),
            ("sign(-4)", -1.0),
            ("degrees(pi)", 180.0),
            ("sin(radians(30))", 0.5),
            ("tau / 2", std::f64::consts::PI),
            ("π", std::f64::consts::PI),
            ("sqrt(sqrt(16)) + max(1, min(4, 9))", 6.0),
        ];
        for &(source, expected) in cases {
            let got = eval(source);
            assert!(matches!(got, Ok(v) if close(v, expected)), "{source} gave {got:?}, expected {expected}");
        }
    }

    #[test]
    fn accepts_variables_that_shadow_constants() {
        let variables = BTreeMap::from([("x".to_owned(), 3.0), ("e".to_owned(), 10.0)]);
        assert_eq!(evaluate("x^2 + e", &variables), Ok(19.0));
    }

    #[test]
    fn rejects_syntax_errors_with_their_column() {
        let cases: &[(&str, usize, &str)] = &[
            ("(1 + 2))", 8, "unexpected `)` at column 8"),
            ("1 + (2 * 3", 5, "this `(` is never closed at column 5"),
            ("1 +", 4, "the expression ends too early at column 4"),
            ("2 3", 3, "unexpected `3` at column 3; an operator is missing"),
            ("2x", 2, "unexpected `x` at column 2"),
            ("2(3)", 2, "unexpected `(` at column 2"),
            ("1 $ 2", 3, "unexpected character `$` at column 3"),
            ("1__0", 2, "misplaced `_`"),
            ("1_", 2, "misplaced `_`"),
            ("1.2.3", 4, "second `.`"),
            (".", 1, "a lone `.`"),
            ("1e999", 1, "number too large"),
            ("foo + 1", 1, "unknown name `foo`"),
            ("sqr(4)", 1, "unknown function `sqr`"),
            ("sqrt + 1", 1, "`sqrt` is a function"),
            ("sqrt(1, 2)", 1, "`sqrt` called with 2 arguments"),
            ("min()", 1, "`min` called with 0 arguments"),
            ("log(8)", 1, "write log(x, base)"),
            ("max(1, 2", 4, "the `(` of `max(` is never closed"),
            ("max(1 2)", 7, "unexpected `2` at column 7; a `,` between arguments"),
            ("(1 2)", 4, "unexpected `2` at column 4; an operator is missing"),
            ("* 2", 1, "unexpected `*` at column 1"),
            ("()", 2, "unexpected `)` at column 2"),
        ];
        for &(source, column, message) in cases {
            match eval(source) {
                Err(err) => {
                    assert_eq!(err.column, column, "{source}: {}", err.message);
                    assert!(err.message.contains(message), "{source}: {}", err.message);
                }
                Ok(v) => panic!("{source} evaluated to {v}"),
            }
        }
    }

    #[test]
    fn rejects_empty_expressions() {
        for source in ["", "   "] {
            assert!(eval(source).is_err_and(|err| err.message.contains("empty")));
        }
    }

    #[test]
    fn rejects_arithmetic_without_a_finite_result() {
        let cases: &[(&str, usize, &str)] = &[
            ("1 / (2 - 2)", 3, "division by zero at column 3; the divisor `(2 - 2)` is 0"),
            ("5 % 0", 3, "remainder by zero"),
            ("0 ^ -1", 3, "0 raised to a negative power"),
            ("(-8) ^ (1/3)", 6, "fractional power"),
            ("10 ^ 400", 4, "`10 ^ 400` overflows"),
            ("1e308 * 10", 7, "overflows"),
            ("sqrt(-4)", 1, "square root of a negative number (-4)"),
            ("ln(0)", 1, "greater than 0, got 0"),
            ("asin(2)", 1, "from -1 to 1"),
            ("exp(1000)", 1, "`exp(1000)` overflows"),
            ("factorial(2.5)", 1, "whole numbers"),
            ("factorial(171)", 1, "overflows"),
            ("round(1, 0.5)", 1, "digits"),
            ("log(8, 1)", 1, "base of log"),
            // The first arithmetic error is the one reported.
            ("1/0 + sqrt(-1)", 2, "division by zero"),
        ];
        for &(source, column, message) in cases {
            match eval(source) {
                Err(err) => {
                    assert_eq!(err.column, column, "{source}: {}", err.message);
                    assert!(err.message.contains(message), "{source}: {}", err.message);
                }
                Ok(v) => panic!("{source} evaluated to {v}"),
            }
        }
    }

    #[test]
    fn rejects_syntax_errors_before_arithmetic_errors() {
        let err = eval("1/0 + )").unwrap_err();
        assert!(err.message.contains("unexpected `)`"), "{}", err.message);
    }

    #[test]
    fn rejects_nesting_past_the_cap_without_overflowing_the_stack() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(eval(&deep).is_err_and(|err| err.message.contains("nests too deeply")));
        let signs = format!("{}1", "-".repeat(100_000));
        assert!(eval(&signs).is_err_and(|err| err.message.contains("nests too deeply")));
        let powers = vec!["1"; 100_000].join("^");
        assert!(eval(&powers).is_err_and(|err| err.message.contains("nests too deeply")));
        let calls = format!("{}1{}", "abs(".repeat(100_000), ")".repeat(100_000));
        assert!(eval(&calls).is_err_and(|err| err.message.contains("nests too deeply")));
        let within = format!("{}1{}", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
        assert_eq!(eval(&within), Ok(1.0));
    }

    #[test]
    fn accepts_long_flat_chains() {
        let sum = vec!["1"; 100_000].join("+");
        assert_eq!(eval(&sum), Ok(100_000.0));
    }

    #[test]
    fn rejects_bad_variable_names() {
        assert!(check_variable_name("x_1").is_ok());
        assert!(check_variable_name("_tmp").is_ok());
        for bad in ["", "1x", "a b", "x-y", "é"] {
            assert!(check_variable_name(bad).is_err(), "{bad:?}");
        }
    }
}
