//! The validated declarations: every type resolved, sized and ordered so that each type comes
//! after the types it uses; every task with its effect and message sizes. Only `validate` builds
//! one, so holding a `Schema` means all rules hold.

use qf_abi::EffectClass;

use crate::types::TypeExpr;

/// A checked declaration set (built-ins included).
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Named types, dependencies first (then by name).
    pub types: Vec<TypeDef>,
    /// Tasks, built-ins first, then in file order.
    pub tasks: Vec<TaskDef>,
}

/// A named type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDef {
    pub name: String,
    pub body: TypeBody,
    /// Encoded size in bytes.
    pub size: usize,
}

/// What a named type is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeBody {
    Struct(Vec<FieldDef>),
    Array { element: TypeExpr, length: usize },
}

/// A struct field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDef {
    pub name: String,
    pub ty: TypeExpr,
}

/// A task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDef {
    pub name: String,
    pub id: u32,
    pub effect: EffectClass,
    /// Name of the request struct.
    pub request: String,
    /// Name of the response struct.
    pub response: String,
    pub request_size: usize,
    pub response_size: usize,
}

impl Schema {
    /// The named type `name`.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|def| def.name == name)
    }

    /// The task called `name`.
    pub fn task_by_name(&self, name: &str) -> Option<&TaskDef> {
        self.tasks.iter().find(|task| task.name == name)
    }

    /// The task with wire id `id`.
    pub fn task_by_id(&self, id: u32) -> Option<&TaskDef> {
        self.tasks.iter().find(|task| task.id == id)
    }

    /// Encoded size of a type expression (0 for an undeclared name, which a `Schema` never holds).
    pub fn size_of(&self, ty: &TypeExpr) -> usize {
        match ty {
            TypeExpr::Scalar(scalar) => scalar.size(),
            TypeExpr::Named(name) => self.type_def(name).map_or(0, |def| def.size),
            TypeExpr::Array(element, length) => self.size_of(element) * length,
        }
    }

    /// Whether `ty` is an array, inline or through a named array type.
    pub fn is_array(&self, ty: &TypeExpr) -> bool {
        match ty {
            TypeExpr::Array(..) => true,
            TypeExpr::Named(name) => {
                matches!(
                    self.type_def(name),
                    Some(TypeDef {
                        body: TypeBody::Array { .. },
                        ..
                    })
                )
            }
            TypeExpr::Scalar(_) => false,
        }
    }

    /// The field path at byte `offset` of a value of type `ty`, e.g. `offsets[2]`, for error
    /// messages about a payload (`""` for a scalar at the top).
    pub fn path_at(&self, ty: &TypeExpr, offset: usize) -> String {
        let mut path = String::new();
        self.extend_path(ty, offset, &mut path);
        path
    }

    fn extend_path(&self, ty: &TypeExpr, offset: usize, path: &mut String) {
        match ty {
            TypeExpr::Scalar(_) => {}
            TypeExpr::Array(element, length) => {
                self.extend_array_path(element, *length, offset, path)
            }
            TypeExpr::Named(name) => match self.type_def(name).map(|def| &def.body) {
                Some(TypeBody::Array { element, length }) => {
                    self.extend_array_path(element, *length, offset, path)
                }
                Some(TypeBody::Struct(fields)) => {
                    let mut start = 0;
                    for field in fields {
                        let size = self.size_of(&field.ty);
                        if offset < start + size
                            || std::ptr::eq(field, fields.last().unwrap_or(field))
                        {
                            if !path.is_empty() {
                                path.push('.');
                            }
                            path.push_str(&field.name);
                            self.extend_path(&field.ty, offset.saturating_sub(start), path);
                            return;
                        }
                        start += size;
                    }
                }
                None => {}
            },
        }
    }

    fn extend_array_path(
        &self,
        element: &TypeExpr,
        length: usize,
        offset: usize,
        path: &mut String,
    ) {
        let size = self.size_of(element).max(1);
        let index = (offset / size).min(length.saturating_sub(1));
        path.push_str(&format!("[{index}]"));
        self.extend_path(element, offset - index * size, path);
    }
}
