//! The few libyang facilities the `yang2` crate does not wrap: details of leaf types (enum
//! items, ranges, union members, leafref targets), checking one value without a data tree,
//! node flags, and collecting every error libyang reports instead of only the last one.
//!
//! Every function here reads libyang's compiled schema or data structures, which live as long
//! as the context (schema) or the tree (data) they came from; callers hold those borrows.

use std::ffi::{CStr, c_char};

use yang2::context::Context;
use yang2::data::DataNodeRef;
use yang2::ffi;
use yang2::schema::SchemaNode;

use crate::Problem;

/// Base types of YANG leaves, as libyang numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaseType {
    Binary,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    String,
    Bits,
    Bool,
    Decimal64,
    Empty,
    Enumeration,
    IdentityRef,
    InstanceId,
    LeafRef,
    Union,
    Int8,
    Int16,
    Int32,
    Int64,
    Unknown,
}

impl BaseType {
    fn from_raw(raw: ffi::LY_DATA_TYPE::Type) -> BaseType {
        use ffi::LY_DATA_TYPE as T;
        match raw {
            T::LY_TYPE_BINARY => BaseType::Binary,
            T::LY_TYPE_UINT8 => BaseType::Uint8,
            T::LY_TYPE_UINT16 => BaseType::Uint16,
            T::LY_TYPE_UINT32 => BaseType::Uint32,
            T::LY_TYPE_UINT64 => BaseType::Uint64,
            T::LY_TYPE_STRING => BaseType::String,
            T::LY_TYPE_BITS => BaseType::Bits,
            T::LY_TYPE_BOOL => BaseType::Bool,
            T::LY_TYPE_DEC64 => BaseType::Decimal64,
            T::LY_TYPE_EMPTY => BaseType::Empty,
            T::LY_TYPE_ENUM => BaseType::Enumeration,
            T::LY_TYPE_IDENT => BaseType::IdentityRef,
            T::LY_TYPE_INST => BaseType::InstanceId,
            T::LY_TYPE_LEAFREF => BaseType::LeafRef,
            T::LY_TYPE_UNION => BaseType::Union,
            T::LY_TYPE_INT8 => BaseType::Int8,
            T::LY_TYPE_INT16 => BaseType::Int16,
            T::LY_TYPE_INT32 => BaseType::Int32,
            T::LY_TYPE_INT64 => BaseType::Int64,
            _ => BaseType::Unknown,
        }
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            BaseType::Int8 | BaseType::Int16 | BaseType::Int32 | BaseType::Int64
        )
    }

    pub fn is_integer(self) -> bool {
        self.is_signed()
            || matches!(
                self,
                BaseType::Uint8 | BaseType::Uint16 | BaseType::Uint32 | BaseType::Uint64
            )
    }
}

/// One `enum` of an enumeration type, with its description (the shell's help text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnumItem {
    pub name: String,
    pub description: Option<String>,
}

/// What a compiled leaf type accepts, read once from libyang when the schema is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    pub base: BaseType,
    /// Name of the typedef the leaf uses (`port-ref`, `ipv4-prefix`), when it uses one.
    pub typedef: Option<String>,
    /// Allowed ranges (numbers) or lengths (strings), as YANG writes them: `1..32 | 40`.
    pub range: Option<String>,
    pub patterns: Vec<String>,
    pub enums: Vec<EnumItem>,
    /// Member types of a union, in order.
    pub members: Vec<TypeInfo>,
    /// Target path of a leafref, as written in the module.
    pub leafref_path: Option<String>,
    /// Resolved type of a leafref's target.
    pub leafref_real: Option<Box<TypeInfo>>,
}

/// Reads the libyang compiled type behind a `yang2` leaf type.
///
/// # Safety
/// `raw` must point to a compiled type of a live context.
unsafe fn type_info(raw: *const ffi::lysc_type, typedef: Option<String>) -> TypeInfo {
    // SAFETY: the caller guarantees `raw` is a compiled type; each cast below is to the
    // structure libyang uses for that base type.
    unsafe {
        let base = BaseType::from_raw((*raw).basetype);
        let mut info = TypeInfo {
            base,
            typedef,
            range: None,
            patterns: Vec::new(),
            enums: Vec::new(),
            members: Vec::new(),
            leafref_path: None,
            leafref_real: None,
        };
        match base {
            b if b.is_integer() => {
                let num = raw as *const ffi::lysc_type_num;
                info.range = range_text((*num).range, b.is_signed());
            }
            BaseType::String => {
                let s = raw as *const ffi::lysc_type_str;
                info.range = range_text((*s).length, false);
                for pattern in sized_array((*s).patterns as *const *mut ffi::lysc_pattern) {
                    if let Some(expr) = c_str((**pattern).expr) {
                        // libyang keeps a leading 0x06 (match) or 0x15 (invert-match) byte.
                        info.patterns
                            .push(expr.trim_start_matches(['\u{6}', '\u{15}']).into());
                    }
                }
            }
            BaseType::Enumeration => {
                let e = raw as *const ffi::lysc_type_enum;
                for item in sized_array((*e).enums as *const ffi::lysc_type_bitenum_item) {
                    info.enums.push(EnumItem {
                        name: c_str(item.name).unwrap_or_default(),
                        description: c_str(item.dsc),
                    });
                }
            }
            BaseType::Union => {
                let u = raw as *const ffi::lysc_type_union;
                for member in sized_array((*u).types as *const *mut ffi::lysc_type) {
                    info.members.push(type_info(*member, None));
                }
            }
            BaseType::LeafRef => {
                let l = raw as *const ffi::lysc_type_leafref;
                info.leafref_path = c_str(ffi::lyxp_get_expr((*l).path));
                if !(*l).realtype.is_null() {
                    info.leafref_real = Some(Box::new(type_info((*l).realtype, None)));
                }
            }
            _ => {}
        }
        info
    }
}

/// Type details of a leaf or leaf-list schema node.
pub fn leaf_type_info(node: &SchemaNode<'_>) -> Option<TypeInfo> {
    let leaf_type = node.leaf_type()?;
    let raw = leaf_type.as_raw();
    // SAFETY: `raw` is the compiled type of a node of a live context.
    Some(unsafe { type_info(raw, leaf_type.typedef_name()) })
}

/// # Safety
/// `range` is null or a compiled range of a live context.
unsafe fn range_text(range: *const ffi::lysc_range, signed: bool) -> Option<String> {
    if range.is_null() {
        return None;
    }
    // SAFETY: non-null compiled range; its parts are a libyang sized array.
    let parts = unsafe { sized_array((*range).parts as *const ffi::lysc_range_lysc_range_part) };
    let text: Vec<String> = parts
        .iter()
        .map(|part| {
            // SAFETY: the union member read matches the signedness of the base type.
            let (min, max) = unsafe {
                if signed {
                    (
                        part.__bindgen_anon_1.min_64.to_string(),
                        part.__bindgen_anon_2.max_64.to_string(),
                    )
                } else {
                    (
                        part.__bindgen_anon_1.min_u64.to_string(),
                        part.__bindgen_anon_2.max_u64.to_string(),
                    )
                }
            };
            if min == max {
                min
            } else {
                format!("{min}..{max}")
            }
        })
        .collect();
    (!text.is_empty()).then(|| text.join(" | "))
}

/// A libyang sized array: the element count is stored just before the first element.
///
/// # Safety
/// `ptr` is null or the first element of a libyang sized array that outlives the slice.
unsafe fn sized_array<'a, T>(ptr: *const T) -> &'a [T] {
    if ptr.is_null() {
        return &[];
    }
    // SAFETY: LY_ARRAY_COUNT_TYPE (uint64_t) precedes the first element.
    unsafe {
        let count = *(ptr as *const u64).sub(1) as usize;
        std::slice::from_raw_parts(ptr, count)
    }
}

fn c_str(ptr: *const c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: libyang strings are NUL-terminated and live as long as their owner.
    Some(
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// A checked leaf value: its canonical text and the base type it resolved to (a union
/// member's type for unions, the target's type for leafrefs).
pub struct CheckedValue {
    pub canonical: String,
    pub base: BaseType,
}

/// libyang's refusal of a value, in its words (the caller says it in the model's).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Checks `text` against the type of the leaf or leaf-list `node` without any data tree.
/// Leafref targets are not checked here (that needs the data); everything else is.
pub fn check_value(
    ctx: &Context,
    node: &SchemaNode<'_>,
    text: &str,
) -> Result<CheckedValue, Refused> {
    let ctx_raw = context_raw(ctx);
    clear_errors(ctx_raw);
    let mut realtype: *const ffi::lysc_type = std::ptr::null();
    let mut canonical: *const c_char = std::ptr::null();
    // SAFETY: node is a leaf/leaf-list of this context; libyang copies the value.
    let rc = unsafe {
        ffi::lyd_value_validate(
            ctx_raw,
            node.as_raw(),
            text.as_ptr() as *const c_char,
            text.len(),
            std::ptr::null(),
            &mut realtype,
            &mut canonical,
        )
    };
    if rc != ffi::LY_ERR::LY_SUCCESS && rc != ffi::LY_ERR::LY_EINCOMPLETE {
        let message = take_errors(ctx_raw)
            .into_iter()
            .map(|p| p.message)
            .next()
            .unwrap_or_else(|| format!("invalid value \"{text}\""));
        return Err(Refused(message));
    }
    let text = c_str(canonical).unwrap_or_else(|| text.to_owned());
    if !canonical.is_null() {
        // SAFETY: `canonical` was inserted into this context's dictionary for us.
        unsafe { ffi::lydict_remove(ctx_raw, canonical) };
    }
    let base = if realtype.is_null() {
        BaseType::Unknown
    } else {
        // SAFETY: realtype is a compiled type of this context.
        BaseType::from_raw(unsafe { (*realtype).basetype })
    };
    Ok(CheckedValue {
        canonical: text,
        base,
    })
}

/// Whether a list has `unique` statements.
pub fn list_has_unique(node: &SchemaNode<'_>) -> bool {
    if node.kind() != yang2::schema::SchemaNodeKind::List {
        return false;
    }
    // SAFETY: list schema nodes are lysc_node_list.
    unsafe {
        let list = node.as_raw() as *const ffi::lysc_node_list;
        !sized_array((*list).uniques as *const *mut *mut ffi::lysc_node_leaf).is_empty()
    }
}

/// True when libyang created this node as an implicit default (not given in the input).
pub fn is_implicit_default(node: &DataNodeRef<'_, '_>) -> bool {
    // SAFETY: the node belongs to a live tree.
    unsafe { (*node.as_raw()).flags & ffi::LYD_DEFAULT != 0 }
}

/// A term node's canonical value, and the address libyang's dictionary keeps it at (the
/// same for every equal value, so callers can share one copy).
pub fn canonical<'n>(node: &'n DataNodeRef<'_, '_>) -> Option<(usize, &'n str)> {
    // SAFETY: leaf and leaf-list nodes are lyd_node_term; the canonical string is owned by
    // the context's dictionary and outlives the node borrow.
    unsafe {
        let term = node.as_raw() as *const ffi::lyd_node_term;
        let mut text = (*term).value._canonical;
        if text.is_null() {
            text = ffi::lyd_value_get_canonical(ffi_ctx_of(node), &(*term).value);
        }
        if text.is_null() {
            return None;
        }
        CStr::from_ptr(text)
            .to_str()
            .ok()
            .map(|s| (text as usize, s))
    }
}

/// # Safety
/// `node` belongs to a live tree.
unsafe fn ffi_ctx_of(node: &DataNodeRef<'_, '_>) -> *const ffi::ly_ctx {
    // SAFETY: every data node has a schema node whose module knows the context.
    unsafe { (*(*(*node.as_raw()).schema).module).ctx }
}

/// The base type a term node's value resolved to: a union's member type, else the leaf's.
pub fn resolved_base_type(node: &DataNodeRef<'_, '_>) -> BaseType {
    // SAFETY: callers only pass leaf and leaf-list nodes, whose layout is lyd_node_term.
    unsafe {
        let term = node.as_raw() as *const ffi::lyd_node_term;
        let value = &(*term).value;
        let mut realtype = value.realtype;
        if !realtype.is_null() && (*realtype).basetype == ffi::LY_DATA_TYPE::LY_TYPE_UNION {
            let sub = value.__bindgen_anon_1.subvalue;
            if !sub.is_null() {
                realtype = (*sub).value.realtype;
            }
        }
        if realtype.is_null() {
            BaseType::Unknown
        } else {
            BaseType::from_raw((*realtype).basetype)
        }
    }
}

/// The raw context pointer. `yang2` only gives it away by value, but every module knows its
/// context, and a context always holds libyang's internal modules.
pub(crate) fn context_raw(ctx: &Context) -> *mut ffi::ly_ctx {
    match ctx.modules(false).next() {
        // SAFETY: a module of a live context; `ctx` is its owning context.
        Some(module) => unsafe { (*module.as_raw()).ctx },
        None => std::ptr::null_mut(),
    }
}

/// Store every error and warning libyang reports (not only the last), and do not print
/// them: we return them to whoever asked.
pub(crate) fn store_all_errors() {
    // SAFETY: plain setter of libyang's global log options.
    unsafe {
        ffi::ly_log_options(ffi::LY_LOSTORE);
    }
}

pub(crate) fn clear_errors(ctx: *mut ffi::ly_ctx) {
    // SAFETY: a live context; a null item means "all".
    unsafe { ffi::ly_err_clean(ctx, std::ptr::null_mut()) };
}

/// Errors (and warnings) libyang stored since the last clear, oldest first, then cleared.
pub(crate) fn take_errors(ctx: *mut ffi::ly_ctx) -> Vec<Problem> {
    let mut problems = Vec::new();
    // SAFETY: a live context; the stored items form a list that we only read.
    unsafe {
        let mut item = ffi::ly_err_first(ctx);
        while !item.is_null() {
            if (*item).level == ffi::LY_LOG_LEVEL::LY_LLERR
                || (*item).level == ffi::LY_LOG_LEVEL::LY_LLWRN
            {
                problems.push(Problem {
                    path: c_str((*item).data_path)
                        .or_else(|| c_str((*item).schema_path))
                        .unwrap_or_default(),
                    message: c_str((*item).msg).unwrap_or_default(),
                });
            }
            item = (*item).next;
        }
    }
    clear_errors(ctx);
    problems
}
