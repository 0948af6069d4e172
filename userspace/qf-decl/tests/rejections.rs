//! Every rule of the declaration language rejects its violation before anything is generated,
//! with a message naming the task, type or field and the rule.

use qf_decl::{load_str, DeclErrors, Rule};

/// A valid base that each case breaks in one place.
fn declarations(types: &str, tasks: &str) -> String {
    format!("protocol_version = 1\n{types}\n{tasks}")
}

const PING_TYPES: &str = r#"
[types.Ping]
kind = "struct"
fields = [{ name = "value", type = "u32" }]
"#;

fn ping_task(id: u32, effect: &str) -> String {
    format!(
        "[[tasks]]\nname = \"ping\"\ntask_id = {id}\neffect = \"{effect}\"\nrequest = \"Ping\"\nresponse = \"Ping\"\n"
    )
}

fn rejected(text: &str) -> DeclErrors {
    match load_str(text, "test.toml", false) {
        Ok(schema) => panic!("accepted: {schema:?}"),
        Err(errors) => errors,
    }
}

/// Asserts one error broke `rule` and its message names each of `names`.
fn assert_rejected(text: &str, rule: Rule, names: &[&str]) {
    let errors = rejected(text);
    let error = errors
        .0
        .iter()
        .find(|error| error.rule == rule)
        .unwrap_or_else(|| panic!("no {rule} error in:\n{errors}"));
    let message = error.to_string();
    assert!(message.contains(&format!("[{}]", rule.name())), "{message}");
    assert!(message.starts_with("test.toml"), "{message}");
    for name in names {
        assert!(message.contains(name), "`{name}` not named in: {message}");
    }
}

fn struct_with_field(ty: &str) -> String {
    format!("[types.Ping]\nkind = \"struct\"\nfields = [{{ name = \"value\", type = \"{ty}\" }}]\n")
}

#[test]
fn a_valid_file_is_accepted_with_the_builtins() {
    let schema = load_str(
        &declarations(PING_TYPES, &ping_task(10, "idempotent")),
        "test.toml",
        false,
    )
    .expect("valid");
    let names: Vec<&str> = schema.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "abi_probe", "ping"]);
}

#[test]
fn a_task_without_effect_is_stateful() {
    let text = declarations(
        PING_TYPES,
        "[[tasks]]\nname = \"ping\"\ntask_id = 10\nrequest = \"Ping\"\nresponse = \"Ping\"\n",
    );
    let schema = load_str(&text, "test.toml", false).expect("valid");
    assert_eq!(
        schema.task_by_name("ping").unwrap().effect,
        qf_abi::EffectClass::Stateful
    );
}

#[test]
fn pointers_are_rejected() {
    for ty in ["*const u8", "&u32", "ptr<u8>", "Box<u32>"] {
        assert_rejected(
            &declarations(&struct_with_field(ty), &ping_task(10, "pure")),
            Rule::NoPointers,
            &["Ping", "value"],
        );
    }
    let text = declarations("[types.Ping]\nkind = \"pointer\"\n", &ping_task(10, "pure"));
    assert_rejected(&text, Rule::NoPointers, &["Ping"]);
}

#[test]
fn dynamic_arrays_are_rejected() {
    for ty in ["[u8]", "Vec<u8>", "[u8; ]", "bytes"] {
        assert_rejected(
            &declarations(&struct_with_field(ty), &ping_task(10, "pure")),
            Rule::NoDynamicArrays,
            &["Ping", "value"],
        );
    }
    let text = declarations(
        &format!("{PING_TYPES}\n[types.Samples]\nkind = \"array\"\nelement = \"i16\"\n"),
        &ping_task(10, "pure"),
    );
    assert_rejected(&text, Rule::NoDynamicArrays, &["Samples"]);
}

#[test]
fn strings_are_rejected() {
    for ty in ["string", "String", "str", "char"] {
        assert_rejected(
            &declarations(&struct_with_field(ty), &ping_task(10, "pure")),
            Rule::NoStrings,
            &["Ping", "value"],
        );
    }
}

#[test]
fn direct_and_indirect_recursion_is_rejected() {
    let direct =
        "[types.Node]\nkind = \"struct\"\nfields = [{ name = \"next\", type = \"Node\" }]\n";
    assert_rejected(
        &declarations(direct, ""),
        Rule::NoRecursion,
        &["Node -> Node"],
    );
    let indirect = "[types.A]\nkind = \"struct\"\nfields = [{ name = \"b\", type = \"[B; 2]\" }]\n\
                    [types.B]\nkind = \"struct\"\nfields = [{ name = \"a\", type = \"A\" }]\n";
    assert_rejected(
        &declarations(indirect, ""),
        Rule::NoRecursion,
        &["A -> B -> A"],
    );
}

#[test]
fn unknown_effects_are_rejected() {
    assert_rejected(
        &declarations(PING_TYPES, &ping_task(10, "volatile")),
        Rule::KnownEffect,
        &["ping", "volatile"],
    );
}

#[test]
fn a_request_over_988_bytes_is_rejected() {
    let types =
        "[types.Big]\nkind = \"struct\"\nfields = [{ name = \"data\", type = \"[u8; 989]\" }]\n";
    let task = "[[tasks]]\nname = \"big\"\ntask_id = 10\neffect = \"pure\"\nrequest = \"Big\"\nresponse = \"Big\"\n";
    assert_rejected(
        &declarations(types, task),
        Rule::PayloadBudget,
        &["big", "Big", "989", "988"],
    );
    // Exactly 988 is fine.
    let types = types.replace("989", "988");
    assert!(load_str(&declarations(&types, task), "test.toml", false).is_ok());
}

#[test]
fn a_response_over_budget_through_nesting_is_rejected() {
    let types = "[types.Row]\nkind = \"array\"\nelement = \"f64\"\nlength = 16\n\
                 [types.Matrix]\nkind = \"struct\"\nfields = [{ name = \"rows\", type = \"[Row; 8]\" }]\n";
    let task = format!(
        "{}\n[[tasks]]\nname = \"solve\"\ntask_id = 10\nrequest = \"Ping\"\nresponse = \"Matrix\"\n",
        PING_TYPES
    );
    assert_rejected(
        &declarations(types, &task),
        Rule::PayloadBudget,
        &["solve", "Matrix", "1024"],
    );
}

#[test]
fn duplicate_task_ids_are_rejected_including_against_builtins() {
    let task2 = ping_task(10, "pure").replace("ping", "pong");
    assert_rejected(
        &declarations(PING_TYPES, &(ping_task(10, "pure") + &task2)),
        Rule::UniqueTaskId,
        &["pong", "10", "ping"],
    );
    assert_rejected(
        &declarations(PING_TYPES, &ping_task(1, "pure")),
        Rule::UniqueTaskId,
        &["ping", "add"],
    );
}

#[test]
fn duplicate_task_names_and_fields_are_rejected() {
    let twice = ping_task(10, "pure") + &ping_task(11, "pure");
    assert_rejected(
        &declarations(PING_TYPES, &twice),
        Rule::UniqueTaskName,
        &["ping"],
    );
    let fields = "[types.Ping]\nkind = \"struct\"\nfields = [{ name = \"x\", type = \"u8\" }, { name = \"x\", type = \"u8\" }]\n";
    assert_rejected(
        &declarations(fields, &ping_task(10, "pure")),
        Rule::UniqueFieldName,
        &["Ping", "x"],
    );
}

#[test]
fn unknown_types_are_rejected() {
    assert_rejected(
        &declarations(&struct_with_field("Missing"), &ping_task(10, "pure")),
        Rule::UnknownType,
        &["Ping", "value", "Missing"],
    );
    let task =
        "[[tasks]]\nname = \"ping\"\ntask_id = 10\nrequest = \"Nowhere\"\nresponse = \"Ping\"\n";
    assert_rejected(
        &declarations(PING_TYPES, task),
        Rule::UnknownType,
        &["ping", "Nowhere"],
    );
}

#[test]
fn messages_must_be_structs() {
    let types =
        format!("{PING_TYPES}\n[types.Raw]\nkind = \"array\"\nelement = \"u8\"\nlength = 4\n");
    let task = "[[tasks]]\nname = \"ping\"\ntask_id = 10\nrequest = \"Raw\"\nresponse = \"Ping\"\n";
    assert_rejected(
        &declarations(&types, task),
        Rule::MessageIsStruct,
        &["ping", "Raw"],
    );
    let task = "[[tasks]]\nname = \"ping\"\ntask_id = 10\nrequest = \"u32\"\nresponse = \"Ping\"\n";
    assert_rejected(
        &declarations(PING_TYPES, task),
        Rule::MessageIsStruct,
        &["ping", "u32"],
    );
}

#[test]
fn zero_length_and_oversized_inner_arrays_are_rejected() {
    assert_rejected(
        &declarations(&struct_with_field("[u8; 0]"), &ping_task(10, "pure")),
        Rule::NonEmptyArray,
        &["Ping", "value"],
    );
    assert_rejected(
        &declarations(&struct_with_field("[[u8; 33]; 2]"), &ping_task(10, "pure")),
        Rule::NestedArrayLength,
        &["Ping", "value", "33"],
    );
}

#[test]
fn names_must_be_identifiers_and_not_keywords() {
    let keyword =
        "[types.Ping]\nkind = \"struct\"\nfields = [{ name = \"type\", type = \"u8\" }]\n";
    assert_rejected(
        &declarations(keyword, &ping_task(10, "pure")),
        Rule::Identifier,
        &["Ping", "type"],
    );
    let task = ping_task(10, "pure").replace("\"ping\"", "\"Ping-Pong\"");
    assert_rejected(
        &declarations(PING_TYPES, &task),
        Rule::Identifier,
        &["Ping-Pong"],
    );
}

#[test]
fn unknown_kinds_and_versions_are_rejected() {
    let union = "[types.Ping]\nkind = \"union\"\n";
    assert_rejected(&declarations(union, ""), Rule::TypeKind, &["Ping", "union"]);
    let text = "protocol_version = 2\n";
    assert_rejected(text, Rule::ProtocolVersion, &["2"]);
}

#[test]
fn builtins_can_be_restated_only_identically() {
    let conflicting =
        "[types.AddRequest]\nkind = \"struct\"\nfields = [{ name = \"a\", type = \"i64\" }]\n";
    assert_rejected(
        &declarations(conflicting, ""),
        Rule::BuiltinConflict,
        &["AddRequest"],
    );
    let reference = include_str!("../../../crates/qf-abi/tests/data/declarations.json");
    let schema = load_str(reference, "declarations.json", true)
        .expect("the reference restates the built-ins exactly");
    assert_eq!(schema, qf_decl::builtin_schema());
}

#[test]
fn syntax_errors_name_the_file_and_location() {
    let errors = rejected("[[tasks]]\nname = \"x\"\ntask_id = -1\n");
    let message = errors.to_string();
    assert!(
        message.contains("test.toml") && message.contains("[syntax]"),
        "{message}"
    );
    let errors = rejected("[types.Ping]\nkind = \"struct\"\nfields = []\n");
    assert!(errors.breaks(Rule::Syntax));
}

#[test]
fn all_broken_rules_are_reported_at_once() {
    let text = declarations(&struct_with_field("string"), &ping_task(1, "chaotic"));
    let errors = rejected(&text);
    assert!(
        errors.breaks(Rule::NoStrings)
            && errors.breaks(Rule::UniqueTaskId)
            && errors.breaks(Rule::KnownEffect),
        "{errors}"
    );
}
