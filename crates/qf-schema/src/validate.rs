//! The declaration rules: turns parsed files (built-ins first) into a [`Schema`] or the full list
//! of broken rules. Runs before any code is generated, so nothing is compiled from a bad file.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use qf_abi::{EffectClass, MAX_PAYLOAD_LEN};

use crate::error::{DeclError, DeclErrors, Rule};
use crate::schema::{FieldDef, Schema, TaskDef, TypeBody, TypeDef};
use crate::source::{SourceFile, SourceTask, SourceType};
use crate::types::{is_identifier, parse_type, Scalar, TypeExpr, RESERVED_WORDS};

/// serde implements arrays of at most this many elements; see [`Rule::NestedArrayLength`].
const SERDE_ARRAY_LIMIT: usize = 32;

/// A type or task together with the file it came from, for messages.
struct Located<T> {
    origin: String,
    item: T,
}

/// Validates the built-ins plus `file`.
pub fn validate(
    builtin: &SourceFile,
    file: &SourceFile,
    origin: &str,
) -> Result<Schema, DeclErrors> {
    let mut errors = Vec::new();
    for (source, source_origin) in [(builtin, crate::BUILTIN_ORIGIN), (file, origin)] {
        if let Some(version) = source.protocol_version {
            if version != i64::from(qf_abi::PROTOCOL_VERSION) {
                errors.push(DeclError::new(
                    source_origin,
                    Rule::ProtocolVersion,
                    format!("protocol_version is {version}, this generator targets ABI v1"),
                ));
            }
        }
    }
    let (types, tasks) = merge(builtin, file, origin, &mut errors);

    let mut resolved: BTreeMap<String, (String, TypeBody)> = BTreeMap::new();
    for (name, located) in &types {
        if let Some(body) = resolve_type(name, &located.item, &located.origin, &mut errors) {
            resolved.insert(name.clone(), (located.origin.clone(), body));
        }
    }
    check_references(&resolved, &types, &mut errors);
    check_recursion(&resolved, &mut errors);
    check_nested_arrays(&resolved, &mut errors);
    if !errors.is_empty() {
        // Sizes and order are meaningless over unknown or recursive types.
        let task_errors = check_tasks_without_types(&tasks);
        errors.extend(task_errors);
        return Err(DeclErrors(errors));
    }

    let order = topological_order(&resolved);
    let mut schema = Schema {
        types: Vec::new(),
        tasks: Vec::new(),
    };
    for name in order {
        let (_, body) = &resolved[&name];
        let size = match body {
            TypeBody::Struct(fields) => fields
                .iter()
                .map(|f| size_of(&schema, &f.ty))
                .fold(0, usize::saturating_add),
            TypeBody::Array { element, length } => {
                size_of(&schema, element).saturating_mul(*length)
            }
        };
        schema.types.push(TypeDef {
            name,
            body: body.clone(),
            size,
        });
    }
    schema.tasks = check_tasks(&schema, &tasks, &mut errors);
    if errors.is_empty() {
        Ok(schema)
    } else {
        Err(DeclErrors(errors))
    }
}

/// Built-ins first; a file may restate a built-in only identically.
fn merge(
    builtin: &SourceFile,
    file: &SourceFile,
    origin: &str,
    errors: &mut Vec<DeclError>,
) -> (
    BTreeMap<String, Located<SourceType>>,
    Vec<Located<SourceTask>>,
) {
    let mut types: BTreeMap<String, Located<SourceType>> = builtin
        .types
        .iter()
        .map(|(name, ty)| {
            (
                name.clone(),
                Located {
                    origin: crate::BUILTIN_ORIGIN.into(),
                    item: ty.clone(),
                },
            )
        })
        .collect();
    for (name, ty) in &file.types {
        match types.get(name) {
            Some(existing) if existing.item == *ty => {}
            Some(_) => errors.push(
                DeclError::new(
                    origin,
                    Rule::BuiltinConflict,
                    "differs from the built-in type of this name",
                )
                .in_type(name),
            ),
            None => {
                types.insert(
                    name.clone(),
                    Located {
                        origin: origin.into(),
                        item: ty.clone(),
                    },
                );
            }
        }
    }
    let mut tasks: Vec<Located<SourceTask>> = builtin
        .tasks
        .iter()
        .map(|task| Located {
            origin: crate::BUILTIN_ORIGIN.into(),
            item: task.clone(),
        })
        .collect();
    for task in &file.tasks {
        match builtin.tasks.iter().find(|b| b.name == task.name) {
            Some(existing) if existing == task => {}
            Some(_) => errors.push(
                DeclError::new(
                    origin,
                    Rule::BuiltinConflict,
                    "differs from the built-in task of this name",
                )
                .in_task(&task.name),
            ),
            None => tasks.push(Located {
                origin: origin.into(),
                item: task.clone(),
            }),
        }
    }
    (types, tasks)
}

fn check_type_name(name: &str, origin: &str, errors: &mut Vec<DeclError>) {
    let starts_upper = name.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    if !is_identifier(name) || !starts_upper || RESERVED_WORDS.contains(&name) {
        errors.push(
            DeclError::new(
                origin,
                Rule::Identifier,
                "type names are identifiers starting with an upper-case letter",
            )
            .in_type(name),
        );
    }
}

fn check_field_name(type_name: &str, field: &str, origin: &str, errors: &mut Vec<DeclError>) {
    let starts_lower = field
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    if !is_identifier(field) || !starts_lower || RESERVED_WORDS.contains(&field) {
        errors.push(
            DeclError::new(
                origin,
                Rule::Identifier,
                "field names are lower-case identifiers and not Rust or C keywords",
            )
            .in_type(type_name)
            .in_field(field),
        );
    }
}

/// One named type's body, or `None` after recording why it has none.
fn resolve_type(
    name: &str,
    ty: &SourceType,
    origin: &str,
    errors: &mut Vec<DeclError>,
) -> Option<TypeBody> {
    check_type_name(name, origin, errors);
    let error = |rule: Rule, message: String| DeclError::new(origin, rule, message).in_type(name);
    match ty.kind.as_str() {
        "struct" => {
            if ty.element.is_some() || ty.length.is_some() {
                errors.push(error(
                    Rule::Syntax,
                    "a struct has `fields`, not `element`/`length`".into(),
                ));
            }
            let Some(fields) = &ty.fields else {
                errors.push(error(Rule::Syntax, "a struct needs `fields`".into()));
                return None;
            };
            if fields.is_empty() {
                errors.push(error(
                    Rule::Syntax,
                    "a struct needs at least one field".into(),
                ));
                return None;
            }
            let mut seen = BTreeSet::new();
            let mut resolved = Vec::new();
            for field in fields {
                check_field_name(name, &field.name, origin, errors);
                if !seen.insert(field.name.as_str()) {
                    errors.push(
                        error(
                            Rule::UniqueFieldName,
                            "declared twice in this struct".into(),
                        )
                        .in_field(&field.name),
                    );
                }
                match parse_type(&field.ty) {
                    Ok(expr) => resolved.push(FieldDef {
                        name: field.name.clone(),
                        ty: expr,
                    }),
                    Err((rule, message)) => errors.push(error(rule, message).in_field(&field.name)),
                }
            }
            (resolved.len() == fields.len()).then_some(TypeBody::Struct(resolved))
        }
        "array" => {
            if ty.fields.is_some() {
                errors.push(error(
                    Rule::Syntax,
                    "an array has `element` and `length`, not `fields`".into(),
                ));
            }
            let Some(element) = &ty.element else {
                errors.push(error(Rule::Syntax, "an array needs `element`".into()));
                return None;
            };
            let element = match parse_type(element) {
                Ok(element) => element,
                Err((rule, message)) => {
                    errors.push(error(rule, message));
                    return None;
                }
            };
            match ty.length {
                None => {
                    errors.push(error(
                        Rule::NoDynamicArrays,
                        "an array needs a fixed `length`".into(),
                    ));
                    None
                }
                Some(0) => {
                    errors.push(error(
                        Rule::NonEmptyArray,
                        "an array needs at least one element".into(),
                    ));
                    None
                }
                Some(length) => match usize::try_from(length) {
                    Ok(length) => Some(TypeBody::Array { element, length }),
                    Err(_) => {
                        errors.push(error(
                            Rule::PayloadBudget,
                            format!("length {length} cannot fit any payload"),
                        ));
                        None
                    }
                },
            }
        }
        "string" | "str" | "text" => {
            errors.push(error(
                Rule::NoStrings,
                "strings have no fixed size; use a fixed array of u8".into(),
            ));
            None
        }
        "pointer" | "ptr" | "reference" => {
            errors.push(error(
                Rule::NoPointers,
                "payloads carry values, not pointers".into(),
            ));
            None
        }
        "vec" | "list" | "sequence" | "slice" | "dynamic_array" | "bytes" => {
            errors.push(error(
                Rule::NoDynamicArrays,
                format!("`{}` has no fixed length", ty.kind),
            ));
            None
        }
        other => {
            errors.push(error(
                Rule::TypeKind,
                format!("kind `{other}` is not `struct` or `array`"),
            ));
            None
        }
    }
}

/// Every `Named` reference inside `expr`.
fn named_in(expr: &TypeExpr, out: &mut Vec<String>) {
    match expr {
        TypeExpr::Scalar(_) => {}
        TypeExpr::Named(name) => out.push(name.clone()),
        TypeExpr::Array(element, _) => named_in(element, out),
    }
}

/// The named types `body` refers to, with the field each reference is in.
fn references(body: &TypeBody) -> Vec<(Option<&str>, String)> {
    let mut out = Vec::new();
    match body {
        TypeBody::Struct(fields) => {
            for field in fields {
                let mut names = Vec::new();
                named_in(&field.ty, &mut names);
                out.extend(
                    names
                        .into_iter()
                        .map(|name| (Some(field.name.as_str()), name)),
                );
            }
        }
        TypeBody::Array { element, .. } => {
            let mut names = Vec::new();
            named_in(element, &mut names);
            out.extend(names.into_iter().map(|name| (None, name)));
        }
    }
    out
}

fn check_references(
    resolved: &BTreeMap<String, (String, TypeBody)>,
    declared: &BTreeMap<String, Located<SourceType>>,
    errors: &mut Vec<DeclError>,
) {
    for (name, (origin, body)) in resolved {
        for (field, target) in references(body) {
            if !declared.contains_key(&target) {
                let mut error = DeclError::new(
                    origin,
                    Rule::UnknownType,
                    format!("type `{target}` is not declared"),
                )
                .in_type(name);
                if let Some(field) = field {
                    error = error.in_field(field);
                }
                errors.push(error);
            }
        }
    }
}

fn check_recursion(resolved: &BTreeMap<String, (String, TypeBody)>, errors: &mut Vec<DeclError>) {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        name: &str,
        resolved: &BTreeMap<String, (String, TypeBody)>,
        marks: &mut HashMap<String, Mark>,
        stack: &mut Vec<String>,
        errors: &mut Vec<DeclError>,
    ) {
        match marks.get(name) {
            Some(Mark::Done) => return,
            Some(Mark::Open) => {
                let start = stack.iter().position(|n| n == name).unwrap_or(0);
                let cycle: Vec<&str> = stack[start..]
                    .iter()
                    .map(String::as_str)
                    .chain([name])
                    .collect();
                if let Some((origin, _)) = resolved.get(name) {
                    errors.push(
                        DeclError::new(
                            origin,
                            Rule::NoRecursion,
                            format!("contains itself: {}", cycle.join(" -> ")),
                        )
                        .in_type(name),
                    );
                }
                return;
            }
            None => {}
        }
        let Some((_, body)) = resolved.get(name) else {
            return;
        };
        marks.insert(name.to_string(), Mark::Open);
        stack.push(name.to_string());
        for (_, target) in references(body) {
            visit(&target, resolved, marks, stack, errors);
        }
        stack.pop();
        marks.insert(name.to_string(), Mark::Done);
    }
    let mut marks = HashMap::new();
    for name in resolved.keys() {
        visit(name, resolved, &mut marks, &mut Vec::new(), errors);
    }
}

fn check_nested_arrays(
    resolved: &BTreeMap<String, (String, TypeBody)>,
    errors: &mut Vec<DeclError>,
) {
    // The length of `expr` if it is an array (inline or a named array type).
    let array_length = |expr: &TypeExpr| match expr {
        TypeExpr::Array(_, length) => Some(*length),
        TypeExpr::Named(name) => match resolved.get(name) {
            Some((_, TypeBody::Array { length, .. })) => Some(*length),
            _ => None,
        },
        TypeExpr::Scalar(_) => None,
    };
    fn arrays_in<'a>(expr: &'a TypeExpr, out: &mut Vec<&'a TypeExpr>) {
        if let TypeExpr::Array(element, _) = expr {
            out.push(element);
            arrays_in(element, out);
        }
    }
    for (name, (origin, body)) in resolved {
        let mut checks: Vec<(Option<&str>, &TypeExpr)> = Vec::new();
        match body {
            TypeBody::Struct(fields) => {
                for field in fields {
                    let mut elements = Vec::new();
                    arrays_in(&field.ty, &mut elements);
                    checks.extend(elements.into_iter().map(|e| (Some(field.name.as_str()), e)));
                }
            }
            TypeBody::Array { element, .. } => {
                checks.push((None, element));
                let mut elements = Vec::new();
                arrays_in(element, &mut elements);
                checks.extend(elements.into_iter().map(|e| (None, e)));
            }
        }
        for (field, element) in checks {
            if let Some(length) = array_length(element).filter(|&l| l > SERDE_ARRAY_LIMIT) {
                let mut error = DeclError::new(
                    origin,
                    Rule::NestedArrayLength,
                    format!(
                        "inner array `{element}` has {length} elements, at most {SERDE_ARRAY_LIMIT} \
                         inside another array; wrap it in a struct"
                    ),
                )
                .in_type(name);
                if let Some(field) = field {
                    error = error.in_field(field);
                }
                errors.push(error);
            }
        }
    }
}

/// Types in dependency order (each after the types it uses), ties by name.
fn topological_order(resolved: &BTreeMap<String, (String, TypeBody)>) -> Vec<String> {
    fn visit(
        name: &str,
        resolved: &BTreeMap<String, (String, TypeBody)>,
        done: &mut BTreeSet<String>,
        out: &mut Vec<String>,
    ) {
        if done.contains(name) {
            return;
        }
        done.insert(name.to_string());
        if let Some((_, body)) = resolved.get(name) {
            for (_, target) in references(body) {
                visit(&target, resolved, done, out);
            }
            out.push(name.to_string());
        }
    }
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for name in resolved.keys() {
        visit(name, resolved, &mut done, &mut out);
    }
    out
}

fn size_of(schema: &Schema, expr: &TypeExpr) -> usize {
    match expr {
        TypeExpr::Scalar(scalar) => scalar.size(),
        TypeExpr::Named(name) => schema.type_def(name).map_or(0, |def| def.size),
        TypeExpr::Array(element, length) => size_of(schema, element).saturating_mul(*length),
    }
}

/// Rust enum variant for a task name: `fir_x64` -> `FirX64`.
pub fn variant_name(task: &str) -> String {
    task.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
                .collect::<String>()
        })
        .collect()
}

/// Task rules that do not need the types: names, ids, effects.
fn check_tasks_without_types(tasks: &[Located<SourceTask>]) -> Vec<DeclError> {
    let mut errors = Vec::new();
    let mut names = HashMap::new();
    let mut variants = HashMap::new();
    let mut ids = HashMap::new();
    for Located { origin, item: task } in tasks {
        let error =
            |rule: Rule, message: String| DeclError::new(origin, rule, message).in_task(&task.name);
        let valid_name = is_identifier(&task.name)
            && task
                .name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase())
            && task.name.chars().all(|c| !c.is_ascii_uppercase())
            && !RESERVED_WORDS.contains(&task.name.as_str());
        if !valid_name {
            errors.push(error(
                Rule::Identifier,
                "task names are snake_case identifiers".into(),
            ));
        }
        if let Some(previous) = names.insert(task.name.clone(), task.task_id) {
            errors.push(error(
                Rule::UniqueTaskName,
                format!("declared twice (ids {previous} and {})", task.task_id),
            ));
        } else if let Some(other) = variants.insert(variant_name(&task.name), task.name.clone()) {
            errors.push(error(
                Rule::UniqueTaskName,
                format!(
                    "maps to the same Rust variant `{}` as task `{other}`",
                    variant_name(&task.name)
                ),
            ));
        }
        if qf_abi::chain::ChainOp::is_control(task.task_id) {
            errors.push(error(
                Rule::ReservedTaskId,
                format!(
                    "task id {:#x} is in the range reserved for MCU control ({:#x}..)",
                    task.task_id,
                    qf_abi::chain::CONTROL_TASK_BASE
                ),
            ));
        }
        if let Some(other) = ids.insert(task.task_id, task.name.clone()) {
            errors.push(error(
                Rule::UniqueTaskId,
                format!("task id {} is already used by task `{other}`", task.task_id),
            ));
        }
        if let Some(effect) = &task.effect {
            if EffectClass::from_name(effect).is_none() {
                errors.push(error(
                    Rule::KnownEffect,
                    format!("effect `{effect}` is not pure, idempotent, stateful or actuating"),
                ));
            }
        }
    }
    errors
}

/// All task rules, given sized types.
fn check_tasks(
    schema: &Schema,
    tasks: &[Located<SourceTask>],
    errors: &mut Vec<DeclError>,
) -> Vec<TaskDef> {
    errors.extend(check_tasks_without_types(tasks));
    let mut out = Vec::new();
    for Located { origin, item: task } in tasks {
        let error =
            |rule: Rule, message: String| DeclError::new(origin, rule, message).in_task(&task.name);
        let mut sizes = [0usize; 2];
        for (slot, (role, type_name)) in sizes
            .iter_mut()
            .zip([("request", &task.request), ("response", &task.response)])
        {
            match schema.type_def(type_name) {
                None if Scalar::parse(type_name).is_some() || type_name.starts_with('[') => errors.push(
                    error(Rule::MessageIsStruct, format!("{role} `{type_name}` must name a declared struct")),
                ),
                None => errors.push(
                    error(Rule::UnknownType, format!("{role} type `{type_name}` is not declared")).in_type(type_name),
                ),
                Some(TypeDef { body: TypeBody::Array { .. }, .. }) => errors.push(
                    error(Rule::MessageIsStruct, format!("{role} `{type_name}` is an array, not a struct"))
                        .in_type(type_name),
                ),
                Some(def) if def.size > MAX_PAYLOAD_LEN => errors.push(
                    error(
                        Rule::PayloadBudget,
                        format!(
                            "{role} `{type_name}` encodes to {} bytes, over the {MAX_PAYLOAD_LEN}-byte payload budget",
                            def.size
                        ),
                    )
                    .in_type(type_name),
                ),
                Some(def) => *slot = def.size,
            }
        }
        let effect = task
            .effect
            .as_deref()
            .map_or(Some(EffectClass::default()), EffectClass::from_name);
        if let Some(effect) = effect {
            out.push(TaskDef {
                name: task.name.clone(),
                id: task.task_id,
                effect,
                request: task.request.clone(),
                response: task.response.clone(),
                request_size: sizes[0],
                response_size: sizes[1],
            });
        }
    }
    out
}
