//! decode(encode(x)) == x for every type of the qf-tasks declarations and of a nested test
//! declaration, through the run-time (schema-driven) path the CLI uses; and every encoding has
//! exactly the size the schema computes.

use proptest::prelude::*;
use qf_decl::dynamic::{DynSeed, DynValue};
use qf_decl::{Scalar, Schema, TypeBody, TypeExpr};

fn finite_f32() -> impl Strategy<Value = f32> {
    any::<f32>().prop_filter("finite", |v| v.is_finite())
}

fn finite_f64() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |v| v.is_finite())
}

/// Arbitrary values of `ty`.
fn values(schema: &Schema, ty: &TypeExpr) -> BoxedStrategy<DynValue> {
    match ty {
        TypeExpr::Scalar(scalar) => match scalar {
            Scalar::I8 => any::<i8>().prop_map(DynValue::I8).boxed(),
            Scalar::I16 => any::<i16>().prop_map(DynValue::I16).boxed(),
            Scalar::I32 => any::<i32>().prop_map(DynValue::I32).boxed(),
            Scalar::I64 => any::<i64>().prop_map(DynValue::I64).boxed(),
            Scalar::U8 => any::<u8>().prop_map(DynValue::U8).boxed(),
            Scalar::U16 => any::<u16>().prop_map(DynValue::U16).boxed(),
            Scalar::U32 => any::<u32>().prop_map(DynValue::U32).boxed(),
            Scalar::U64 => any::<u64>().prop_map(DynValue::U64).boxed(),
            Scalar::F32 => finite_f32().prop_map(DynValue::F32).boxed(),
            Scalar::F64 => finite_f64().prop_map(DynValue::F64).boxed(),
            Scalar::Bool => any::<bool>().prop_map(DynValue::Bool).boxed(),
        },
        TypeExpr::Array(element, length) => {
            proptest::collection::vec(values(schema, element), *length)
                .prop_map(DynValue::Array)
                .boxed()
        }
        TypeExpr::Named(name) => match &schema.type_def(name).expect("declared").body {
            TypeBody::Array { element, length } => {
                proptest::collection::vec(values(schema, element), *length)
                    .prop_map(DynValue::Array)
                    .boxed()
            }
            TypeBody::Struct(fields) => {
                let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
                let strategies: Vec<BoxedStrategy<DynValue>> =
                    fields.iter().map(|f| values(schema, &f.ty)).collect();
                strategies
                    .prop_map(move |vals| {
                        DynValue::Struct(names.iter().cloned().zip(vals).collect())
                    })
                    .boxed()
            }
        },
    }
}

fn check_round_trips(schema: &Schema) {
    let cases = std::cell::Cell::new(0usize);
    for def in &schema.types {
        // A fresh runner per type: a runner's case budget is shared by all its runs.
        let mut runner = proptest::test_runner::TestRunner::default();
        let ty = TypeExpr::Named(def.name.clone());
        runner
            .run(&values(schema, &ty), |value| {
                let mut buffer = vec![0u8; def.size];
                let len = qf_abi::encode_payload(&value, &mut buffer).expect("encodes");
                prop_assert_eq!(len, def.size);
                let back = qf_abi::decode_payload_seed(DynSeed { schema, ty: &ty }, &buffer)
                    .expect("decodes");
                prop_assert_eq!(&back, &value);
                // And through JSON, as the CLI does.
                let from_json = DynValue::from_json(schema, &ty, &value.to_json(), &def.name)
                    .expect("valid JSON");
                prop_assert_eq!(from_json, value);
                cases.set(cases.get() + 1);
                Ok(())
            })
            .unwrap_or_else(|failure| panic!("{}: {failure}", def.name));
    }
    assert_eq!(
        cases.get(),
        256 * schema.types.len(),
        "every type got its cases"
    );
}

#[test]
fn every_qf_tasks_type_round_trips() {
    check_round_trips(&qf_decl::cli::default_schema().expect("valid"));
}

#[test]
fn nested_arrays_and_structs_round_trip() {
    let text = r#"
[types.Row]
kind = "array"
element = "u8"
length = 4
[types.Cell]
kind = "struct"
fields = [{ name = "on", type = "bool" }, { name = "grid", type = "[Row; 2]" }, { name = "pos", type = "[[f32; 2]; 3]" }]
[types.Board]
kind = "struct"
fields = [{ name = "cells", type = "[Cell; 20]" }, { name = "id", type = "i64" }]
[[tasks]]
name = "board"
task_id = 9
request = "Board"
response = "Cell"
"#;
    let schema = qf_decl::load_str(text, "nested.toml", false).expect("valid");
    assert_eq!(schema.type_def("Board").unwrap().size, 20 * 33 + 8);
    check_round_trips(&schema);
    let board = TypeExpr::Named("Board".into());
    assert_eq!(schema.path_at(&board, 33 + 1 + 5), "cells[1].grid[1][1]");
    assert_eq!(schema.path_at(&board, 20 * 33 + 3), "id");
}
