//! Components that export plain typed functions instead of toolhost's
//! contract: each exported function (at world level, or inside an exported
//! interface) is a tool, its parameters an object of JSON values and its
//! result a JSON value.
//!
//! How WIT types travel in JSON (the schemas say the same):
//! - `bool`, `string` as themselves; `char` as a one-character string;
//!   `f32`/`f64` as numbers (a result that is NaN or infinite is `null`).
//! - Integers as JSON integers within their type's range. `u64`/`s64` are
//!   also accepted as decimal strings, and a result beyond ±(2^53 − 1)
//!   (what a JSON number keeps exactly everywhere) is a decimal string.
//! - `list<T>` as an array (so `list<u8>` is an array of numbers 0–255);
//!   `tuple<…>` as an array of its items.
//! - `option<T>` as the value or `null`; a parameter of option type may be
//!   left out.
//! - `record` as an object with its fields' kebab-case names, all required
//!   but `option` ones; `flags` as an array of the names that are set;
//!   `enum` as the case's name; `variant` as the case's name when it has no
//!   payload, else `{"case": payload}`; `result<T, E>` as `{"ok": T}` or
//!   `{"err": E}` (a parameter), while a function's `result` return is its
//!   `ok` value as the output and its `err` value as a tool error.
//! - Resources, futures, streams, error contexts and maps cannot travel in
//!   JSON: a function using one is left out, with the reason.

use crate::docs::{Docs, TypeDocs, short_name};
use serde_json::{Map, Number, Value, json};
use wasmtime::Engine;
use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, ComponentExportIndex, Type, Val};

/// How deep types may nest before a function is refused.
pub const MAX_DEPTH: usize = 32;

/// One exported function that can be a tool.
#[derive(Clone)]
pub struct TypedFunc {
    /// The tool's name.
    pub name: String,
    /// The exported interface it is in (`acme:shop/inventory@1.0.0`), or
    /// none for a function exported by the world itself.
    pub interface: Option<String>,
    /// The function's own name (`get-item`).
    pub func: String,
    /// `get-item: func(sku: string) -> result<item, lookup-error>`, or with
    /// the interface: `acme:shop/inventory.get-item: func(…)`.
    pub signature: String,
    /// Where it is exported.
    pub index: ComponentExportIndex,
    /// Its parameters.
    pub params: Vec<(String, Type)>,
    /// Its result, if any.
    pub result: Option<Type>,
    /// The JSON Schema of its arguments (an object).
    pub input_schema: Value,
    /// The JSON Schema of its output (the value, or the `ok` of a `result`).
    pub output_schema: Option<Value>,
}

/// The exported functions of `component` that can be tools, in export
/// order, and one sentence naming those that cannot, and why (none when
/// every function can).
pub fn functions(engine: &Engine, component: &Component) -> (Vec<TypedFunc>, Vec<String>) {
    let ty = component.component_type();
    let mut found: Vec<(Option<String>, String, ComponentExportIndex, ComponentFunc)> = Vec::new();
    for (name, item) in ty.exports(engine) {
        // WASI's own exports (`wasi:cli/run`, `wasi:http/incoming-handler`)
        // are entry points for other hosts, not tools.
        if name.starts_with("wasi:") {
            continue;
        }
        match item.ty {
            ComponentItem::ComponentFunc(func) => {
                if let Some(index) = component.get_export_index(None, name) {
                    found.push((None, name.to_owned(), index, func));
                }
            }
            ComponentItem::ComponentInstance(instance) => {
                let Some(instance_index) = component.get_export_index(None, name) else { continue };
                for (func_name, item) in instance.exports(engine) {
                    if toolchain_internal(name, func_name) {
                        continue;
                    }
                    if let ComponentItem::ComponentFunc(func) = item.ty
                        && let Some(index) = component.get_export_index(Some(&instance_index), func_name)
                    {
                        found.push((Some(name.to_owned()), func_name.to_owned(), index, func));
                    }
                }
            }
            _ => {}
        }
    }
    // A function name exported by two interfaces is prefixed with its
    // interface's short name (`inventory` of `acme:shop/inventory@1.0`).
    let clashes = |func: &str| found.iter().filter(|(_, name, _, _)| name == func).count() > 1;
    let mut funcs = Vec::new();
    let mut left_out = Vec::new();
    for (interface, func_name, index, func) in &found {
        let tool = match interface {
            Some(interface) if clashes(func_name) => format!("{}-{func_name}", short_name(interface)),
            _ => func_name.clone(),
        };
        let tool = tool_name(&tool);
        let shown = match interface {
            Some(interface) => format!("{interface}.{func_name}"),
            None => func_name.clone(),
        };
        let params: Vec<(String, Type)> = func.params().map(|(name, ty)| (name.to_owned(), ty)).collect();
        let result = func.results().next();
        let signature = format!("{shown}: {}", render_func(&params, result.as_ref()));
        match schemas(&params, result.as_ref()) {
            Ok((input_schema, output_schema)) => funcs.push(TypedFunc {
                name: tool,
                interface: interface.clone(),
                func: func_name.clone(),
                signature,
                index: *index,
                params,
                result,
                input_schema,
                output_schema,
            }),
            // A resource's constructor and methods are said once, as the resource.
            Err(_) if let Some(resource) = resource_of(func_name) => {
                let whole = match interface {
                    Some(interface) => format!("the resource `{resource}` of `{interface}`"),
                    None => format!("the resource `{resource}`"),
                };
                let said = format!("{whole} (its constructor and methods: a handle, which JSON cannot carry)");
                if !left_out.contains(&said) {
                    left_out.push(said);
                }
            }
            Err(why) => left_out.push(format!("`{shown}` ({why})")),
        }
    }
    let note = match left_out.len() {
        0 => Vec::new(),
        _ => vec![format!("not offered as tools: {}", left_out.join("; "))],
    };
    (funcs, note)
}

/// Whether `interface.func` is a toolchain's own entry point rather than the
/// author's: componentize-py leaves `exports.init` (the step that
/// pre-initializes the interpreter at build time) in every component.
fn toolchain_internal(interface: &str, func: &str) -> bool {
    interface == "exports" && func == "init"
}

/// `counter` for `[constructor]counter`, `[method]counter.bump` and
/// `[static]counter.make`: the resource a function belongs to.
fn resource_of(func: &str) -> Option<&str> {
    let rest = func.strip_prefix('[')?.split_once(']')?.1;
    Some(rest.split('.').next().unwrap_or(rest))
}

/// A tool name from a function name: kebab-case is kept, anything a model
/// API would refuse becomes `_`, and it is cut to 64 characters.
fn tool_name(name: &str) -> String {
    let cleaned: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    cleaned.chars().take(64).collect()
}

fn schemas(params: &[(String, Type)], result: Option<&Type>) -> Result<(Value, Option<Value>), String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        properties.insert(name.clone(), schema(ty, 0)?);
        if !matches!(ty, Type::Option(_)) {
            required.push(json!(name));
        }
    }
    let input = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let output = match result {
        None => None,
        Some(Type::Result(result)) => Some(match result.ok() {
            Some(ok) => schema(&ok, 0)?,
            None => json!({"type": "null"}),
        }),
        Some(ty) => Some(schema(ty, 0)?),
    };
    // The error of a `result` return must be renderable too.
    if let Some(Type::Result(result)) = result
        && let Some(err) = result.err()
    {
        schema(&err, 0)?;
    }
    Ok((input, output))
}

/// The JSON Schema of a WIT type, or why it cannot travel in JSON.
pub fn schema(ty: &Type, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("its types nest more than {MAX_DEPTH} levels deep"));
    }
    let deeper = |ty: &Type| schema(ty, depth + 1);
    let integer = |min: i128, max: i128| json!({"type": "integer", "minimum": min, "maximum": max});
    Ok(match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::U8 => integer(0, u8::MAX.into()),
        Type::U16 => integer(0, u16::MAX.into()),
        Type::U32 => integer(0, u32::MAX.into()),
        Type::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Type::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Type::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Type::U64 => json!({"anyOf": [integer(0, u64::MAX.into()), {"type": "string", "pattern": "^[0-9]{1,20}$"}]}),
        Type::S64 => json!({"anyOf": [
            integer(i64::MIN.into(), i64::MAX.into()),
            {"type": "string", "pattern": "^-?[0-9]{1,19}$"}
        ]}),
        Type::Float32 | Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(list) => json!({"type": "array", "items": deeper(&list.ty())?}),
        Type::FixedLengthList(list) => json!({"type": "array", "items": deeper(&list.ty())?}),
        Type::Tuple(tuple) => {
            let items: Vec<Value> = tuple.types().map(|ty| deeper(&ty)).collect::<Result<_, _>>()?;
            let n = items.len();
            json!({"type": "array", "prefixItems": items, "minItems": n, "maxItems": n})
        }
        Type::Option(option) => json!({"anyOf": [deeper(&option.ty())?, {"type": "null"}]}),
        Type::Record(record) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in record.fields() {
                properties.insert(field.name.to_owned(), deeper(&field.ty)?);
                if !matches!(field.ty, Type::Option(_)) {
                    required.push(json!(field.name));
                }
            }
            json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
        }
        Type::Enum(cases) => json!({"type": "string", "enum": cases.names().collect::<Vec<_>>()}),
        Type::Flags(flags) => {
            json!({"type": "array", "items": {"enum": flags.names().collect::<Vec<_>>()}, "uniqueItems": true})
        }
        Type::Variant(variant) => {
            let mut cases = Vec::new();
            for case in variant.cases() {
                cases.push(match &case.ty {
                    None => json!({"const": case.name}),
                    Some(ty) => json!({
                        "type": "object",
                        "properties": {case.name: deeper(ty)?},
                        "required": [case.name],
                        "additionalProperties": false,
                    }),
                });
            }
            json!({"oneOf": cases})
        }
        Type::Result(result) => {
            let side = |name: &str, ty: Option<Type>| -> Result<Value, String> {
                let value = match ty {
                    Some(ty) => deeper(&ty)?,
                    None => json!({"type": "null"}),
                };
                Ok(
                    json!({"type": "object", "properties": {name: value}, "required": [name], "additionalProperties": false}),
                )
            };
            json!({"oneOf": [side("ok", result.ok())?, side("err", result.err())?]})
        }
        Type::Own(_) | Type::Borrow(_) => {
            return Err("it takes or returns a resource (a handle), which JSON cannot carry".to_owned());
        }
        Type::Future(_) | Type::Stream(_) => {
            return Err("it uses a future or a stream, which JSON cannot carry".to_owned());
        }
        Type::ErrorContext => return Err("it uses an error-context, which JSON cannot carry".to_owned()),
        Type::Map(_) => return Err("it uses a map, which toolhost does not carry in JSON yet".to_owned()),
    })
}

/// The named types of a component, to find a type's doc comments: wasmtime's
/// types carry no names, so the type a function uses is matched with the
/// named type it is equal to.
pub struct NamedTypes {
    /// The types of exported interfaces (`record item` of
    /// `acme:shop/inventory@1.0.0`) and of the component's own exports.
    exported: Vec<(Option<String>, String, Type)>,
    /// The world's own types, which a component imports by name and
    /// wasmtime's types do not show: each with its shape.
    world: Vec<(String, Shape)>,
}

/// A type as far as names go: its kind and its fields' or cases' names.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Record(Vec<String>),
    Variant(Vec<String>),
    Enum(Vec<String>),
    Flags(Vec<String>),
}

impl Shape {
    fn of(ty: &Type) -> Option<Shape> {
        Some(match ty {
            Type::Record(record) => Shape::Record(record.fields().map(|field| field.name.to_owned()).collect()),
            Type::Variant(variant) => Shape::Variant(variant.cases().map(|case| case.name.to_owned()).collect()),
            Type::Enum(names) => Shape::Enum(names.names().map(str::to_owned).collect()),
            Type::Flags(names) => Shape::Flags(names.names().map(str::to_owned).collect()),
            _ => return None,
        })
    }
}

impl NamedTypes {
    /// The named types of `component`, compiled from `wasm`.
    pub fn of(engine: &Engine, component: &Component, wasm: &[u8]) -> NamedTypes {
        let mut exported = Vec::new();
        for (name, item) in component.component_type().exports(engine) {
            match item.ty {
                ComponentItem::Type(ty) => exported.push((None, name.to_owned(), ty)),
                ComponentItem::ComponentInstance(instance) => {
                    for (type_name, item) in instance.exports(engine) {
                        if let ComponentItem::Type(ty) = item.ty {
                            exported.push((Some(name.to_owned()), type_name.to_owned(), ty));
                        }
                    }
                }
                _ => {}
            }
        }
        NamedTypes { exported, world: world_types(wasm) }
    }
}

/// The types `wasm` names at its top level (imported, as a world's own
/// types are, or exported), with their shapes. The binary's type index space
/// is followed as far as it needs to be: defined types, and the new indices
/// that imports, exports and aliases of types add.
fn world_types(wasm: &[u8]) -> Vec<(String, Shape)> {
    use wasmparser::{ComponentAlias, ComponentDefinedType, ComponentExternalKind, ComponentOuterAliasKind};
    use wasmparser::{ComponentType, ComponentTypeRef, Payload, TypeBounds};
    enum Slot {
        Shape(Shape),
        Same(u32),
        Other,
    }
    let names = |items: &[&str]| items.iter().map(|name| (*name).to_owned()).collect();
    let mut space: Vec<Slot> = Vec::new();
    let mut named: Vec<(String, u32)> = Vec::new();
    let mut parser = wasmparser::Parser::new(0);
    let mut at = 0;
    'sections: loop {
        let rest = wasm.get(at..).unwrap_or_default();
        let Ok(wasmparser::Chunk::Parsed { consumed, payload }) = parser.parse(rest, true) else { break };
        at += consumed;
        match payload {
            Payload::ComponentTypeSection(types) => {
                for ty in types {
                    let Ok(ty) = ty else { break 'sections };
                    space.push(match ty {
                        ComponentType::Defined(ComponentDefinedType::Record(fields)) => {
                            Slot::Shape(Shape::Record(fields.iter().map(|(name, _)| (*name).to_owned()).collect()))
                        }
                        ComponentType::Defined(ComponentDefinedType::Variant(cases)) => {
                            Slot::Shape(Shape::Variant(cases.iter().map(|case| case.name.to_owned()).collect()))
                        }
                        ComponentType::Defined(ComponentDefinedType::Enum(cases)) => {
                            Slot::Shape(Shape::Enum(names(&cases)))
                        }
                        ComponentType::Defined(ComponentDefinedType::Flags(flags)) => {
                            Slot::Shape(Shape::Flags(names(&flags)))
                        }
                        _ => Slot::Other,
                    });
                }
            }
            Payload::ComponentImportSection(imports) => {
                for import in imports {
                    let Ok(import) = import else { break 'sections };
                    if let ComponentTypeRef::Type(bounds) = import.ty {
                        if let TypeBounds::Eq(index) = bounds {
                            named.push((import.name.name.to_owned(), space.len() as u32));
                            space.push(Slot::Same(index));
                        } else {
                            space.push(Slot::Other);
                        }
                    }
                }
            }
            Payload::ComponentExportSection(exports) => {
                for export in exports {
                    let Ok(export) = export else { break 'sections };
                    if export.kind == ComponentExternalKind::Type {
                        named.push((export.name.name.to_owned(), space.len() as u32));
                        space.push(Slot::Same(export.index));
                    }
                }
            }
            Payload::ComponentAliasSection(aliases) => {
                for alias in aliases {
                    let Ok(alias) = alias else { break 'sections };
                    if matches!(
                        alias,
                        ComponentAlias::InstanceExport { kind: ComponentExternalKind::Type, .. }
                            | ComponentAlias::Outer { kind: ComponentOuterAliasKind::Type, .. }
                    ) {
                        space.push(Slot::Other);
                    }
                }
            }
            Payload::ModuleSection { unchecked_range, .. } | Payload::ComponentSection { unchecked_range, .. } => {
                at = unchecked_range.end;
            }
            Payload::End(_) => break,
            _ => {}
        }
    }
    let shape = |mut index: u32| {
        for _ in 0..MAX_DEPTH {
            match space.get(index as usize)? {
                Slot::Shape(shape) => return Some(shape.clone()),
                Slot::Same(other) => index = *other,
                Slot::Other => return None,
            }
        }
        None
    };
    named.into_iter().filter_map(|(name, index)| Some((name, shape(index)?))).collect()
}

/// Where a function's types find their doc comments.
struct Lookup<'a> {
    docs: &'a Docs,
    named: &'a NamedTypes,
    /// The function's interface, whose types are preferred.
    interface: Option<&'a str>,
}

impl Lookup<'_> {
    /// The doc comments of the named type `ty` is.
    fn find(&self, ty: &Type) -> Option<&TypeDocs> {
        if !matches!(ty, Type::Record(_) | Type::Variant(_) | Type::Enum(_) | Type::Flags(_)) {
            return None;
        }
        let mut equal: Vec<&(Option<String>, String, Type)> =
            self.named.exported.iter().filter(|(_, _, named)| named == ty).collect();
        // The function's own interface first: two interfaces may define equal types.
        equal.sort_by_key(|(interface, _, _)| interface.as_deref() != self.interface);
        if let Some(found) =
            equal.into_iter().find_map(|(interface, name, _)| self.docs.type_docs(interface.as_deref(), name))
        {
            return Some(found);
        }
        let shape = Shape::of(ty)?;
        self.named
            .world
            .iter()
            .filter(|(_, named)| *named == shape)
            .find_map(|(name, _)| self.docs.type_docs(None, name))
    }
}

/// Adds the WIT doc comments in `docs` to `func`'s schemas: a named type's
/// comment (a `record`'s, say) describes where the type is used, its fields'
/// comments describe its properties, and its cases' (a `variant`'s, an
/// `enum`'s, `flags`') describe each case. Nothing changes what the schemas
/// accept.
pub fn describe(func: &mut TypedFunc, docs: &Docs, named: &NamedTypes) {
    if docs.is_empty() {
        return;
    }
    let at = Lookup { docs, named, interface: func.interface.as_deref() };
    for (name, ty) in &func.params {
        if let Some(schema) = func.input_schema.get_mut("properties").and_then(|properties| properties.get_mut(name)) {
            annotate(schema, ty, &at, None, 0);
        }
    }
    if let (Some(schema), Some(result)) = (func.output_schema.as_mut(), func.result.as_ref()) {
        match result {
            Type::Result(result) => {
                if let Some(ok) = result.ok() {
                    annotate(schema, &ok, &at, None, 0);
                }
            }
            ty => annotate(schema, ty, &at, None, 0),
        }
    }
}

/// Describes `schema` (of `ty`, as [`schema`] wrote it) and what it holds:
/// with `head` (a field's comment) where given, else the type's own comment.
fn annotate(schema: &mut Value, ty: &Type, at: &Lookup<'_>, head: Option<&str>, depth: usize) {
    if depth > MAX_DEPTH || !schema.is_object() {
        return;
    }
    let deeper = |schema: &mut Value, ty: &Type, head: Option<&str>| annotate(schema, ty, at, head, depth + 1);
    let docs = at.find(ty);
    let own = head.or_else(|| docs.and_then(|docs| docs.docs.as_deref()));
    let mut cases = Vec::new();
    match ty {
        Type::List(list) => {
            if let Some(items) = schema.get_mut("items") {
                deeper(items, &list.ty(), None);
            }
        }
        Type::FixedLengthList(list) => {
            if let Some(items) = schema.get_mut("items") {
                deeper(items, &list.ty(), None);
            }
        }
        Type::Tuple(tuple) => {
            if let Some(Value::Array(items)) = schema.get_mut("prefixItems") {
                for (item, ty) in items.iter_mut().zip(tuple.types()) {
                    deeper(item, &ty, None);
                }
            }
        }
        Type::Option(option) => {
            if let Some(inner) = schema.get_mut("anyOf").and_then(|branches| branches.get_mut(0)) {
                deeper(inner, &option.ty(), None);
            }
        }
        Type::Record(record) => {
            for field in record.fields() {
                let field_docs = docs.and_then(|docs| docs.items.get(field.name)).map(String::as_str);
                if let Some(property) =
                    schema.get_mut("properties").and_then(|properties| properties.get_mut(field.name))
                {
                    deeper(property, &field.ty, field_docs);
                }
            }
        }
        Type::Variant(variant) => {
            if let Some(Value::Array(branches)) = schema.get_mut("oneOf") {
                for (branch, case) in branches.iter_mut().zip(variant.cases()) {
                    if let Some(payload) = &case.ty
                        && let Some(inner) =
                            branch.get_mut("properties").and_then(|properties| properties.get_mut(case.name))
                    {
                        deeper(inner, payload, None);
                    }
                    let case_docs = docs.and_then(|docs| docs.items.get(case.name));
                    if let (Some(text), Some(branch)) = (case_docs, branch.as_object_mut()) {
                        branch.insert("description".to_owned(), json!(text));
                    }
                }
            }
        }
        // JSON Schema has no place for one `enum` value's description: the
        // cases' comments are listed in the description.
        Type::Enum(names) => cases = names.names().map(str::to_owned).collect(),
        Type::Flags(names) => cases = names.names().map(str::to_owned).collect(),
        Type::Result(result) => {
            if let Some(Value::Array(sides)) = schema.get_mut("oneOf") {
                for (side, (key, ty)) in sides.iter_mut().zip([("ok", result.ok()), ("err", result.err())]) {
                    if let (Some(ty), Some(inner)) =
                        (ty, side.get_mut("properties").and_then(|properties| properties.get_mut(key)))
                    {
                        deeper(inner, &ty, None);
                    }
                }
            }
        }
        _ => {}
    }
    let listed: Vec<String> =
        cases.iter().filter_map(|case| Some(format!("`{case}`: {}", docs?.items.get(case)?))).collect();
    let text = match (own, listed.is_empty()) {
        (None, true) => return,
        (Some(own), true) => own.to_owned(),
        (None, false) => listed.join("\n"),
        (Some(own), false) => format!("{own}\n{}", listed.join("\n")),
    };
    if let Some(object) = schema.as_object_mut() {
        object.insert("description".to_owned(), json!(text));
    }
}

/// `func(sku: string) -> result<item, lookup-error>` (named types by their shape).
fn render_func(params: &[(String, Type)], result: Option<&Type>) -> String {
    let params: Vec<String> = params.iter().map(|(name, ty)| format!("{name}: {}", render(ty, 0))).collect();
    match result {
        Some(ty) => format!("func({}) -> {}", params.join(", "), render(ty, 0)),
        None => format!("func({})", params.join(", ")),
    }
}

fn render(ty: &Type, depth: usize) -> String {
    if depth > 4 {
        return "…".to_owned();
    }
    let inner = |ty: &Type| render(ty, depth + 1);
    match ty {
        Type::Bool => "bool".into(),
        Type::U8 => "u8".into(),
        Type::U16 => "u16".into(),
        Type::U32 => "u32".into(),
        Type::U64 => "u64".into(),
        Type::S8 => "s8".into(),
        Type::S16 => "s16".into(),
        Type::S32 => "s32".into(),
        Type::S64 => "s64".into(),
        Type::Float32 => "f32".into(),
        Type::Float64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::List(list) => format!("list<{}>", inner(&list.ty())),
        Type::FixedLengthList(list) => format!("list<{}, …>", inner(&list.ty())),
        Type::Tuple(tuple) => format!("tuple<{}>", tuple.types().map(|ty| inner(&ty)).collect::<Vec<_>>().join(", ")),
        Type::Option(option) => format!("option<{}>", inner(&option.ty())),
        Type::Result(result) => match (result.ok(), result.err()) {
            (Some(ok), Some(err)) => format!("result<{}, {}>", inner(&ok), inner(&err)),
            (Some(ok), None) => format!("result<{}>", inner(&ok)),
            (None, Some(err)) => format!("result<_, {}>", inner(&err)),
            (None, None) => "result".into(),
        },
        Type::Record(record) => {
            format!(
                "record {{ {} }}",
                record.fields().map(|f| format!("{}: {}", f.name, inner(&f.ty))).collect::<Vec<_>>().join(", ")
            )
        }
        Type::Variant(variant) => format!(
            "variant {{ {} }}",
            variant
                .cases()
                .map(|case| match &case.ty {
                    Some(ty) => format!("{}({})", case.name, inner(ty)),
                    None => case.name.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Type::Enum(cases) => format!("enum {{ {} }}", cases.names().collect::<Vec<_>>().join(", ")),
        Type::Flags(flags) => format!("flags {{ {} }}", flags.names().collect::<Vec<_>>().join(", ")),
        Type::Own(_) => "own<resource>".into(),
        Type::Borrow(_) => "borrow<resource>".into(),
        Type::Future(_) => "future".into(),
        Type::Stream(_) => "stream".into(),
        Type::ErrorContext => "error-context".into(),
        Type::Map(_) => "map".into(),
    }
}

/// The arguments object as the function's parameters. The host validated it
/// against the input schema already; what the schema cannot say (a string
/// `u64` out of range) is refused here, naming the parameter.
pub fn to_params(func: &TypedFunc, arguments: &Value) -> Result<Vec<Val>, String> {
    let object = arguments.as_object().ok_or("the arguments must be a JSON object")?;
    func.params
        .iter()
        .map(|(name, ty)| match object.get(name) {
            Some(value) => to_val(ty, value).map_err(|why| format!("`{name}`: {why}")),
            None if matches!(ty, Type::Option(_)) => Ok(Val::Option(None)),
            None => Err(format!("`{name}` is required")),
        })
        .collect()
}

fn to_val(ty: &Type, value: &Value) -> Result<Val, String> {
    let wrong = |what: &str| format!("expected {what}, got {}", kind(value));
    let int = |min: i128, max: i128| -> Result<i128, String> {
        let n = match value {
            Value::Number(n) => n.as_i128().or_else(|| n.as_u128().map(|n| n as i128)),
            Value::String(text) if matches!(ty, Type::U64 | Type::S64) => text.parse::<i128>().ok(),
            _ => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!("expected an integer from {min} to {max}, got {value}")),
        }
    };
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(|| wrong("true or false"))?),
        Type::U8 => Val::U8(int(0, u8::MAX.into())? as u8),
        Type::U16 => Val::U16(int(0, u16::MAX.into())? as u16),
        Type::U32 => Val::U32(int(0, u32::MAX.into())? as u32),
        Type::U64 => Val::U64(int(0, u64::MAX.into())? as u64),
        Type::S8 => Val::S8(int(i8::MIN.into(), i8::MAX.into())? as i8),
        Type::S16 => Val::S16(int(i16::MIN.into(), i16::MAX.into())? as i16),
        Type::S32 => Val::S32(int(i32::MIN.into(), i32::MAX.into())? as i32),
        Type::S64 => Val::S64(int(i64::MIN.into(), i64::MAX.into())? as i64),
        Type::Float32 => Val::Float32(value.as_f64().ok_or_else(|| wrong("a number"))? as f32),
        Type::Float64 => Val::Float64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Type::Char => {
            let text = value.as_str().ok_or_else(|| wrong("a one-character string"))?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(format!("expected one character, got {value}")),
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(|| wrong("a string"))?.to_owned()),
        Type::List(list) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            let item = list.ty();
            Val::List(items.iter().map(|value| to_val(&item, value)).collect::<Result<_, _>>()?)
        }
        Type::FixedLengthList(list) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            let item = list.ty();
            Val::FixedLengthList(items.iter().map(|value| to_val(&item, value)).collect::<Result<_, _>>()?)
        }
        Type::Tuple(tuple) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            let types: Vec<Type> = tuple.types().collect();
            if items.len() != types.len() {
                return Err(format!("expected an array of {} items, got {}", types.len(), items.len()));
            }
            Val::Tuple(types.iter().zip(items).map(|(ty, value)| to_val(ty, value)).collect::<Result<_, _>>()?)
        }
        Type::Option(option) => match value {
            Value::Null => Val::Option(None),
            value => Val::Option(Some(Box::new(to_val(&option.ty(), value)?))),
        },
        Type::Record(record) => {
            let object = value.as_object().ok_or_else(|| wrong("an object"))?;
            let mut fields = Vec::new();
            for field in record.fields() {
                let val = match object.get(field.name) {
                    Some(value) => to_val(&field.ty, value).map_err(|why| format!("{}: {why}", field.name))?,
                    None if matches!(field.ty, Type::Option(_)) => Val::Option(None),
                    None => return Err(format!("the field `{}` is missing", field.name)),
                };
                fields.push((field.name.to_owned(), val));
            }
            Val::Record(fields)
        }
        Type::Enum(cases) => {
            let name = value.as_str().ok_or_else(|| wrong("a string"))?;
            match cases.names().find(|case| *case == name) {
                Some(case) => Val::Enum(case.to_owned()),
                None => return Err(format!("`{name}` is not one of {}", cases.names().collect::<Vec<_>>().join(", "))),
            }
        }
        Type::Flags(flags) => {
            let names = value.as_array().ok_or_else(|| wrong("an array of flag names"))?;
            let mut set = Vec::new();
            for name in names {
                let name = name.as_str().ok_or("a flag name must be a string")?;
                if !flags.names().any(|flag| flag == name) {
                    return Err(format!("`{name}` is not one of {}", flags.names().collect::<Vec<_>>().join(", ")));
                }
                set.push(name.to_owned());
            }
            Val::Flags(set)
        }
        Type::Variant(variant) => {
            let (name, payload) = match value {
                Value::String(name) => (name.as_str(), None),
                Value::Object(object) if object.len() == 1 => {
                    let (name, payload) = object.iter().next().expect("one entry");
                    (name.as_str(), Some(payload))
                }
                _ => return Err(wrong("a case name or an object with one case")),
            };
            let case =
                variant.cases().find(|case| case.name == name).ok_or_else(|| format!("`{name}` is not a case"))?;
            match (&case.ty, payload) {
                (None, None | Some(Value::Null)) => Val::Variant(name.to_owned(), None),
                (Some(ty), Some(payload)) => Val::Variant(name.to_owned(), Some(Box::new(to_val(ty, payload)?))),
                (Some(_), None) => return Err(format!("the case `{name}` needs a value: {{\"{name}\": …}}")),
                (None, Some(_)) => return Err(format!("the case `{name}` takes no value")),
            }
        }
        Type::Result(result) => {
            let object = value
                .as_object()
                .filter(|object| object.len() == 1)
                .ok_or_else(|| wrong("{\"ok\": …} or {\"err\": …}"))?;
            let (side, payload) = object.iter().next().expect("one entry");
            let inner = |ty: Option<Type>| -> Result<Option<Box<Val>>, String> {
                match ty {
                    Some(ty) => Ok(Some(Box::new(to_val(&ty, payload)?))),
                    None => Ok(None),
                }
            };
            match side.as_str() {
                "ok" => Val::Result(Ok(inner(result.ok())?)),
                "err" => Val::Result(Err(inner(result.err())?)),
                other => return Err(format!("expected `ok` or `err`, got `{other}`")),
            }
        }
        other => return Err(format!("{} cannot be passed as JSON", render(other, 0))),
    })
}

/// "a string", "an array", …: what a JSON value is, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value as JSON, as described in the module's documentation.
pub fn to_json(val: &Val) -> Value {
    const EXACT: i128 = (1 << 53) - 1;
    let big = |n: i128| if (-EXACT..=EXACT).contains(&n) { json!(n as i64) } else { json!(n.to_string()) };
    match val {
        Val::Bool(b) => json!(b),
        Val::U8(n) => json!(n),
        Val::U16(n) => json!(n),
        Val::U32(n) => json!(n),
        Val::U64(n) => big(i128::from(*n)),
        Val::S8(n) => json!(n),
        Val::S16(n) => json!(n),
        Val::S32(n) => json!(n),
        Val::S64(n) => big(i128::from(*n)),
        Val::Float32(x) => Number::from_f64(f64::from(*x)).map_or(Value::Null, Value::Number),
        Val::Float64(x) => Number::from_f64(*x).map_or(Value::Null, Value::Number),
        Val::Char(c) => json!(c.to_string()),
        Val::String(text) => json!(text),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Record(fields) => Value::Object(fields.iter().map(|(name, val)| (name.clone(), to_json(val))).collect()),
        Val::Variant(name, None) | Val::Enum(name) => json!(name),
        Val::Variant(name, Some(payload)) => json!({ name: to_json(payload) }),
        Val::Option(None) => Value::Null,
        Val::Option(Some(val)) => to_json(val),
        Val::Result(Ok(val)) => json!({"ok": val.as_deref().map_or(Value::Null, to_json)}),
        Val::Result(Err(val)) => json!({"err": val.as_deref().map_or(Value::Null, to_json)}),
        Val::Flags(names) => json!(names),
        Val::Map(pairs) => {
            Value::Array(pairs.iter().map(|(key, value)| json!([to_json(key), to_json(value)])).collect())
        }
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => Value::Null,
    }
}

/// The output of a call that returned `result`: `Ok` with the JSON of the
/// value (a `result`'s `ok`), or `Err` with the text of its `err`.
pub fn output(func: &TypedFunc, result: Option<Val>) -> Result<String, String> {
    match (&func.result, result) {
        (_, None) => Ok("null".to_owned()),
        (Some(Type::Result(_)), Some(Val::Result(Ok(ok)))) => {
            Ok(ok.as_deref().map_or(Value::Null, to_json).to_string())
        }
        (Some(Type::Result(_)), Some(Val::Result(Err(err)))) => Err(match err.as_deref().map(to_json) {
            Some(Value::String(text)) => text,
            Some(Value::Null) | None => "the function returned an error".to_owned(),
            Some(other) => other.to_string(),
        }),
        (_, Some(val)) => Ok(to_json(&val).to_string()),
    }
}
