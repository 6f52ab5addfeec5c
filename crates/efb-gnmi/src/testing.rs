//! What the unit tests of several files share.

#![allow(clippy::unwrap_used)]

use efb_yang::Schema;

/// The module plus an identity, a derived one and a leaf referring to them: the model
/// has no identityref yet, the encoding must already be right.
pub fn with_identities() -> Schema {
    let text = efb_yang::schema::MODULE_TEXT.trim_end();
    let body = text.strip_suffix('}').unwrap();
    let variant = format!(
        "{body}\n  identity filter-kind {{ description \"Kinds.\"; }}\n  \
     identity dpi {{ base filter-kind; description \"DPI.\"; }}\n  \
     container kinds {{ description \"Test.\";\n    \
     leaf kind {{ type identityref {{ base filter-kind; }} description \"Test.\"; }}\n  }}\n}}\n"
    );
    Schema::load_text(Box::leak(variant.into_boxed_str())).unwrap()
}
