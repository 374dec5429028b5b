//! A typed function's descriptions: the doc comments of its named types,
//! found in the component's WIT (wasmtime's types carry no names), written
//! into its schemas, and its signature rendered as WIT.

use super::{MAX_DEPTH, TypedFunc};
use crate::docs::{Docs, TypeDocs};
use serde_json::{Value, json};
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Type};

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
                at = crate::docs::offset(unchecked_range.end);
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
pub(super) fn render_func(params: &[(String, Type)], result: Option<&Type>) -> String {
    let params: Vec<String> = params.iter().map(|(name, ty)| format!("{name}: {}", render(ty, 0))).collect();
    match result {
        Some(ty) => format!("func({}) -> {}", params.join(", "), render(ty, 0)),
        None => format!("func({})", params.join(", ")),
    }
}

pub(super) fn render(ty: &Type, depth: usize) -> String {
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
